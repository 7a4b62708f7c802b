// SPDX-License-Identifier: GPL-2.0-only
// ReallocVector, the container of a schedule's steps and dependencies: every
// operation lowering and the executors use gives what std::vector gives, on
// random sequences that cross the sizes where glibc maps blocks; pushing or
// inserting one of its own elements survives the growth that moves them.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dltrace/models/realloc_vector.h"
#include "dltrace/models/schedule.h"

namespace dltrace::models {
namespace {

template <typename T>
void ExpectSame(const ReallocVector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.empty(), want.empty());
  ASSERT_GE(got.capacity(), got.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "at " << i;
}

TEST(ReallocVector, RandomOperationsMatchStdVector) {
  std::mt19937_64 rng(42);
  ReallocVector<uint32_t> v;
  std::vector<uint32_t> ref;
  for (int i = 0; i < 400000; ++i) {
    const uint64_t r = rng();
    switch (r % 16) {
      case 0:
        if (!ref.empty()) {
          v.pop_back();
          ref.pop_back();
        }
        break;
      case 1: {  // append a range (as lowering appends an entry list)
        std::vector<uint32_t> more(r % 50, uint32_t(r >> 8));
        v.insert(v.end(), more.begin(), more.end());
        ref.insert(ref.end(), more.begin(), more.end());
        break;
      }
      case 2: {  // insert in the middle
        const size_t at = ref.empty() ? 0 : (r >> 20) % ref.size();
        v.insert(v.begin() + at, uint32_t(r));
        ref.insert(ref.begin() + long(at), uint32_t(r));
        break;
      }
      case 3:
        if (r % 97 == 0) {  // now and then: give the spare capacity back, or empty it
          v.shrink_to_fit();
          ref.shrink_to_fit();
          ASSERT_EQ(v.capacity(), v.size());
        }
        break;
      case 4:
        if (r % 1009 == 0) {
          const size_t n = (r >> 16) % 300000;  // up to 1.2 MB: past glibc's mmap threshold
          v.resize(n, 7);
          ref.resize(n, 7);
        }
        break;
      default:
        v.push_back(uint32_t(r));
        ref.push_back(uint32_t(r));
    }
    if (i % 4096 == 0) ExpectSame(v, ref);
  }
  ExpectSame(v, ref);
  v.clear();
  EXPECT_TRUE(v.empty());
  v.shrink_to_fit();
  EXPECT_EQ(v.capacity(), 0u);
  EXPECT_EQ(v.data(), nullptr);
}

TEST(ReallocVector, PushingItsOwnElementSurvivesGrowth) {
  ReallocVector<Step> v;
  Step s;
  s.tag = 5;
  s.bytes = 123456;
  v.push_back(s);
  for (int i = 0; i < 20; ++i) {
    while (v.size() < v.capacity()) v.push_back(v.back());
    v.push_back(v[0]);  // the growth moves v[0] while it is read
    ASSERT_EQ(v.back().tag, 5u);
    ASSERT_EQ(v.back().bytes, 123456u);
  }
  const size_t n = v.size();
  v.insert(v.begin(), v[n - 1]);
  EXPECT_EQ(v.size(), n + 1);
  EXPECT_EQ(v[0].bytes, 123456u);
}

TEST(ReallocVector, CopiesAndMovesOwnTheirElements) {
  ReallocVector<uint32_t> a = {1, 2, 3};
  ReallocVector<uint32_t> b = a;
  b.push_back(4);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_TRUE(b != a);
  ReallocVector<uint32_t> c = std::move(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c[3], 4u);
  a = c;
  EXPECT_TRUE(a == c);
  c = {9};
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.front(), 9u);
  a = std::move(c);
  EXPECT_EQ(a.size(), 1u);
  ReallocVector<uint32_t>().swap(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.capacity(), 0u);
}

TEST(ReallocVector, ResizeValueInitialisesNewSteps) {
  ReallocVector<Step> v;
  v.resize(3);
  for (const Step& s : v) {
    EXPECT_EQ(s.type, StepType::kCompute);
    EXPECT_EQ(s.peer, -1);
    EXPECT_EQ(s.bytes, 0u);
  }
}

}  // namespace
}  // namespace dltrace::models
