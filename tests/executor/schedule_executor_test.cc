// SPDX-License-Identifier: GPL-2.0-only
// The schedule executor over the in-memory loopback network: every algorithm on
// 2..8 ranks finishes on every endpoint, moves exactly the scheduled bytes and
// never starts a step before its dependencies ended; results files round-trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <unordered_map>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/algorithms.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/placement.h"
#include "dltrace/models/synth.h"
#include "dltrace/executor/loopback.h"
#include "dltrace/executor/schedule_tools.h"
#include "dltrace/runs/results_file.h"
#include "dltrace/runs/run.h"
#include "small_synth_set.h"
#include "sound_run.h"
#include "temp_dir.h"

namespace dltrace::executor {
namespace {

using formats::Collective;
using models::Schedule;
// The results file every executor writes (runs/), written from this executor's results.
using runs::ComputeRecordedTimes;
using runs::MakeResultsFile;
using runs::RecordedTimes;
using runs::ReadResultsFile;
using runs::ResultsFile;
using runs::ResultsFileName;
using runs::ResultsFromJson;
using runs::ResultsToJson;
using runs::WriteResultsFile;

TEST(ScheduleExecutor, EveryAlgorithmFinishesWithTheScheduledBytesOn2To8Ranks) {
  for (const auto& algo : models::AllAlgorithms()) {
    for (int n = 2; n <= 8; ++n) {
      for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kAllGather}) {
        Schedule s = Single(algo.name, c, n, uint64_t(n) * 3072);
        std::string what = std::string(algo.name) + " " + formats::CollectiveName(c) +
                           " n=" + std::to_string(n);
        ASSERT_TRUE(models::CheckSchedule(s).empty()) << what;
        ExpectSoundRun(s, RunLoopback(s), what);
      }
    }
  }
}

TEST(ScheduleExecutor, PartialArrivalsAndChannelsStillMatch) {
  models::LowerOptions o;
  o.channels = 3;
  o.chunk_bytes = 5000;
  LoopbackOptions lo;
  lo.chunk_bytes = 777;  // every message arrives in odd-sized parts
  for (const char* algo : {"ring", "tree", "ps", "pairwise"}) {
    Schedule s = Single(algo, Collective::kAllReduce, 5, 5 * 12000, o);
    ExpectSoundRun(s, RunLoopback(s, lo), algo);
  }
}

class SynthSchedule : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new dltrace_test::TempDir("dltrace-executor-test");
    dir_ = new std::string(tmp_->file("set"));
    set_ = new formats::TraceSet;
    ASSERT_NO_FATAL_FAILURE(dltrace_test::WriteSmallSynthSet(*dir_, 2, set_));
    merged_ = new models::MergedTrace(models::Merge(*set_));
  }
  static void TearDownTestSuite() {
    delete merged_;
    delete set_;
    delete dir_;
    delete tmp_;
  }
  static Schedule Lower(const std::string& algo) {
    models::LowerOptions o;
    o.algorithm = algo;
    std::vector<std::string> notes;
    return models::LowerTrace(*merged_, o, &notes);
  }
  static dltrace_test::TempDir* tmp_;
  static std::string* dir_;
  static formats::TraceSet* set_;
  static models::MergedTrace* merged_;
};
dltrace_test::TempDir* SynthSchedule::tmp_;
std::string* SynthSchedule::dir_;
formats::TraceSet* SynthSchedule::set_;
models::MergedTrace* SynthSchedule::merged_;

TEST_F(SynthSchedule, EveryAlgorithmReplaysATrainingRunWithComputeGaps) {
  for (const auto& algo : models::AllAlgorithms()) {
    Schedule s = Lower(algo.name);
    ASSERT_TRUE(models::CheckSchedule(s).empty()) << algo.name;
    auto results = RunLoopback(s);
    ExpectSoundRun(s, results, algo.name);
    ASSERT_EQ(results[0].iterations.size(), 3u);
    for (const auto& it : results[0].iterations) EXPECT_TRUE(it.valid) << algo.name;
  }
}

