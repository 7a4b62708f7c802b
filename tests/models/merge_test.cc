// SPDX-License-Identifier: GPL-2.0-only
// Merging trace sets written with the formats writer, and lowering them:
// communicators, matched calls and transfers, hosts, problems, gaps, iterations.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "dltrace/formats/trace_set.h"
#include "dltrace/formats/writer.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/merge.h"
#include "communicators.h"
#include "temp_dir.h"

namespace dltrace::models {
namespace {

using formats::Api;
using formats::Communicator;
using formats::OpEvent;
using formats::OpKind;

constexpr int kRanks = 4, kIterations = 5, kBuckets = 3;
constexpr uint64_t kBucketBytes = 4u << 20, kActivation = 1u << 20;
constexpr int64_t kT0 = 1'000'000'000;
constexpr uint64_t kNcclHash = 0xabcdef;

// A data-parallel job like tests/tools/sample_trace.cc: per iteration
// kBuckets NCCL all-reduces (GPU-timed) and a ring exchange over MPI.
// EDIT may change each rank's ops before they are written.
class TraceSetTest : public ::testing::Test {
 protected:

  formats::TraceSet Write(const std::function<void(int, std::vector<OpEvent>&)>& edit = {},
                          int skip_rank = -1) {
    for (int r = 0; r < kRanks; ++r) {
      if (r == skip_rank) continue;
      formats::Header h;
      h.global_rank = r;
      h.world_size = kRanks;
      h.local_rank = r % 2;
      h.host = "node" + std::to_string(r / 2);
      std::string err;
      auto w = formats::TraceWriter::Create(dir_ + "/rank" + std::to_string(r) + ".dltrace", h, &err);
      EXPECT_TRUE(w) << err;
      w->AddCommunicator(dltrace_test::MpiWorld(kRanks, r));
      Communicator nccl;
      nccl.id = uint32_t(7 + r);  // ids are per file; the hash ties them together
      nccl.api = Api::Nccl;
      nccl.name = "dp";
      nccl.size = kRanks;
      nccl.rank = r;
      nccl.nccl_unique_id_hash = kNcclHash;
      w->AddCommunicator(nccl);
      std::vector<OpEvent> ops;
      int64_t t = kT0;
      uint64_t mpi_seq = 0, nccl_seq = 0;
      for (int it = 0; it < kIterations; ++it) {
        t += 30'000'000;  // forward and backward
        for (int b = 0; b < kBuckets; ++b) {
          OpEvent op;
          op.kind = OpKind::NcclAllReduce;
          op.comm = nccl.id;
          op.bytes = kBucketBytes;
          op.stream = 0x1000;
          op.seq = nccl_seq++;
          op.enter_ns = t;
          op.exit_ns = t + 10'000;
          op.gpu_start_ns = t + 1'000'000;  // 1 ms of compute on the stream first
          op.gpu_end_ns = t + 3'000'000;
          t += 3'000'000;
          ops.push_back(op);
        }
        int right = (r + 1) % kRanks, left = (r + kRanks - 1) % kRanks;
        for (int k = 0; k < 2; ++k) {
          OpEvent op;
          bool send = (k == 0) == (r % 2 == 0);
          op.kind = send ? OpKind::MpiSend : OpKind::MpiRecv;
          op.comm = 0;
          op.bytes = kActivation;
          op.peer = send ? right : left;
          op.tag = it;
          op.seq = mpi_seq++;
          op.enter_ns = t;
          op.exit_ns = t + 500'000;
          t += 600'000;
          ops.push_back(op);
        }
      }
      if (edit) edit(r, ops);
      for (const auto& op : ops) w->AddOp(op);
      formats::Footer f;
      EXPECT_TRUE(w->Close(f, &err)) << err;
    }
    formats::TraceSet set;
    std::string err;
    EXPECT_TRUE(formats::LoadTraceSet(dir_, &set, &err)) << err;
    return set;
  }

