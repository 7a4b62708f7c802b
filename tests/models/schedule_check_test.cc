// SPDX-License-Identifier: GPL-2.0-only
// CheckSchedule finds each kind of unsound message pairing in a schedule of
// 3 endpoints, whichever way it is checked inside (a sound schedule is
// recognised without a map of every send; a broken one is named exactly).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dltrace/models/schedule.h"

namespace dltrace::models {
namespace {

Step Transfer(StepType type, int32_t peer, uint64_t tag, uint64_t bytes) {
  Step s;
  s.type = type;
  s.peer = peer;
  s.tag = tag;
  s.bytes = bytes;
  return s;
}

// A ring of 3: endpoint e sends 100 + e bytes to e + 1 with tag 7, then receives from e - 1.
Schedule Ring3() {
  Schedule s;
  s.ops.resize(1);
  s.endpoints.resize(3);
  s.ranks.resize(3);
  for (int32_t e = 0; e < 3; ++e) {
    const int32_t prev = (e + 2) % 3;
    s.ranks[size_t(e)].steps = {Transfer(StepType::kSend, (e + 1) % 3, 7, 100 + uint64_t(e)),
                                Transfer(StepType::kRecv, prev, 7, 100 + uint64_t(prev))};
  }
  return s;
}

bool Says(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

TEST(CheckSchedule, SoundRingHasNoProblem) { EXPECT_TRUE(CheckSchedule(Ring3()).empty()); }

TEST(CheckSchedule, BytesThatDifferAreNamed) {
  Schedule s = Ring3();
  s.ranks[1].steps[1].bytes = 99;  // endpoint 0 sent 100
  EXPECT_TRUE(Says(CheckSchedule(s), "endpoint 1 step 1: recv of 99 bytes, send of 100"));
}

TEST(CheckSchedule, ReceiveWithAnotherTagHasNoSend) {
  Schedule s = Ring3();
  s.ranks[2].steps[1].tag = 8;
  const auto problems = CheckSchedule(s);
  EXPECT_TRUE(Says(problems, "endpoint 2 step 1: recv from 1 tag 8 has no send"));
  EXPECT_TRUE(Says(problems, "send 1->2 tag 7 has no recv"));
}

TEST(CheckSchedule, DuplicateSendAndReceiveAreNamed) {
  Schedule s = Ring3();
  for (auto& r : s.ranks) r.steps.push_back(r.steps[0]);  // every send twice
  EXPECT_TRUE(Says(CheckSchedule(s), "appears 2 times"));
  s = Ring3();
  s.ranks[0].steps.push_back(s.ranks[0].steps[1]);  // endpoint 0 receives 2->0 tag 7 twice
  EXPECT_TRUE(Says(CheckSchedule(s), "endpoint 0 step 2: second recv for one send"));
}

// Op 0's transfers in two runs on every endpoint, op 1's between them (the
// check's shortcut takes one run per op in tag order; this is the other case).
TEST(CheckSchedule, AnOpInTwoRunsIsSoundUnlessATagRepeats) {
  Schedule s;
  s.ops.resize(2);
  s.endpoints.resize(3);
  s.ranks.resize(3);
  for (int32_t e = 0; e < 3; ++e) {
    const int32_t next = (e + 1) % 3, prev = (e + 2) % 3;
    for (uint64_t tag : {MakeTag(0, 7), MakeTag(1, 7), MakeTag(0, 8)}) {
      s.ranks[size_t(e)].steps.push_back(Transfer(StepType::kSend, next, tag, 100));
      s.ranks[size_t(e)].steps.push_back(Transfer(StepType::kRecv, prev, tag, 100));
    }
  }
  EXPECT_TRUE(CheckSchedule(s).empty());
  for (auto& r : s.ranks)
    for (size_t i = 4; i < 6; ++i) r.steps[i].tag = MakeTag(0, 7);  // op 0's second run repeats its first
  EXPECT_TRUE(Says(CheckSchedule(s), "appears 2 times"));
}

TEST(CheckSchedule, MissingReceiveIsNamed) {
  Schedule s = Ring3();
  s.ranks[0].steps.pop_back();  // endpoint 0 no longer receives from 2
  EXPECT_TRUE(Says(CheckSchedule(s), "send 2->0 tag 7 has no recv"));
}

}  // namespace
}  // namespace dltrace::models