// Without per-step time ranges (the flow simulator's setting) every op and
// iteration is timed as with them, and no step's range is kept.
TEST_F(SynthSchedule, StartTimesOnlyTimeOpsAndIterationsTheSame) {
  for (const char* algo : {"ring", "tree", "ps"}) {
    Schedule s = Lower(algo);
    LoopbackOptions lean;
    lean.executor.step_times = false;
    auto full = RunLoopback(s);
    auto results = RunLoopback(s, lean);
    ASSERT_EQ(results.size(), full.size()) << algo;
    auto same = [&](const std::vector<TimeRange>& a, const std::vector<TimeRange>& b, const char* what, size_t e) {
      ASSERT_EQ(a.size(), b.size()) << algo << " " << what << " endpoint " << e;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].valid, b[i].valid) << algo << " " << what << " " << i << " endpoint " << e;
        EXPECT_EQ(a[i].start_ns, b[i].start_ns) << algo << " " << what << " " << i << " endpoint " << e;
        EXPECT_EQ(a[i].end_ns, b[i].end_ns) << algo << " " << what << " " << i << " endpoint " << e;
      }
    };
    for (size_t e = 0; e < results.size(); ++e) {
      EXPECT_TRUE(results[e].complete) << algo << " endpoint " << e;
      EXPECT_TRUE(results[e].steps.empty()) << algo << " endpoint " << e;
      EXPECT_EQ(full[e].steps.size(), s.ranks[e].steps.size()) << algo << " endpoint " << e;
      EXPECT_EQ(results[e].end_ns, full[e].end_ns) << algo << " endpoint " << e;
      EXPECT_EQ(results[e].op_sent, full[e].op_sent) << algo << " endpoint " << e;
      same(results[e].ops, full[e].ops, "op", e);
      same(results[e].iterations, full[e].iterations, "iteration", e);
    }
  }
}

// A parameter server posts the receives of every push at once; its op and
// iteration times still start when the pushes arrive, so its iterations
// follow one another instead of all starting at 0.
TEST_F(SynthSchedule, ReceivesPostedEarlyStartWhenTheirDataArrives) {
  Schedule s = Lower("ps");
  auto results = RunLoopback(s);
  ExpectSoundRun(s, results, "ps");
  const RankResult& server = results.back();
  ASSERT_EQ(s.endpoints.back().role, models::EndpointRole::kServer);
  ASSERT_EQ(server.iterations.size(), 3u);
  for (size_t i = 1; i < server.iterations.size(); ++i) {
    ASSERT_TRUE(server.iterations[i].valid);
    EXPECT_GE(server.iterations[i].start_ns, server.iterations[i - 1].end_ns) << "iteration " << i;
  }
  // The workers compute 20 ms between iterations; the server's iteration
  // time is not longer than the longest worker's.
  for (size_t i = 1; i < server.iterations.size(); ++i) {
    uint64_t worker = 0;
    for (size_t e = 0; e + 1 < results.size(); ++e)
      worker = std::max(worker, results[e].iterations[i].end_ns - results[e].iterations[i].start_ns);
    EXPECT_LE(server.iterations[i].end_ns - server.iterations[i].start_ns, worker) << "iteration " << i;
  }
}