  dltrace_test::TempDir tmp_{"dltrace-merge"};
  std::string dir_ = tmp_.path();
};

bool Mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// SET merged and lowered as `--algo recorded` lowers it, expected to merge
// without problems, lower without a contradicting order, and be sound.
Schedule LowerSound(const formats::TraceSet& set) {
  MergedTrace m = Merge(set);
  EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  std::vector<std::string> notes;
  Schedule s = LowerTrace(m, LowerOptions{}, &notes);
  EXPECT_FALSE(Mentions(notes, "contradicting")) << notes.front();
  auto problems = CheckSchedule(s);
  EXPECT_TRUE(problems.empty()) << problems.front();
  return s;
}

TEST_F(TraceSetTest, MergesCommunicatorsCallsTransfersAndHosts) {
  formats::TraceSet set = Write();
  MergedTrace m = Merge(set);
  EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  ASSERT_EQ(m.comms.size(), 2u);
  EXPECT_EQ(m.comms[1].nccl_unique_id_hash, kNcclHash);
  EXPECT_EQ(m.comms[1].members, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.calls.size(), size_t(kIterations * kBuckets));
  for (const auto& c : m.calls) {
    EXPECT_TRUE(c.consistent);
    EXPECT_EQ(c.bytes, kBucketBytes);
  }
  EXPECT_EQ(m.transfers.size(), size_t(kRanks * kIterations));
  for (const auto& t : m.transfers) EXPECT_EQ(t.dst, (t.src + 1) % kRanks);
  ASSERT_EQ(m.hosts.size(), 2u);
  EXPECT_EQ(m.hosts[0].ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(m.hosts[1].ranks, (std::vector<int32_t>{2, 3}));
}

TEST_F(TraceSetTest, MissingRankIsReportedNotFatal) {
  formats::TraceSet set = Write({}, 2);
  MergedTrace m = Merge(set);
  EXPECT_TRUE(Mentions(m.problems, "rank 2 has no trace file"));
  EXPECT_TRUE(Mentions(m.problems, "not recorded on rank(s) comm rank 2"));
  std::vector<std::string> notes;
  Schedule s = LowerTrace(m, LowerOptions{}, &notes);
  EXPECT_TRUE(CheckSchedule(s).empty());
  EXPECT_TRUE(Mentions(notes, "left out"));
}

TEST_F(TraceSetTest, CollectiveOnSomeMembersOnlyIsReported) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) {
    if (r == 1) ops.erase(ops.begin() + kBuckets + 2);  // last all-reduce of iteration 2
  });
  MergedTrace m = Merge(set);
  EXPECT_TRUE(Mentions(m.problems, "not recorded on rank(s) 1")) << m.problems.front();
}

TEST_F(TraceSetTest, DisagreeingCountsAndKindsAreReported) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) {
    if (r == 3) ops[0].bytes = 7;
    if (r == 2) ops[1].kind = OpKind::NcclBroadcast;
  });
  MergedTrace m = Merge(set);
  EXPECT_TRUE(Mentions(m.problems, "rank 3 moved 7 bytes"));
  EXPECT_TRUE(Mentions(m.problems, "rank 2 called ncclBroadcast"));
}

TEST_F(TraceSetTest, UnmatchedSendIsReported) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) {
    if (r == 1) ops[kBuckets].tag = 99;  // rank 1 receives with another tag
  });
  MergedTrace m = Merge(set);
  EXPECT_TRUE(Mentions(m.problems, "no matching"));
  Schedule s = LowerTrace(m, LowerOptions{}, nullptr);
  EXPECT_TRUE(CheckSchedule(s).empty());
}

TEST_F(TraceSetTest, LoweringKeepsEveryRankSoundAndFindsIterations) {
  formats::TraceSet set = Write();
  MergedTrace m = Merge(set);
  for (const auto& algo : AllAlgorithms()) {
    LowerOptions o;
    o.algorithm = algo.name;
    std::vector<std::string> notes;
    Schedule s = LowerTrace(m, o, &notes);
    auto problems = CheckSchedule(s);
    EXPECT_TRUE(problems.empty()) << algo.name << ": " << problems.front();
    EXPECT_EQ(s.iterations, kIterations) << algo.name;
    EXPECT_EQ(s.ops.size(), size_t(kIterations * (kBuckets + kRanks)));
  }
}

