// ReceiveMatcher: receives complete exactly when all their bytes came,
// whether data arrived before the post, in parts, or out of order across tags.
#include <gtest/gtest.h>

#include <vector>

#include "dltrace/replay/receive_matcher.h"

namespace dltrace::replay {
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

}  // namespace
}  // namespace dltrace::replay