// Every op with transfer steps on an endpoint starts once and finishes once
// there, in that order, with the range its results row has.
TEST_F(SynthSchedule, OpStartAndFinishCallbacksFireOncePerOp) {
  for (const char* algo : {"ring", "ps", "tree"}) {
    Schedule s = Lower(algo);
    struct Seen {
      int starts = 0, finishes = 0;
      TimeRange range;
    };
    std::vector<std::vector<Seen>> seen(s.ranks.size(), std::vector<Seen>(s.ops.size()));
    LoopbackOptions lo;
    lo.setup = [&](int32_t e, ScheduleExecutor& executor) {
      executor.set_on_op_start([&seen, e](uint32_t op) {
        Seen& x = seen[size_t(e)][op];
        EXPECT_EQ(x.finishes, 0);
        ++x.starts;
      });
      executor.set_on_op_finish([&seen, e](uint32_t op, const TimeRange& range) {
        Seen& x = seen[size_t(e)][op];
        EXPECT_EQ(x.starts, 1);
        ++x.finishes;
        x.range = range;
      });
    };
    auto results = RunLoopback(s, lo);
    ExpectSoundRun(s, results, algo);
    for (size_t e = 0; e < s.ranks.size(); ++e) {
      std::vector<char> has(s.ops.size(), 0);
      for (const auto& st : s.ranks[e].steps)
        if (st.type != models::StepType::kCompute) has[st.op()] = 1;
      for (size_t op = 0; op < s.ops.size(); ++op) {
        EXPECT_EQ(seen[e][op].starts, has[op]) << algo << " endpoint " << e << " op " << op;
        EXPECT_EQ(seen[e][op].finishes, has[op]) << algo << " endpoint " << e << " op " << op;
        if (!has[op]) continue;
        const size_t slot = results[e].OpSlot(uint32_t(op));
        ASSERT_NE(slot, RankResult::kNoSlot) << algo << " endpoint " << e << " op " << op;
        EXPECT_EQ(seen[e][op].range.start_ns, results[e].ops[slot].start_ns);
        EXPECT_EQ(seen[e][op].range.end_ns, results[e].ops[slot].end_ns);
      }
    }
  }
}

TEST_F(SynthSchedule, TimeScaleStretchesComputeSteps) {
  Schedule s = Lower("ring");
  LoopbackOptions fast, slow;
  fast.executor.time_scale = 0;
  slow.executor.time_scale = 2;
  auto a = RunLoopback(s, fast), b = RunLoopback(s, slow);
  uint64_t compute = models::ComputeTotals(s)[0].compute_ns;
  ASSERT_GT(compute, 0u);
  EXPECT_GE(b[0].end_ns, a[0].end_ns + compute);  // at least rank 0's own compute, twice over
}

// The receive of a same-host step ends at the model's time: the notice's
// network latency, then bytes over the local link plus its latency.
TEST_F(SynthSchedule, SameHostStepsTakeTheLocalLinkTimeNotTheNetworks) {
  Schedule s = Lower("ring");
  LoopbackOptions o;
  o.link = {1, 5000};  // a slow network, so network timing would show
  auto results = RunLoopback(s, o);
  ExpectSoundRun(s, results, "ring, same-host steps modelled");
  const models::Link& local = s.local_link;
  uint64_t local_bytes = 0, checked = 0;
  for (size_t e = 0; e < s.ranks.size(); ++e) {
    for (size_t i = 0; i < s.ranks[e].steps.size(); ++i) {
      const models::Step& send = s.ranks[e].steps[i];
      if (send.type != models::StepType::kSend || !send.local) continue;
      local_bytes += send.bytes;
      const auto& peer = s.ranks[size_t(send.peer)].steps;
      size_t r = 0;
      while (r < peer.size() && !(peer[r].type == models::StepType::kRecv && peer[r].peer == int32_t(e) &&
                                  peer[r].tag == send.tag))
        ++r;
      ASSERT_LT(r, peer.size());
      const TimeRange& st = results[e].steps[i];
      const TimeRange& rt = results[size_t(send.peer)].steps[r];
      const uint64_t wire = uint64_t(std::llround(double(send.bytes) * 8 / local.gbps));
      const uint64_t arrival =
          st.start_ns + uint64_t(o.link.latency_ns) + uint64_t(std::llround(double(send.bytes) * 8 / local.gbps + local.latency_ns));
      EXPECT_EQ(st.end_ns, st.start_ns + wire) << "endpoint " << e << " step " << i;
      EXPECT_EQ(rt.end_ns, std::max(rt.start_ns, arrival)) << "endpoint " << send.peer << " step " << r;
      ++checked;
    }
  }
  ASSERT_GT(checked, 0u) << "the synthetic run (2 ranks per host) has same-host steps";
  uint64_t sent = 0, received = 0;
  for (const auto& r : results) {
    sent += r.bytes_local_sent;
    received += r.bytes_local_received;
  }
  EXPECT_EQ(sent, local_bytes);
  EXPECT_EQ(received, local_bytes);

  // Without the model they cross the (slow) network like every other step.
  o.executor.model_local_steps = false;
  auto over_network = RunLoopback(s, o);
  ExpectSoundRun(s, over_network, "ring, same-host steps over the network");
  EXPECT_EQ(over_network[0].bytes_local_received, 0u);
  EXPECT_LT(results[0].end_ns, over_network[0].end_ns);
}