TEST_F(TraceSetTest, ComputeGapsComeFromTheGpuTimeline) {
  // MPI_Init began 300 ms before the first call that moves data: it is no
  // compute gap of the job (the replayed iteration 0 would include it).
  formats::TraceSet set = Write([](int, std::vector<OpEvent>& ops) {
    OpEvent init;
    init.kind = OpKind::MpiInit;
    init.enter_ns = kT0 - 300'000'000;
    init.exit_ns = kT0 + 1'000;
    ops.insert(ops.begin(), init);
  });
  MergedTrace m = Merge(set);
  LowerOptions o;
  o.algorithm = "ring";
  Schedule s = LowerTrace(m, o, nullptr);
  // On the NCCL stream, each all-reduce follows 1 ms of idle stream time
  // (2nd and 3rd bucket); the first bucket of the next iteration follows the
  // MPI exchange (1.2 ms) and the forward/backward pass (30 ms) as well.
  std::vector<uint64_t> gaps;
  for (const Step& st : s.ranks[0].steps)
    if (st.type == StepType::kCompute && s.ops[st.op()].source == ScheduleOp::Source::kCollective)
      gaps.push_back(st.duration_ns());
  ASSERT_EQ(gaps.size(), size_t(kIterations * kBuckets));
  EXPECT_EQ(gaps[1], 1'000'000u);
  EXPECT_EQ(gaps[2], 1'000'000u);
  EXPECT_EQ(gaps[0], 1'000'000u);  // measured from the rank's first call
  EXPECT_EQ(gaps[kBuckets], 32'200'000u);
}

// Whether step TO depends on step FROM through the rank's dependency lists.
bool DependsOn(const RankSchedule& rs, uint32_t to, uint32_t from) {
  std::vector<uint32_t> todo{to};
  std::vector<char> seen(rs.steps.size(), 0);
  while (!todo.empty()) {
    uint32_t s = todo.back();
    todo.pop_back();
    for (const uint32_t* d = rs.deps_begin(rs.steps[s]); d != rs.deps_end(rs.steps[s]); ++d) {
      if (*d == from) return true;
      if (!seen[*d]) seen[*d] = 1, todo.push_back(*d);
    }
  }
  return false;
}

// A ring exchange inside ncclGroupStart/End (each rank sends right, receives
// left, in that order on every rank) runs all at once in NCCL. Lowered, the
// send and the receive of a rank wait for neither each other nor the ring,
// and the all-reduce after the group waits for both.
TEST_F(TraceSetTest, OpsOfOneNcclGroupRunTogether) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) {
    ops.clear();
    int64_t t = kT0;
    uint64_t p2p = 0, coll = 0;
    // An op of this rank's communicator entered at T (1 us on the host), on
    // the GPU from T + GPU_START to T + GPU_END.
    auto nccl_op = [&](OpKind kind, uint64_t bytes, uint64_t seq, int64_t gpu_start, int64_t gpu_end) {
      OpEvent op;
      op.kind = kind;
      op.comm = uint32_t(7 + r);
      op.bytes = bytes;
      op.stream = 0x1000;
      op.seq = seq;
      op.enter_ns = t;
      op.exit_ns = t + 1'000;
      op.gpu_start_ns = t + gpu_start;
      op.gpu_end_ns = t + gpu_end;
      return op;
    };
    for (uint32_t group = 1; group <= 2; ++group) {
      for (int k = 0; k < 2; ++k) {
        OpEvent op = nccl_op(k == 0 ? OpKind::NcclSend : OpKind::NcclRecv, kActivation, p2p++, 10'000, 500'000);
        op.peer = k == 0 ? (r + 1) % kRanks : (r + kRanks - 1) % kRanks;
        op.group = group;
        t += 2'000;
        ops.push_back(op);
      }
      ops.push_back(nccl_op(OpKind::NcclAllReduce, kBucketBytes, coll++, 600'000, 900'000));
      t += 1'000'000;
    }
  });
  const Schedule s = LowerSound(set);
  for (int e = 0; e < kRanks; ++e) {
    const RankSchedule& rs = s.ranks[size_t(e)];
    uint32_t send = kNoOp, recv = kNoOp, after = kNoOp;
    for (uint32_t i = 0; i < rs.steps.size(); ++i) {
      const Step& st = rs.steps[i];
      const ScheduleOp& op = s.ops[st.op()];
      if (op.iteration != 0 && s.iterations > 1) continue;
      if (st.type == StepType::kSend && op.source == ScheduleOp::Source::kTransfer && send == kNoOp)
        send = i;
      if (st.type == StepType::kRecv && op.source == ScheduleOp::Source::kTransfer && recv == kNoOp)
        recv = i;
      if (st.type != StepType::kCompute && op.source == ScheduleOp::Source::kCollective &&
          after == kNoOp)
        after = i;
    }
    ASSERT_NE(send, kNoOp);
    ASSERT_NE(recv, kNoOp);
    ASSERT_NE(after, kNoOp);
    EXPECT_FALSE(DependsOn(rs, send, recv)) << "rank " << e;
    EXPECT_FALSE(DependsOn(rs, recv, send)) << "rank " << e;
    EXPECT_TRUE(DependsOn(rs, after, send)) << "rank " << e;
    EXPECT_TRUE(DependsOn(rs, after, recv)) << "rank " << e;
  }
}

