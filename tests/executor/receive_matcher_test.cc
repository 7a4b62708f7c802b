// SPDX-License-Identifier: GPL-2.0-only
// ReceiveMatcher: receives complete exactly when all their bytes came,
// whether data arrived before the post, in parts, or out of order across tags.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "dltrace/executor/receive_matcher.h"

namespace dltrace::executor {
namespace {

struct Fixture {
  std::vector<uint32_t> done;
  ReceiveMatcher m{[this](uint32_t id) { done.push_back(id); }};
  std::string error;
};

TEST(ReceiveMatcher, CompletesWhenDataArrivesAfterThePost) {
  Fixture f;
  ASSERT_TRUE(f.m.Post(1, 7, 100, 3, &f.error));
  EXPECT_TRUE(f.done.empty());
  EXPECT_EQ(f.m.waiting(), 1u);
  ASSERT_TRUE(f.m.Arrive(1, 7, 100, &f.error));
  EXPECT_EQ(f.done, std::vector<uint32_t>{3});
  EXPECT_EQ(f.m.waiting(), 0u);
}

TEST(ReceiveMatcher, EarlyArrivalCompletesOnPost) {
  Fixture f;
  ASSERT_TRUE(f.m.Arrive(2, 9, 64, &f.error));
  EXPECT_EQ(f.m.early(), 1u);
  EXPECT_TRUE(f.done.empty());
  ASSERT_TRUE(f.m.Post(2, 9, 64, 5, &f.error));
  EXPECT_EQ(f.done, std::vector<uint32_t>{5});
  EXPECT_EQ(f.m.early(), 0u);
}

TEST(ReceiveMatcher, PartialArrivalsBeforeAndAfterThePost) {
  Fixture f;
  ASSERT_TRUE(f.m.Arrive(0, 1, 30, &f.error));
  ASSERT_TRUE(f.m.Post(0, 1, 100, 8, &f.error));
  EXPECT_TRUE(f.done.empty());
  ASSERT_TRUE(f.m.Arrive(0, 1, 50, &f.error));
  EXPECT_TRUE(f.done.empty());
  ASSERT_TRUE(f.m.Arrive(0, 1, 20, &f.error));
  EXPECT_EQ(f.done, std::vector<uint32_t>{8});
}

TEST(ReceiveMatcher, OutOfOrderTagsAndPeersMatchTheirOwnReceive) {
  Fixture f;
  ASSERT_TRUE(f.m.Post(1, 10, 4, 0, &f.error));
  ASSERT_TRUE(f.m.Post(1, 11, 4, 1, &f.error));
  ASSERT_TRUE(f.m.Post(2, 10, 4, 2, &f.error));
  ASSERT_TRUE(f.m.Arrive(2, 10, 4, &f.error));
  ASSERT_TRUE(f.m.Arrive(1, 11, 4, &f.error));
  ASSERT_TRUE(f.m.Arrive(1, 10, 4, &f.error));
  EXPECT_EQ(f.done, (std::vector<uint32_t>{2, 1, 0}));
}

TEST(ReceiveMatcher, ZeroByteMessageWaitsForItsArrival) {
  Fixture f;
  ASSERT_TRUE(f.m.Post(3, 4, 0, 6, &f.error));
  EXPECT_TRUE(f.done.empty());
  ASSERT_TRUE(f.m.Arrive(3, 4, 0, &f.error));
  EXPECT_EQ(f.done, std::vector<uint32_t>{6});
}

TEST(ReceiveMatcher, TooManyBytesIsAnError) {
  Fixture f;
  ASSERT_TRUE(f.m.Post(1, 1, 10, 0, &f.error));
  EXPECT_FALSE(f.m.Arrive(1, 1, 11, &f.error));
  EXPECT_NE(f.error.find("expected 10"), std::string::npos) << f.error;
  Fixture g;
  ASSERT_TRUE(g.m.Arrive(1, 2, 20, &g.error));
  EXPECT_FALSE(g.m.Post(1, 2, 10, 0, &g.error));
}

TEST(ReceiveMatcher, PostingTheSameReceiveTwiceIsAnError) {
  Fixture f;
  ASSERT_TRUE(f.m.Post(1, 1, 10, 0, &f.error));
  EXPECT_FALSE(f.m.Post(1, 1, 10, 1, &f.error));
  EXPECT_NE(f.error.find("twice"), std::string::npos);
}

// Thousands of messages in flight at once (the table grows and entries move
// on erase): posts and arrivals in parts, interleaved in a shuffled order,
// complete each message exactly once, when its last byte came and it was
// posted, with its own id; early() and waiting() count what the test holds.
TEST(ReceiveMatcher, ThousandsOfInterleavedMessagesEachCompleteOnceWithTheirId) {
  Fixture f;
  constexpr uint32_t kMessages = 5000;
  struct Event {
    bool post;
    uint32_t message;
    uint64_t bytes;
  };
  std::vector<Event> events;
  std::mt19937_64 rng(16);
  auto peer_of = [](uint32_t m) { return int32_t(m % 7); };
  auto tag_of = [](uint32_t m) { return (uint64_t(m % 3) << 32) | (m / 7); };  // (peer, tag) unique per message
  auto size_of = [](uint32_t m) { return uint64_t(m % 5) * 10; };
  for (uint32_t m = 0; m < kMessages; ++m) {
    events.push_back({true, m, 0});
    const uint64_t bytes = size_of(m);
    if (bytes == 0) {
      events.push_back({false, m, 0});
    } else {
      events.push_back({false, m, bytes / 2});
      events.push_back({false, m, bytes - bytes / 2});
    }
  }
  std::shuffle(events.begin(), events.end(), rng);
  std::vector<int> parts(kMessages, 0);  // arrivals so far
  std::vector<bool> posted(kMessages, false);
  for (const Event& e : events) {
    const uint32_t m = e.message;
    const size_t before = f.done.size();
    if (e.post) {
      ASSERT_TRUE(f.m.Post(peer_of(m), tag_of(m), size_of(m), 1000 + m, &f.error)) << f.error;
      posted[m] = true;
    } else {
      ASSERT_TRUE(f.m.Arrive(peer_of(m), tag_of(m), e.bytes, &f.error)) << f.error;
      ++parts[m];
    }
    // Whole once posted and every part came (one for a zero-byte message, two otherwise):
    // each message has exactly one event that makes it so, and completes there.
    const bool whole = posted[m] && parts[m] == (size_of(m) ? 2 : 1);
    ASSERT_EQ(f.done.size(), before + (whole ? 1 : 0)) << "message " << m;
    if (whole) {
      EXPECT_EQ(f.done.back(), 1000 + m);
    }
  }
  std::vector<uint32_t> ids = f.done;
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(ids.size(), kMessages);
  for (uint32_t m = 0; m < kMessages; ++m) EXPECT_EQ(ids[m], 1000 + m);
  EXPECT_EQ(f.m.early(), 0u);
  EXPECT_EQ(f.m.waiting(), 0u);
}

}  // namespace
}  // namespace dltrace::executor