TEST_F(SynthSchedule, KeepIterationsCutsTheScheduleSoundly) {
  Schedule s = Lower("tree");
  uint64_t all = models::ComputeTotals(s)[0].recv_bytes;
  models::KeepIterations(&s, 1);
  EXPECT_EQ(s.iterations, 1);
  EXPECT_TRUE(models::CheckSchedule(s).empty());
  uint64_t one = models::ComputeTotals(s)[0].recv_bytes;
  EXPECT_GT(one, 0u);
  EXPECT_LT(one, all);
  ExpectSoundRun(s, RunLoopback(s), "tree, 1 iteration");
}

TEST_F(SynthSchedule, ScheduleHashDiffersBetweenAlgorithms) {
  EXPECT_EQ(ScheduleHash(Lower("ring")), ScheduleHash(Lower("ring")));
  EXPECT_NE(ScheduleHash(Lower("ring")), ScheduleHash(Lower("tree")));
}

TEST_F(SynthSchedule, ResultsFileRoundTripsAndIsWrittenWhole) {
  Schedule s = Lower("ring");
  auto results = RunLoopback(s);
  ResultsFile f = MakeResultsFile(s, results[1]);
  f.source = "replay";
  f.algorithm = "ring";
  f.trace = "a \"quoted\" path";
  f.schedule_hash = ScheduleHash(s);
  ASSERT_FALSE(f.ops.empty());
  ASSERT_EQ(f.iterations.size(), 3u);
  std::string path = *dir_ + "/" + ResultsFileName(1), error;
  ASSERT_TRUE(WriteResultsFile(f, path, &error)) << error;
  for (const auto& entry : std::filesystem::directory_iterator(*dir_))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  ResultsFile back;
  ASSERT_TRUE(ReadResultsFile(path, &back, &error)) << error;
  EXPECT_EQ(ResultsToJson(back), ResultsToJson(f));
  EXPECT_TRUE(back.complete);
  EXPECT_EQ(back.bytes_received, back.bytes_scheduled_recv);
  EXPECT_EQ(back.ops[0].kind, f.ops[0].kind);
  std::string cut = ResultsToJson(f);
  cut.resize(cut.size() / 2);
  EXPECT_FALSE(ResultsFromJson(cut, &back, &error));
}

TEST_F(SynthSchedule, RecordedTimesCoverEveryOpAndIteration) {
  Schedule s = Lower("recorded");
  RecordedTimes t = ComputeRecordedTimes(*merged_, s);
  ASSERT_EQ(t.op_ns.size(), s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) EXPECT_GT(t.op_ns[i], 0) << i;
  ASSERT_EQ(t.iteration_ns.size(), 3u);
  for (double ns : t.iteration_ns) EXPECT_GE(ns, 20e6);  // at least the compute time
}