TEST_F(TraceSetTest, SameHostTransfersAreLocal) {
  formats::TraceSet set = Write();
  MergedTrace m = Merge(set);
  Schedule s = LowerTrace(m, LowerOptions{}, nullptr);
  for (int e = 0; e < kRanks; ++e)
    for (const Step& st : s.ranks[size_t(e)].steps)
      if (st.type != StepType::kCompute) {
        EXPECT_EQ(st.local, st.peer / 2 == e / 2);
      }
}

TEST_F(TraceSetTest, DifferentStreamsStayConcurrent) {
  // Alternate buckets between two streams: a bucket waits only for the one
  // before it on its own stream.
  formats::TraceSet set = Write([](int, std::vector<OpEvent>& ops) {
    int k = 0;
    for (auto& op : ops)
      if (op.kind == OpKind::NcclAllReduce) op.stream = (k++ % 2) ? 0x2000 : 0x1000;
  });
  MergedTrace m = Merge(set);
  LowerOptions o;
  o.algorithm = "ring";
  Schedule s = LowerTrace(m, o, nullptr);
  ASSERT_TRUE(CheckSchedule(s).empty());
  // Collect, per op, which ops its steps on rank 0 depend on directly.
  const RankSchedule& r0 = s.ranks[0];
  uint32_t op_b1 = r0.steps.back().op();
  for (const Step& st : r0.steps)
    if (s.ops[st.op()].source == ScheduleOp::Source::kCollective) {
      op_b1 = st.op();
      if (m.calls[s.ops[st.op()].recorded].ordinal == 1) break;
    }
  for (const Step& st : r0.steps) {
    if (st.op() != op_b1) continue;
    for (const uint32_t* d = r0.deps_begin(st); d != r0.deps_end(st); ++d) {
      uint32_t dep_op = r0.steps[*d].op();
      EXPECT_TRUE(dep_op == op_b1 || m.calls[s.ops[dep_op].recorded].ordinal != 0 ||
                  s.ops[dep_op].source != ScheduleOp::Source::kCollective)
          << "bucket 1 waits for bucket 0 on another stream";
    }
  }
}

// A halo exchange as the MPI recorder writes it: per iteration each rank
// computes, posts Irecv from both neighbours and Isend to both, waits for all
// four in one MPI_Waitall (5 ms), then makes a blocking MPI_Allreduce. The
// recorder writes a nonblocking call when the Wait completes it, so the file
// holds the four transfers, then the Waitall, then the all-reduce.
constexpr int64_t kCall = 1'000, kBetween = 2'000, kWaitall = 5'000'000, kCompute = 1'000'000;
void HaloExchange(int r, std::vector<OpEvent>& ops) {
  ops.clear();
  int64_t t = kT0;
  const int left = (r + kRanks - 1) % kRanks, right = (r + 1) % kRanks;
  uint64_t p2p = 0, coll = 0;
  for (int it = 0; it < kIterations; ++it) {
    t += kCompute;
    std::vector<OpEvent> posted;
    for (int k = 0; k < 4; ++k) {
      OpEvent op;
      op.kind = k < 2 ? OpKind::MpiIrecv : OpKind::MpiIsend;
      op.comm = 0;
      op.bytes = kActivation;
      op.peer = k % 2 ? right : left;
      op.tag = k < 2 ? 1 - k % 2 : k % 2;  // a message to the right carries tag 1
      op.seq = p2p++;
      op.enter_ns = t;
      op.exit_ns = t + kCall;
      t += kCall + kBetween;
      posted.push_back(op);
    }
    OpEvent wait;
    wait.kind = OpKind::MpiWaitall;
    wait.count = 4;
    wait.enter_ns = t;
    wait.exit_ns = t + kWaitall;
    for (size_t k = 0; k < posted.size(); ++k) {
      posted[k].completion_ns = t + kWaitall - int64_t(4 - k) * kCall;
      ops.push_back(posted[k]);
    }
    ops.push_back(wait);
    t += kWaitall + kBetween;
    OpEvent ar;
    ar.kind = OpKind::MpiAllreduce;
    ar.comm = 0;
    ar.bytes = 8;
    ar.seq = coll++;
    ar.enter_ns = t;
    ar.exit_ns = t + 100'000;
    t += 100'000;
    ops.push_back(ar);
  }
}

