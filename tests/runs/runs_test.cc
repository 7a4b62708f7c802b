// SPDX-License-Identifier: GPL-2.0-only
// runs/: the results file round-trips every string and 64-bit integer
// exactly; a run's rows are the longest endpoint's; runs compare against the
// first per op kind and per iteration as the formulas in this file say.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <random>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/synth.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/comparison.h"
#include "dltrace/runs/json.h"
#include "dltrace/runs/results_file.h"
#include "dltrace/runs/run.h"
#include "dltrace/runs/simulation_output.h"
#include "small_synth_set.h"
#include "temp_dir.h"

namespace dltrace::runs {
namespace {

ResultsFile TwoOps(int32_t endpoint, uint64_t op0_ns, uint64_t op1_ns) {
  ResultsFile f;
  f.source = "replay";
  f.algorithm = "ring";
  f.trace = "/tmp/trace";
  f.schedule_hash = 42;
  f.endpoint = endpoint;
  f.endpoints = 2;
  f.complete = true;
  f.ops.push_back({0, "MPI_Allreduce", "all-reduce", 0, 1000, 1000 + op0_ns, 4000, 0, 0, 0});
  f.ops.push_back({1, "MPI_Allreduce", "all-reduce", 1, 5000, 5000 + op1_ns, 4000, 0, 0, 0});
  f.iterations.push_back({0, 0, 3000});
  f.iterations.push_back({1, 3000, 3000 + 2 * op1_ns});
  f.bytes_received = f.bytes_scheduled_recv = 6000;
  return f;
}

TEST(ResultsFile, RoundTripsUnicodeEscapesAndLargeIntegersExactly) {
  ResultsFile f = TwoOps(1, 10, 20);
  // \u escapes beyond one byte (the old parser cut them), quotes, control characters.
  f.trace = "runs/r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93 \"q\" \\ \t\r\n\x01";
  f.error = "peer \xF0\x9F\x94\xA5 lost";
  f.schedule_hash = 0xFFFFFFFFFFFFFFF1ull;  // above 2^53: must not pass through a double
  f.clock_origin_ns = 1700000000123456789ull;
  f.ops[0].algbw_gbps = 0.1 + 0.2;  // full precision, not %.6g
  ResultsFile back;
  std::string error;
  ASSERT_TRUE(ResultsFromJson(ResultsToJson(f), &back, &error)) << error;
  EXPECT_EQ(back.trace, f.trace);
  EXPECT_EQ(back.error, f.error);
  EXPECT_EQ(back.schedule_hash, 0xFFFFFFFFFFFFFFF1ull);
  EXPECT_EQ(back.clock_origin_ns, 1700000000123456789ull);
  EXPECT_EQ(back.ops[0].algbw_gbps, 0.1 + 0.2);
  // A JSON writer of another make escaping as \uXXXX (with a surrogate pair) reads the same.
  std::string escaped = ResultsToJson(f);
  const std::string check = "\xE2\x9C\x93";
  escaped.replace(escaped.find(check), check.size(), "\\u2713");
  ASSERT_TRUE(ResultsFromJson(escaped, &back, &error)) << error;
  EXPECT_EQ(back.trace, f.trace);
}

TEST(Json, EscapesQuotesBackslashesControlsAndKeepsOrderAndNumbers) {
  Json j = {{"z", "a\"b\\c"}, {"a", "l1\nl2\r\t"}, {"c", std::string("\x01", 1)}, {"u", "h\xc3\xa9"},
            {"nan", NAN}, {"big", 18446744073709551615ull}, {"bad", "x\xff"}};
  EXPECT_EQ(JsonText(j),
            "{\"z\":\"a\\\"b\\\\c\",\"a\":\"l1\\nl2\\r\\t\",\"c\":\"\\u0001\",\"u\":\"h\xc3\xa9\","
            "\"nan\":null,\"big\":18446744073709551615,\"bad\":\"x\xef\xbf\xbd\"}");
}

TEST(ResultsFile, RefusesWhatIsNotOne) {
  ResultsFile back;
  std::string error;
  EXPECT_FALSE(ResultsFromJson("{\"format\":\"other\"}", &back, &error));
  EXPECT_EQ(error, "not a dltrace results file");
  EXPECT_FALSE(ResultsFromJson("{\"format\":\"dltrace-results\",\"version\":99}", &back, &error));
  EXPECT_NE(error.find("newer"), std::string::npos) << error;
  EXPECT_FALSE(ResultsFromJson("{\"format\":", &back, &error));
  EXPECT_NE(error.find("bad JSON at byte"), std::string::npos) << error;
}

TEST(AtomicFile, LeavesNothingUnderTheNameUntilCommitted) {
  const std::string dir = testing::TempDir() + "/atomic_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/out.txt";
  std::string error;
  {
    AtomicFile f(path);
    ASSERT_TRUE(f.Open(&error)) << error;
    std::fputs("half", f.get());
  }  // not committed: removed
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  ASSERT_TRUE(WriteFileAtomically(path, "whole", &error)) << error;
  EXPECT_EQ(std::filesystem::file_size(path), 5u);
  EXPECT_FALSE(WriteFileAtomically(dir + "/no/such/dir/x", "x", &error));
  EXPECT_NE(error.find("no/such/dir"), std::string::npos) << error;
  std::filesystem::remove_all(dir);
}

// flows.csv rows are formatted by hand for speed; printf's format is what they must equal.
TEST(FlowsCsv, RowsAreByteForByteWhatPrintfWrites) {
  auto printf_row = [](const FlowRecord& f) {
    char row[512];
    const int n = std::snprintf(row, sizeof row, "%u,%u,%d,%d,%u,%" PRIu64 ",%d,%.9f,%.9f,%" PRIu64 "\n", f.job, f.op,
                                f.src, f.dst, unsigned(f.channel), f.bytes, f.local ? 1 : 0,
                                double(f.start_ns) * 1e-9, double(f.end_ns) * 1e-9, f.end_ns - f.start_ns);
    return std::string(row, size_t(n));
  };
  auto our_row = [](const FlowRecord& f) {
    char row[kFlowsCsvRowMax];
    return std::string(row, FormatFlowsCsvRow(f, row));
  };
  // Edges: zero, a nanosecond either side of whole seconds, the largest
  // values each field holds, and times past 1e15 ns, where printf's own
  // rounding of the double is what the row must show.
  const std::vector<uint64_t> times = {0, 1, 9, 10, 999999999, 1000000000, 1000000001, 1999999999, 123456789012,
                                       999999999999999, 1000000000000000, 1000000000000001, 9007199254740993,
                                       UINT64_MAX};
  for (uint64_t a : times)
    for (uint64_t b : times) {
      const FlowRecord f{UINT32_MAX, 7, INT32_MIN, INT32_MAX, 65535, UINT64_MAX, true, a, b};
      EXPECT_EQ(our_row(f), printf_row(f));
    }
  std::mt19937_64 random(31);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t scale = uint64_t(1) << (random() % 64);  // every magnitude
    const uint64_t start = random() % scale;
    const uint64_t end = start + random() % scale;
    const FlowRecord f{uint32_t(random() % 3), uint32_t(random()), int32_t(random()), int32_t(random() % 100) - 50,
                       uint16_t(random()), random() % scale, i % 2 == 0, start, end};
    ASSERT_EQ(our_row(f), printf_row(f)) << i;
  }
}

TEST(RunTimes, AreTheLongestEndpointsAndRefuseAnotherRun) {
  RunTimes run;
  std::string error;
  ASSERT_TRUE(AddResults(TwoOps(0, 100, 300), "e0", &run, &error)) << error;
  ASSERT_TRUE(AddResults(TwoOps(1, 250, 200), "e1", &run, &error)) << error;
  ASSERT_EQ(run.ops.size(), 2u);
  EXPECT_EQ(run.ops[0].ns, 250);
  EXPECT_EQ(run.ops[1].ns, 300);
  EXPECT_EQ(run.iteration_ns, (std::vector<double>{3000, 600}));
  EXPECT_EQ(run.bytes_received, 12000u);
  ResultsFile other = TwoOps(1, 1, 1);
  other.schedule_hash = 7;
  EXPECT_FALSE(AddResults(other, "e9", &run, &error));
  EXPECT_NE(error.find("e9"), std::string::npos);
}

TEST(Comparison, PerKindAndIterationAgainstTheFirstRun) {
  RunTimes base, run;
  std::string error;
  ASSERT_TRUE(AddResults(TwoOps(0, 100, 300), "a", &base, &error));
  ASSERT_TRUE(AddResults(TwoOps(0, 150, 450), "b", &run, &error));
  base.source = "recorded";
  const Comparison c = CompareRuns({base, run}, nullptr);
  EXPECT_EQ(c.labels, (std::vector<std::string>{"recorded", "replay:ring"}));
  ASSERT_EQ(c.iterations, 2u);
  ASSERT_EQ(c.kinds.size(), 2u);
  // Base: 100 + 300 ns for 2 ops of 4000 B; all-reduce over 2 endpoints moves 2(n-1)/n = 1x the bytes.
  EXPECT_EQ(c.kinds[0].ns, 400);
  EXPECT_EQ(c.kinds[0].ops, 2u);
  EXPECT_EQ(c.kinds[0].bytes, 8000u);
  EXPECT_DOUBLE_EQ(c.kinds[0].busbw_gbps, 8000.0 / 400);
  EXPECT_EQ(c.kinds[1].ns, 600);
  EXPECT_DOUBLE_EQ(c.kinds[1].diff_percent, 50.0);
  // The mean leaves iteration 0 (start-up) out when there are more.
  EXPECT_EQ(c.mean_from, 1u);
  EXPECT_EQ(c.mean_ns[0], 600);
  EXPECT_EQ(c.mean_ns[1], 900);
  const std::string table = FormatAgainstRecorded(c, "replayed_ms");
  EXPECT_NE(table.find("replayed_ms"), std::string::npos) << table;
  EXPECT_NE(table.find("+50.0"), std::string::npos) << table;
  EXPECT_TRUE(std::isnan(Percent(1, 0)));
}

// Set-up: a recording whose first collective took 50 ms longer on every
// rank than the same collective later (connection set-up) reports 50 ms of
// set-up, taken out of iteration 0; set-up plus iterations stay the job's time.
TEST(RecordedSetup, TheFirstUseOfAPeerPairIsSetUpApartFromIterationZero) {
  const dltrace_test::TempDir tmp("dltrace-runs-setup");
  const std::string dir = tmp.file("set");
  formats::TraceSet plain;
  ASSERT_NO_FATAL_FAILURE(dltrace_test::WriteSmallSynthSet(dir, 1, &plain));
  formats::TraceSet slow = plain;
  const int64_t kSetup = 50'000'000;
  for (auto& rank : slow.ranks) {
    size_t first = 0;
    while (first < rank.ops.size() && formats::CollectiveOf(rank.ops[first].kind) == formats::Collective::kNone) ++first;
    ASSERT_LT(first, rank.ops.size());
    for (size_t k = first; k < rank.ops.size(); ++k) {
      auto& e = rank.ops[k];
      if (k > first) e.enter_ns += kSetup;
      e.exit_ns += kSetup;
      if (e.gpu_start_ns && k > first) *e.gpu_start_ns += kSetup;
      if (e.gpu_end_ns) *e.gpu_end_ns += kSetup;
    }
  }
  models::LowerOptions lo;
  std::vector<std::string> notes;
  models::MergedTrace mp = models::Merge(plain), ms = models::Merge(slow);
  models::Schedule sp = models::LowerTrace(mp, lo, &notes), ss = models::LowerTrace(ms, lo, &notes);
  RunTimes a = RecordedRun(sp, &mp), b = RecordedRun(ss, &ms);
  EXPECT_EQ(a.setup_ns, 0);
  EXPECT_GT(b.setup_ops, 0);
  EXPECT_NEAR(b.setup_ns, double(kSetup), 1e3);
  ASSERT_EQ(a.iteration_ns.size(), 3u);
  ASSERT_EQ(b.iteration_ns.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(b.iteration_ns[i], a.iteration_ns[i], 1e3) << i;
}

}  // namespace
}  // namespace dltrace::runs