// A pipeline-parallel job (Llama-3 8B, tp 2 x pp 2 x dp 2) on the in-memory
// network: its iteration times (runs/, models/iteration_time.h) add up to
// the job's time (the last endpoint's end) within 1%, and its identical
// iterations take equal times after the first; the recorded run's too.
TEST(PipelineJob, IterationTimesAddUpToTheJobAndRepeat) {
  const dltrace_test::TempDir tmp("dltrace-engine-pp");
  const std::string dir = tmp.file("set");
  models::SynthOptions o;
  o.model = "llama3-8b";
  o.tp = o.pp = o.dp = 2;
  o.ranks = 8;
  o.ranks_per_host = 2;
  o.seq_len = 1024;
  o.iterations = 4;
  std::string error;
  ASSERT_TRUE(models::WriteSynthTraceSet(o, dir, &error)) << error;
  formats::TraceSet set;
  ASSERT_TRUE(formats::LoadTraceSet(dir, &set, &error)) << error;
  models::MergedTrace merged = models::Merge(set);
  models::LowerOptions lo;
  lo.algorithm = "ring";
  std::vector<std::string> notes;
  Schedule s = models::LowerTrace(merged, lo, &notes);
  auto results = RunLoopback(s);
  ExpectSoundRun(s, results, "llama3-8b pipeline");
  uint64_t job_ns = 0;
  for (const auto& r : results) job_ns = std::max(job_ns, r.end_ns);
  runs::RunTimes run = runs::RunFromResults(runs::MakeResultsFiles(s, results, "replay", dir, "ring"));
  runs::RunTimes recorded = runs::RecordedRun(s, &merged);
  // The recorded job: from its earliest rank's start to its last op's end.
  int64_t first = INT64_MAX, last = 0;
  for (const auto& rt : set.ranks) {
    first = std::min(first, models::RankOriginNs(rt));
    for (const auto& e : rt.ops) last = std::max(last, e.gpu_end_ns ? int64_t(*e.gpu_end_ns) : int64_t(e.exit_ns));
  }
  for (const runs::RunTimes* r : {&run, &recorded}) {
    ASSERT_EQ(r->iteration_ns.size(), 4u) << r->source;
    double sum = 0;
    for (double t : r->iteration_ns) sum += t;
    for (size_t i = 2; i < 4; ++i)
      EXPECT_NEAR(r->iteration_ns[i], r->iteration_ns[1], 1e-3 * r->iteration_ns[1]) << r->source << " " << i;
    const double job = r == &run ? double(job_ns) : double(last - first);
    EXPECT_NEAR(sum, job, 0.01 * job) << r->source;
  }
}

}  // namespace
}  // namespace dltrace::executor

// StepMap (the executor's per-step values for the steps in flight) against
// std::unordered_map on random inserts, lookups and erases, dense and sparse
// keys, through several growths and back to empty.
TEST(StepMap, AgreesWithUnorderedMap) {
  std::mt19937 rng(7);
  for (uint32_t spread : {64u, 1u << 20}) {
    dltrace::executor::StepMap<uint64_t> map;
    std::unordered_map<uint32_t, uint64_t> ref;
    for (int i = 0; i < 200000; ++i) {
      const uint32_t key = rng() % spread;
      switch (rng() % 3) {
        case 0:
          map[key] += i;
          ref[key] += i;
          break;
        case 1: {
          const uint64_t* at = map.find(key);
          const auto it = ref.find(key);
          ASSERT_EQ(at != nullptr, it != ref.end()) << key;
          if (at) {
            ASSERT_EQ(*at, it->second);
          }
          break;
        }
        default:
          map.erase(key);
          ref.erase(key);
      }
      ASSERT_EQ(map.size(), ref.size());
    }
    for (const auto& [key, value] : ref) {
      ASSERT_NE(map.find(key), nullptr);
      EXPECT_EQ(*map.find(key), value);
      map.erase(key);
    }
    EXPECT_EQ(map.size(), 0u);
  }
}