// The steps of iteration IT on RANK: its transfers' sends and receives and
// the first step of its all-reduce.
struct HaloSteps {
  std::vector<uint32_t> transfers;
  uint32_t allreduce = kNoOp;
};
HaloSteps StepsOf(const Schedule& s, int rank, int it) {
  HaloSteps h;
  const RankSchedule& rs = s.ranks[size_t(rank)];
  for (uint32_t i = 0; i < rs.steps.size(); ++i) {
    const Step& st = rs.steps[i];
    const ScheduleOp& op = s.ops[st.op()];
    if (op.iteration != it || st.type == StepType::kCompute) continue;
    if (op.source == ScheduleOp::Source::kTransfer) h.transfers.push_back(i);
    else if (h.allreduce == kNoOp) h.allreduce = i;
  }
  return h;
}

TEST_F(TraceSetTest, NonblockingHaloExchangeLowersWithoutForcedOrder) {
  formats::TraceSet set = Write(HaloExchange);
  const Schedule s = LowerSound(set);
  EXPECT_EQ(s.iterations, kIterations);
  for (int r = 0; r < kRanks; ++r)
    for (int it = 0; it < kIterations; ++it) {
      HaloSteps h = StepsOf(s, r, it);
      const RankSchedule& rs = s.ranks[size_t(r)];
      ASSERT_EQ(h.transfers.size(), 4u) << "rank " << r << " iteration " << it;
      ASSERT_NE(h.allreduce, kNoOp);
      // The four start together: none waits for another...
      for (uint32_t a : h.transfers)
        for (uint32_t b : h.transfers) EXPECT_FALSE(a != b && DependsOn(rs, a, b)) << "rank " << r;
      // ...and what follows the Waitall waits for all four.
      for (uint32_t a : h.transfers) EXPECT_TRUE(DependsOn(rs, h.allreduce, a)) << "rank " << r;
      if (it > 0) {
        HaloSteps prev = StepsOf(s, r, it - 1);
        for (uint32_t a : h.transfers) EXPECT_TRUE(DependsOn(rs, a, prev.allreduce)) << "rank " << r;
      }
    }
}

TEST_F(TraceSetTest, TimeInsideWaitIsNotCompute) {
  formats::TraceSet set = Write(HaloExchange);
  MergedTrace m = Merge(set);
  Schedule s = LowerTrace(m, LowerOptions{}, nullptr);
  // The host thread computed only between its calls: kCompute before the
  // Irecvs and kBetween after every call but the last; the 5 ms inside
  // each Waitall is waiting for the messages, which the schedule models.
  const uint64_t between_calls = 3 * kBetween + kBetween + kBetween;  // Irecv..Isend, ->Waitall, ->Allreduce
  // (Iteration 0 counts from the rank's first call, which is its first Irecv.)
  const uint64_t expected = uint64_t(kIterations) * (uint64_t(kCompute) + between_calls) - uint64_t(kCompute);
  auto totals = ComputeTotals(s);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(totals[size_t(r)].compute_ns, expected) << "rank " << r;
}

// Same-host transfers of an NCCL job run on NVLink-like links (300 GB/s,
// 1 us); those of an MPI-only job through shared memory (10 GB/s, 0.5 us), as
// README's `dltrace schedule` section states; a rate or latency given wins.
TEST_F(TraceSetTest, SameHostLinkFollowsTheJobsLibrary) {
  formats::TraceSet nccl_set = Write();
  Schedule nccl = LowerTrace(Merge(nccl_set), LowerOptions{}, nullptr);
  EXPECT_DOUBLE_EQ(nccl.local_link.gbps, 2400.0);
  EXPECT_DOUBLE_EQ(nccl.local_link.latency_ns, 1000.0);

  std::filesystem::remove_all(dir_);
  std::filesystem::create_directory(dir_);
  formats::TraceSet mpi_set = Write(HaloExchange);
  Schedule mpi = LowerTrace(Merge(mpi_set), LowerOptions{}, nullptr);
  EXPECT_DOUBLE_EQ(mpi.local_link.gbps, 80.0);
  EXPECT_DOUBLE_EQ(mpi.local_link.latency_ns, 500.0);

  LowerOptions given;
  given.local_gbps = 4.0;
  Schedule slow = LowerTrace(Merge(mpi_set), given, nullptr);
  EXPECT_DOUBLE_EQ(slow.local_link.gbps, 4.0);
  EXPECT_DOUBLE_EQ(slow.local_link.latency_ns, 500.0);
}

// Bytes of the receives on RANK that the host reduces (Step::reduce).
uint64_t ReducedBytes(const Schedule& s, int rank) {
  uint64_t bytes = 0;
  for (const Step& st : s.ranks[size_t(rank)].steps)
    if (st.type == StepType::kRecv && st.reduce) bytes += st.bytes;
  return bytes;
}

// With no algorithm named, a trace set whose collectives are NCCL's lowers as
// NCCL runs them (nccl), an MPI one as recorded; one named wins. Only an MPI
// library reduces on the host: the halo exchange's 8-byte MPI_Allreduce, a
// ring over 4 ranks, adds (n - 1)/n * 8 = 6 bytes per rank per iteration,
// the NCCL job's all-reduces none (NCCL reduces on the GPU), whatever lowers them.
TEST_F(TraceSetTest, DefaultAlgorithmFollowsTheJobsLibrary) {
  formats::TraceSet nccl_set = Write();
  const MergedTrace nm = Merge(nccl_set);
  EXPECT_EQ(DefaultAlgorithm(nm), "nccl");
  const Schedule nccl = LowerTrace(nm, LowerOptions{}, nullptr);
  EXPECT_EQ(nccl.algorithm, "nccl");
  LowerOptions ring;
  ring.algorithm = "ring";
  const Schedule given = LowerTrace(nm, ring, nullptr);
  EXPECT_EQ(given.algorithm, "ring");
  int all_reduces = 0;
  for (size_t i = 0; i < nccl.ops.size(); ++i) {
    if (nccl.ops[i].kind != OpKind::NcclAllReduce) continue;
    ++all_reduces;
    EXPECT_EQ(nccl.ops[i].algorithm, "nccl") << "op " << i;
    EXPECT_FALSE(nccl.ops[i].nccl_reason.empty()) << "op " << i;
    EXPECT_EQ(given.ops[i].algorithm, "ring") << "op " << i;
  }
  EXPECT_EQ(all_reduces, kIterations * kBuckets);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ReducedBytes(nccl, r), 0u) << "rank " << r;
    EXPECT_EQ(ReducedBytes(given, r), 0u) << "rank " << r;
  }

  std::filesystem::remove_all(dir_);
  std::filesystem::create_directory(dir_);
  formats::TraceSet mpi_set = Write(HaloExchange);
  const MergedTrace mm = Merge(mpi_set);
  EXPECT_EQ(DefaultAlgorithm(mm), "recorded");
  const Schedule mpi = LowerTrace(mm, LowerOptions{}, nullptr);
  EXPECT_EQ(mpi.algorithm, "recorded");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ReducedBytes(mpi, r), uint64_t(kIterations) * 6) << "rank " << r;
}

// The ids of RS's steps of TYPE, in order.
std::vector<uint32_t> StepsOf(const RankSchedule& rs, StepType type) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < rs.steps.size(); ++i)
    if (rs.steps[i].type == type) ids.push_back(i);
  return ids;
}

// Isend to the right, then a blocking Recv from the left, then Wait: every
// rank's file says Recv first (the Isend is written when the Wait completes
// it), which read as program order is a cycle around the ring.
TEST_F(TraceSetTest, BlockingCallAfterIsendDoesNotWaitForIt) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) {
    ops.clear();
    int64_t t = kT0;
    uint64_t p2p = 0;
    for (int it = 0; it < kIterations; ++it) {
      t += kCompute;
      OpEvent send;
      send.kind = OpKind::MpiIsend;
      send.comm = 0;
      send.bytes = kActivation;
      send.peer = (r + 1) % kRanks;
      send.tag = it;
      send.seq = p2p++;
      send.enter_ns = t;
      send.exit_ns = t + kCall;
      OpEvent recv = send;
      recv.kind = OpKind::MpiRecv;
      recv.peer = (r + kRanks - 1) % kRanks;
      recv.seq = p2p++;
      recv.enter_ns = t + 2 * kCall;
      recv.exit_ns = t + 1'000'000;
      OpEvent wait;
      wait.kind = OpKind::MpiWait;
      wait.enter_ns = t + 1'000'000 + kCall;
      wait.exit_ns = t + 1'100'000;
      send.completion_ns = wait.exit_ns - kCall;
      ops.push_back(recv);
      ops.push_back(send);
      ops.push_back(wait);
      t = wait.exit_ns;
    }
  });
  const Schedule s = LowerSound(set);
  for (int r = 0; r < kRanks; ++r) {
    const RankSchedule& rs = s.ranks[size_t(r)];
    std::vector<uint32_t> sends = StepsOf(rs, StepType::kSend), recvs = StepsOf(rs, StepType::kRecv);
    ASSERT_EQ(sends.size(), size_t(kIterations));
    ASSERT_EQ(recvs.size(), size_t(kIterations));
    for (int it = 0; it < kIterations; ++it) {
      EXPECT_FALSE(DependsOn(rs, recvs[size_t(it)], sends[size_t(it)])) << "rank " << r;
      if (it + 1 < kIterations) {  // the next iteration comes after the Wait
        EXPECT_TRUE(DependsOn(rs, sends[size_t(it) + 1], sends[size_t(it)])) << "rank " << r;
        EXPECT_TRUE(DependsOn(rs, sends[size_t(it) + 1], recvs[size_t(it)])) << "rank " << r;
      }
    }
  }
}

// MPI completion semantics. Pairs (0,1) and (2,3) each send to each other
// first, then receive (KIND, BYTES): eager sends complete without their
// receive, so only sends that must meet their receive conflict.
std::vector<OpEvent> CrossedSends(int r, OpKind kind, uint64_t bytes) {
  std::vector<OpEvent> ops;
  int64_t t = kT0;
  for (int it = 0; it < kIterations; ++it) {
    t += 1'000'000;
    OpEvent send;
    send.kind = kind;
    send.comm = 0;
    send.bytes = bytes;
    send.peer = r ^ 1;
    send.tag = it;
    send.enter_ns = t;
    send.exit_ns = t + 10'000;
    OpEvent recv = send;
    recv.kind = OpKind::MpiRecv;
    recv.enter_ns = t + 20'000;
    recv.exit_ns = t + 40'000;
    ops.push_back(send);
    ops.push_back(recv);
    t = recv.exit_ns;
  }
  return ops;
}

TEST_F(TraceSetTest, EagerSendsPostedBeforeTheirReceivesAreNotForced) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) { ops = CrossedSends(r, OpKind::MpiSend, 1024); });
  MergedTrace m = Merge(set);
  ASSERT_TRUE(m.problems.empty()) << m.problems.front();
  std::vector<std::string> notes;
  std::vector<ForcedOrder> forced;
  Schedule s = LowerTrace(m, LowerOptions{}, &notes, &forced);
  EXPECT_FALSE(Mentions(notes, "contradicting")) << notes.front();
  EXPECT_TRUE(forced.empty());
  ASSERT_TRUE(CheckSchedule(s).empty());
  for (int r = 0; r < kRanks; ++r) {  // each rank: its send, then its receive, in order
    const RankSchedule& rs = s.ranks[size_t(r)];
    std::vector<uint32_t> sends = StepsOf(rs, StepType::kSend), recvs = StepsOf(rs, StepType::kRecv);
    ASSERT_EQ(sends.size(), size_t(kIterations));
    ASSERT_EQ(recvs.size(), size_t(kIterations));
    for (int it = 0; it < kIterations; ++it)
      EXPECT_TRUE(DependsOn(rs, recvs[size_t(it)], sends[size_t(it)])) << "rank " << r;
  }
}

TEST_F(TraceSetTest, SendsOverTheEagerLimitAreForcedAndNamed) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) { ops = CrossedSends(r, OpKind::MpiSend, 1024); });
  MergedTrace m = Merge(set);
  LowerOptions o;
  o.eager_limit_local_bytes = 512;  // ranks 0 and 1 share node0, 2 and 3 node1
  std::vector<std::string> notes;
  std::vector<ForcedOrder> forced;
  Schedule s = LowerTrace(m, o, &notes, &forced);
  ASSERT_TRUE(CheckSchedule(s).empty());
  // Times count from each rank's first call (the files have no start time).
  // Per pair and iteration, one send of the two is forced.
  ASSERT_EQ(forced.size(), size_t(2 * kIterations));
  ASSERT_TRUE(Mentions(notes, "contradicting orders: 10 ops"));
  EXPECT_TRUE(Mentions(notes, "MPI_Send 0->1 of 1024 bytes on communicator 0 (MPI_COMM_WORLD) {0,1,2,3}: "
                              "rank 0 call 0 at 0.000000 s (waiting there); rank 1 call 1 at 0.000020 s "
                              "(still at MPI_Send, call 0 at 0.000000 s)"))
      << ::testing::PrintToString(notes);
  const ForcedOrder& f = forced.front();
  ASSERT_EQ(f.parties.size(), 2u);
  EXPECT_TRUE(f.parties[0].reached);
  EXPECT_FALSE(f.parties[1].reached);
  EXPECT_EQ(f.parties[1].at_kind, OpKind::MpiSend);
}

TEST_F(TraceSetTest, SynchronousSendsAreForcedAtAnySize) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) { ops = CrossedSends(r, OpKind::MpiSsend, 8); });
  std::vector<ForcedOrder> forced;
  Schedule s = LowerTrace(Merge(set), LowerOptions{}, nullptr, &forced);
  EXPECT_EQ(forced.size(), size_t(2 * kIterations));
  EXPECT_TRUE(CheckSchedule(s).empty());
}

// Rank 0 broadcasts (root), then receives rank 1's large send; rank 1 sends
// first and joins the broadcast after. MPI lets the root finish alone, so the
// orders agree; a lowering that waits for every member would be stuck.
TEST_F(TraceSetTest, BroadcastRootFinishesWithoutItsPeers) {
  formats::TraceSet set = Write([](int r, std::vector<OpEvent>& ops) {
    ops.clear();
    int64_t t = kT0;
    for (int it = 0; it < kIterations; ++it) {
      t += 1'000'000;
      OpEvent bcast;
      bcast.kind = OpKind::MpiBcast;
      bcast.comm = 0;
      bcast.bytes = 4096;
      bcast.peer = 0;
      bcast.seq = uint64_t(it);
      OpEvent p2p;
      p2p.comm = 0;
      p2p.bytes = kActivation;  // over both eager limits
      p2p.tag = it;
      p2p.kind = r == 0 ? OpKind::MpiRecv : OpKind::MpiSend;
      p2p.peer = r == 0 ? 1 : 0;
      bcast.enter_ns = t + (r == 1 ? 300'000 : 0);
      bcast.exit_ns = bcast.enter_ns + 10'000;
      p2p.enter_ns = t + (r == 1 ? 0 : 100'000);
      p2p.exit_ns = t + 200'000;
      if (r == 0) ops.insert(ops.end(), {bcast, p2p});
      else if (r == 1) ops.insert(ops.end(), {p2p, bcast});
      else ops.push_back(bcast);
      t += 400'000;
    }
  });
  MergedTrace m = Merge(set);
  ASSERT_TRUE(m.problems.empty()) << m.problems.front();
  std::vector<std::string> notes;
  std::vector<ForcedOrder> forced;
  Schedule s = LowerTrace(m, LowerOptions{}, &notes, &forced);
  EXPECT_TRUE(forced.empty()) << notes.back();
  ASSERT_TRUE(CheckSchedule(s).empty());
  // Rank 0's receive comes after its broadcast, rank 1's broadcast after its send.
  for (int r = 0; r < 2; ++r) {
    const RankSchedule& rs = s.ranks[size_t(r)];
    uint32_t bcast = kNoOp, p2p = kNoOp;
    for (uint32_t i = 0; i < rs.steps.size(); ++i) {
      const Step& st = rs.steps[i];
      if (st.type == StepType::kCompute) continue;
      auto& first = s.ops[st.op()].source == ScheduleOp::Source::kCollective ? bcast : p2p;
      if (first == kNoOp) first = i;
    }
    ASSERT_NE(bcast, kNoOp);
    ASSERT_NE(p2p, kNoOp);
    if (r == 0) EXPECT_TRUE(DependsOn(rs, p2p, bcast));
    else EXPECT_TRUE(DependsOn(rs, bcast, p2p));
  }
}

TEST(Iterations, PeriodWithSetupPrefixAndTrailingOps) {
  std::vector<uint64_t> sig = {9};
  for (int i = 0; i < 10; ++i)
    for (uint64_t x : {1, 1, 2, 3}) sig.push_back(x);
  sig.push_back(8);
  IterationPattern p = DetectIterations(sig);
  EXPECT_EQ(p.period, 4u);
  EXPECT_EQ(p.prefix, 1u);
  EXPECT_EQ(DetectIterations({1, 2, 3, 4, 5}).period, 0u);
}

}  // namespace
}  // namespace dltrace::models
