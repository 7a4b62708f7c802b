// SPDX-License-Identifier: GPL-2.0-only
// Trace format: round trips, torn tails, corruption, versions and trace sets,
// tested on files in a temporary directory and on in-memory buffers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "dltrace/formats/crc32c.h"
#include "dltrace/formats/op_kind.h"
#include "dltrace/formats/reader.h"
#include "dltrace/formats/trace_set.h"
#include "dltrace/formats/writer.h"
#include "header_generated.h"
#include "communicators.h"
#include "temp_dir.h"

using namespace dltrace::formats;

namespace {

using dltrace_test::TempDir;

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void Spit(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

Header FullHeader(int rank = 3, int world = 8) {
  Header h;
  h.global_rank = rank;
  h.world_size = world;
  h.local_rank = rank % 4;
  h.host = "gpu-node-17";
  h.pid = 424242;
  h.command_line = {"torchrun", "--nproc_per_node=4", "train.py", "--lr", "0.1 with space"};
  h.start_monotonic_ns = 123456789012345ull;
  h.start_realtime_ns = 1763700000123456789ull;
  h.recorder_version = "0.1.0";
  h.nccl_version = "2.28.9";
  h.mpi_version = "Open MPI v4.1.4";
  h.gpu_device = 2;
  h.gpu_bus_id = "0000:41:00.0";
  h.job_id = "slurm-99";
  h.rank_env = {{"OMPI_COMM_WORLD_RANK", "3"}, {"RANK", "3"}, {"SLURM_PROCID", "3"}};
  h.attributes = {{"note", "extras go here"}};
  return h;
}

Communicator FullComm() {
  Communicator c;
  c.id = 7;
  c.api = Api::Nccl;
  c.name = "tp-group";
  c.size = 4;
  c.rank = 1;
  c.members = {2, 3, 6, 7};
  c.parent = 1;
  c.color = 5;
  c.key = -2;
  c.nccl_unique_id_hash = 0xDEADBEEFCAFEF00Dull;
  c.cuda_device = 3;
  c.bus_id = "0000:81:00.0";
  c.created_ns = 123456789999999ull;
  return c;
}

OpEvent FullOp(int64_t enter, uint64_t seq) {
  OpEvent op;
  op.kind = OpKind::NcclAllReduce;
  op.comm = 7;
  op.count = 6'553'600;
  op.datatype = DataType::BFloat16;
  op.bytes = 13'107'200;
  op.red_op = RedOp::Avg;
  op.peer = -1;
  op.tag = -1;
  op.stream = 0x7ffe12340000ull;
  op.thread = 2;
  op.captured_in_graph = true;
  op.seq = seq;
  op.group = 11;
  op.enter_ns = enter;
  op.exit_ns = enter + 15'000;
  op.gpu_start_ns = enter + 40'000;
  op.gpu_end_ns = enter + 2'040'000;
  return op;
}

// A small file with a header, three chunks and a footer.
std::vector<OpEvent> WriteSmallFile(const std::string& path, std::vector<size_t>* ops_per_chunk) {
  std::string err;
  auto w = TraceWriter::Create(path, FullHeader(), &err);
  EXPECT_TRUE(w) << err;
  std::vector<OpEvent> ops;
  int64_t t = 5'000'000'000;
  for (int chunk = 0; chunk < 3; ++chunk) {
    if (chunk == 0) w->AddCommunicator(FullComm());
    for (int i = 0; i < 3; ++i) {
      OpEvent op = FullOp(t, ops.size());
      t += 1'000'000;
      ops.push_back(op);
      w->AddOp(op);
    }
    w->AddSample({uint64_t(t), 50.5f, 1u << 30, 1, 2, 3, 4});
    EXPECT_TRUE(w->Flush(&err)) << err;
    ops_per_chunk->push_back(3);
  }
  EXPECT_TRUE(w->Close({9, 0, 3, uint64_t(t), 17, "finalize"}, &err)) << err;
  return ops;
}

// WriteSmallFile's file as bytes, with the events it wrote and how many went
// into each chunk.
struct SmallFile {
  std::vector<OpEvent> ops;
  std::vector<size_t> per_chunk;
  std::vector<uint8_t> bytes;
};
SmallFile SmallFileBytes() {
  TempDir dir;
  SmallFile f;
  f.ops = WriteSmallFile(dir.file("r.dltrace"), &f.per_chunk);
  f.bytes = Slurp(dir.file("r.dltrace"));
  return f;
}

// Recomputes the CRC of the frame at `pos` (after the payload was edited).
void FixCrc(std::vector<uint8_t>* bytes, size_t pos) {
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t((*bytes)[pos + i]) << (8 * i);
  uint32_t crc = Crc32c(bytes->data() + pos + 8, len);
  for (int i = 0; i < 4; ++i) (*bytes)[pos + 4 + i] = uint8_t(crc >> (8 * i));
}

// Replaces the header frame of a written file.
std::vector<uint8_t> WithHeaderPayload(const std::vector<uint8_t>& file,
                                       const std::vector<uint8_t>& payload) {
  uint32_t old_len = 0;
  for (int i = 0; i < 4; ++i) old_len |= uint32_t(file[8 + i]) << (8 * i);
  std::vector<uint8_t> out(file.begin(), file.begin() + 8);
  uint32_t len = uint32_t(payload.size());
  uint32_t crc = Crc32c(payload.data(), payload.size());
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(len >> (8 * i)));
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(crc >> (8 * i)));
  out.insert(out.end(), payload.begin(), payload.end());
  out.insert(out.end(), file.begin() + 16 + old_len, file.end());
  return out;
}

}  // namespace

TEST(Crc32c, MatchesKnownVector) {
  // RFC 3720 test vector: 32 bytes of zeros.
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

// RFC 3720 (iSCSI), B.4: the CRC-32C of 32 bytes of 0xFF, of 0..31 and of 31..0,
// with the CPU's instruction (where Crc32c uses it) and without.
TEST(Crc32c, HardwareAndTablesMatchRfc3720) {
  std::vector<uint8_t> ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[size_t(i)] = uint8_t(i);
    down[size_t(i)] = uint8_t(31 - i);
  }
  for (auto* crc : {&Crc32c, &Crc32cPortable}) {
    EXPECT_EQ(crc(ones.data(), 32, 0), 0x62A8AB43u);
    EXPECT_EQ(crc(up.data(), 32, 0), 0x46DD794Eu);
    EXPECT_EQ(crc(down.data(), 32, 0), 0x113FDB5Cu);
  }
}

// Every length and alignment, whole and in two pieces, against the
// polynomial applied bit by bit.
TEST(Crc32c, EveryLengthAndAlignmentMatchesTheBitwiseDefinition) {
  auto bitwise = [](const uint8_t* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
  };
  std::vector<uint8_t> data(300);
  uint32_t x = 12345;
  for (auto& b : data) b = uint8_t((x = x * 1103515245u + 12345u) >> 16);
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t n = 0; offset + n <= 264; ++n) {
      const uint8_t* p = data.data() + offset;
      const uint32_t want = bitwise(p, n);
      ASSERT_EQ(Crc32c(p, n), want) << "offset " << offset << " length " << n;
      ASSERT_EQ(Crc32cPortable(p, n), want) << "offset " << offset << " length " << n;
      ASSERT_EQ(Crc32c(p + n / 3, n - n / 3, Crc32c(p, n / 3)), want);
    }
}

TEST(TraceFormat, RoundTripsEveryField) {
  TempDir dir;
  std::string err;
  Header h = FullHeader();
  h.nccl_env = {{"NCCL_ALGO", "Tree"}, {"NCCL_MAX_NCHANNELS", "4"}};
  auto w = TraceWriter::Create(dir.file("r.dltrace"), h, &err);
  ASSERT_TRUE(w) << err;
  Communicator c = FullComm();
  Communicator mpi = dltrace_test::MpiWorld(8, 3);
  w->AddCommunicator(mpi);
  w->AddCommunicator(c);

  std::vector<OpEvent> ops;
  ops.push_back(FullOp(1'000'000'000, 0));
  OpEvent p2p;  // MPI point-to-point with a completion time, no GPU times
  p2p.kind = OpKind::MpiIsend;
  p2p.comm = 0;
  p2p.count = 3;
  p2p.datatype = DataType::Float64;
  p2p.bytes = 24;
  p2p.peer = 5;
  p2p.tag = 77;
  p2p.seq = 1;
  p2p.enter_ns = 999'000'000;  // earlier than the previous op: negative delta
  p2p.exit_ns = 999'000'100;
  p2p.completion_ns = 999'500'000;
  ops.push_back(p2p);
  OpEvent v;  // alltoallv with per-peer byte counts
  v.kind = OpKind::MpiAlltoallv;
  v.comm = 0;
  v.datatype = DataType::Int32;
  v.peer_send_bytes = {0, 4, 8, 12, 16, 20, 24, 28};
  v.peer_recv_bytes = {28, 24, 20, 16, 12, 8, 4, 0};
  v.bytes = 112;
  v.seq = 2;
  v.enter_ns = 1'200'000'000;
  v.exit_ns = 1'200'000'050;
  ops.push_back(v);
  OpEvent gpu_unknown = FullOp(1'300'000'000, 3);  // GPU timing missing for this one
  gpu_unknown.gpu_start_ns.reset();
  gpu_unknown.gpu_end_ns.reset();
  ops.push_back(gpu_unknown);
  // NCCL's choice from the profiler plugin; the same call with another
  // choice is another shape.
  OpEvent chosen = FullOp(1'400'000'000, 4);
  chosen.nccl_algorithm = NcclAlgorithm::Tree;
  chosen.nccl_protocol = NcclProtocol::LL128;
  chosen.nccl_channels = 24;
  ops.push_back(chosen);
  chosen.seq = 5;
  chosen.nccl_algorithm = NcclAlgorithm::Pat;
  chosen.nccl_protocol = NcclProtocol::Simple;
  chosen.nccl_channels = 2;
  ops.push_back(chosen);
  for (const auto& op : ops) w->AddOp(op);
  w->AddSample({5, 133.25f, 123456789, 10, 20, 30, 40});
  ASSERT_TRUE(w->Flush(&err)) << err;

  // Second chunk: values that need the wide columns.
  OpEvent wide = FullOp(1'400'000'000 + 10'000'000'000ll, 5'000'000'000ull);  // +10 s, big seq
  wide.exit_ns = wide.enter_ns + 6'000'000'000ll;       // 6 s on the host
  wide.gpu_start_ns = wide.enter_ns - 3'000'000'000ll;  // -3 s offset
  wide.gpu_end_ns = *wide.gpu_start_ns + 5'000'000'000ll;
  wide.completion_ns = wide.enter_ns + 7'000'000'000ll;
  ops.push_back(wide);
  w->AddOp(wide);
  OpEvent negative = FullOp(wide.enter_ns + 1, 5'000'000'001ull);  // clock stepped back
  negative.exit_ns = negative.enter_ns - 5;
  negative.gpu_start_ns.reset();
  negative.gpu_end_ns.reset();
  ops.push_back(negative);
  w->AddOp(negative);
  ASSERT_TRUE(w->Flush(&err)) << err;
  Footer f{7, 2, 1, 42, 43, "signal 15"};
  f.unrecorded = {{"MPI_Mrecv", 3}, {"MPI_Put", 1}};
  ASSERT_TRUE(w->Close(f, &err)) << err;

  RankTrace t = ReadTraceFile(dir.file("r.dltrace"));
  ASSERT_EQ(t.status, ReadStatus::kComplete) << t.message;
  EXPECT_EQ(t.header, h);
  ASSERT_EQ(t.communicators.size(), 2u);
  EXPECT_EQ(t.communicators[0], mpi);
  EXPECT_EQ(t.communicators[1], c);
  ASSERT_EQ(t.ops.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(t.ops[i], ops[i]) << "op " << i;
  ASSERT_EQ(t.samples.size(), 1u);
  EXPECT_EQ(t.samples[0], (ResourceSample{5, 133.25f, 123456789, 10, 20, 30, 40}));
  ASSERT_TRUE(t.footer);
  EXPECT_EQ(*t.footer, f);
  EXPECT_EQ(t.chunks, 3u);
}

TEST(TraceFormat, NeverOverwritesAnExistingFile) {
  TempDir dir;
  std::string err;
  ASSERT_TRUE(TraceWriter::Create(dir.file("a.dltrace"), FullHeader(), &err));
  EXPECT_FALSE(TraceWriter::Create(dir.file("a.dltrace"), FullHeader(), &err));
  EXPECT_NE(err.find("File exists"), std::string::npos) << err;
}

TEST(TraceFormat, TruncationAtEveryByteKeepsWholeChunks) {
  auto [ops, per_chunk, bytes] = SmallFileBytes();
  RankTrace whole = ReadTraceBuffer(bytes.data(), bytes.size(), "whole");
  ASSERT_EQ(whole.status, ReadStatus::kComplete) << whole.message;

  // Frame boundaries, to know how many ops each cut must keep.
  std::vector<size_t> ends;  // end offset of header, chunk0, chunk1, ...
  for (size_t pos = 8; pos < bytes.size();) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= uint32_t(bytes[pos + i]) << (8 * i);
    pos += 8 + len;
    ends.push_back(pos);
  }
  ASSERT_EQ(ends.size(), 5u);  // header, 3 chunks, footer chunk

  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    RankTrace t = ReadTraceBuffer(bytes.data(), cut, "cut.dltrace");
    ASSERT_NE(t.status, ReadStatus::kComplete) << "cut at " << cut;
    ASSERT_NE(t.status, ReadStatus::kCorrupt) << "cut at " << cut << ": " << t.message;
    size_t whole_chunks = 0;
    for (size_t i = 1; i < ends.size(); ++i)
      if (ends[i] <= cut) ++whole_chunks;
    size_t expect_ops = 0;
    for (size_t i = 0; i < whole_chunks && i < per_chunk.size(); ++i) expect_ops += per_chunk[i];
    ASSERT_EQ(t.ops.size(), expect_ops) << "cut at " << cut;
    for (size_t i = 0; i < expect_ops; ++i) ASSERT_EQ(t.ops[i], ops[i]);
    if (cut == 0) {
      EXPECT_EQ(t.status, ReadStatus::kNotATrace);
    } else if (cut < ends[0]) {
      EXPECT_EQ(t.status, ReadStatus::kTruncated) << cut;
      EXPECT_FALSE(t.usable());
    } else if (std::find(ends.begin(), ends.end(), cut) != ends.end()) {
      EXPECT_EQ(t.status, ReadStatus::kNoFooter) << cut;
      EXPECT_NE(t.message.find("no footer"), std::string::npos);
    } else {
      EXPECT_EQ(t.status, ReadStatus::kTruncated) << cut;
      EXPECT_NE(t.message.find("truncated at byte " + std::to_string(cut)), std::string::npos)
          << t.message;
    }
    EXPECT_EQ(t.message.rfind("cut.dltrace: ", 0), 0u) << t.message;
  }
}

TEST(TraceFormat, FlippedBytesAreReportedWithFileAndOffset) {
  [[maybe_unused]] const auto [ops, per_chunk, bytes] = SmallFileBytes();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80)}) {
      auto bad = bytes;
      bad[i] ^= mask;
      RankTrace t = ReadTraceBuffer(bad.data(), bad.size(), "bad.dltrace");
      ASSERT_NE(t.status, ReadStatus::kComplete) << "flip at " << i;
      EXPECT_EQ(t.message.rfind("bad.dltrace: ", 0), 0u) << t.message;
      EXPECT_TRUE(t.message.find("byte") != std::string::npos ||
                  t.message.find("magic") != std::string::npos)
          << t.message;
    }
  }
  // A flip inside the footer chunk is a checksum mismatch at that frame;
  // nothing valid follows it, so the chunks before it are what is left.
  auto bad = bytes;
  bad[bad.size() - 20] ^= 0x10;
  RankTrace t = ReadTraceBuffer(bad.data(), bad.size(), "bad.dltrace");
  EXPECT_EQ(t.status, ReadStatus::kDamaged);
  EXPECT_NE(t.message.find("checksum mismatch"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("no valid chunk after it"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("no footer"), std::string::npos) << t.message;
  EXPECT_EQ(t.ops.size(), 9u);  // every chunk before the footer was kept
  EXPECT_FALSE(t.footer);
}

TEST(TraceFormat, CorruptChunkWithValidChecksumIsCaughtByVerifier) {
  [[maybe_unused]] auto [ops, per_chunk, bytes] = SmallFileBytes();
  uint32_t hlen = 0;
  for (int i = 0; i < 4; ++i) hlen |= uint32_t(bytes[8 + i]) << (8 * i);
  size_t chunk0 = 16 + hlen;
  // Point the root offset of chunk 0 far outside its buffer, keep the CRC valid.
  bytes[chunk0 + 8] = 0xF0;
  bytes[chunk0 + 9] = 0xFF;
  FixCrc(&bytes, chunk0);
  RankTrace t = ReadTraceBuffer(bytes.data(), bytes.size(), "v.dltrace");
  EXPECT_EQ(t.status, ReadStatus::kDamaged);
  EXPECT_NE(t.message.find("malformed"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("at byte " + std::to_string(chunk0)), std::string::npos) << t.message;
  // Skipped, and the reader went on: chunks 1 and 2 and the footer remain.
  EXPECT_EQ(t.ops.size(), 6u);
  ASSERT_TRUE(t.footer);
  ASSERT_EQ(t.skipped.size(), 1u);
  EXPECT_EQ(t.skipped[0].events_lost, 3);
}

namespace {

// [start, end) of every frame after the magic: the header, then each chunk.
std::vector<std::pair<size_t, size_t>> Frames(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t pos = 8; pos + 8 <= bytes.size();) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= uint32_t(bytes[pos + i]) << (8 * i);
    out.push_back({pos, pos + 8 + len});
    pos += 8 + len;
  }
  return out;
}

}  // namespace

// LevelDB's log reader skips a bad record and reads on; so does ours. A
// flipped byte anywhere in a chunk frame (length, checksum or payload) loses
// that chunk and nothing else, and says which bytes and events went.
TEST(Resync, AFlipInAnyChunkLosesThatChunkOnly) {
  const auto [ops, per_chunk, bytes] = SmallFileBytes();
  auto frames = Frames(bytes);
  ASSERT_EQ(frames.size(), 5u);  // header, 3 chunks, footer chunk
  size_t checked = 0;
  for (size_t f = 1; f < frames.size(); ++f) {
    for (size_t i = frames[f].first; i < frames[f].second; ++i) {
      auto bad = bytes;
      bad[i] ^= 0x40;
      RankTrace t = ReadTraceBuffer(bad.data(), bad.size(), "bad.dltrace");
      bool footer_chunk = f == frames.size() - 1;
      if (footer_chunk && i < frames[f].first + 4 && t.status == ReadStatus::kTruncated) {
        // The last frame's length grown past the end of the file cannot be
        // told from a torn write: read as one, keeping every chunk before.
        EXPECT_EQ(t.ops, ops);
        continue;
      }
      ASSERT_EQ(t.status, ReadStatus::kDamaged) << "flip at " << i << ": " << t.message;
      ASSERT_EQ(t.skipped.size(), 1u) << t.message;
      const SkippedBytes& k = t.skipped[0];
      EXPECT_EQ(k.begin, frames[f].first) << t.message;
      EXPECT_EQ(k.first_chunk, f - 1) << t.message;
      std::vector<OpEvent> expect;
      for (size_t c = 0; c < per_chunk.size(); ++c)
        if (c != f - 1)
          expect.insert(expect.end(), ops.begin() + long(3 * c), ops.begin() + long(3 * c + 3));
      ASSERT_EQ(t.ops, expect) << "flip at " << i;
      EXPECT_EQ(bool(t.footer), !footer_chunk) << "flip at " << i;
      if (!footer_chunk) {
        EXPECT_EQ(k.end, frames[f].second) << t.message;
        EXPECT_EQ(k.chunks_lost, 1) << t.message;
        EXPECT_EQ(k.events_lost, 3) << t.message;
        EXPECT_NE(t.message.find("1 chunk, 3 events lost"), std::string::npos) << t.message;
      } else {
        EXPECT_EQ(k.end, bytes.size());
        EXPECT_EQ(k.chunks_lost, -1);
      }
      EXPECT_EQ(t.message.rfind("bad.dltrace: corrupt chunk " + std::to_string(f - 1) +
                                    " at byte " + std::to_string(frames[f].first),
                                0),
                0u)
          << t.message;
      ++checked;
    }
  }
  std::printf("flipped %zu bytes one at a time: each lost exactly its own chunk\n", checked);
}

// A length field damaged into "runs past the end" looks like a torn tail;
// the valid chunk after it shows that it is not.
TEST(Resync, DamagedLengthIsNotMistakenForATornTail) {
  [[maybe_unused]] auto [ops, per_chunk, bytes] = SmallFileBytes();
  auto frames = Frames(bytes);
  bytes[frames[2].first + 2] = 0x7F;  // chunk 1: length ~8 MB, past the end
  RankTrace t = ReadTraceBuffer(bytes.data(), bytes.size(), "len.dltrace");
  ASSERT_EQ(t.status, ReadStatus::kDamaged) << t.message;
  EXPECT_EQ(t.ops.size(), 6u);
  EXPECT_TRUE(t.footer);
  EXPECT_NE(t.message.find("runs past the end"), std::string::npos) << t.message;
}

// Several chunks destroyed at once (a zeroed block): one skipped range
// counting all of them, and the events from the next chunk's count. Here the
// two lost chunks are the first two: the only ones that held the file's
// operation shape (chunk 0 defines it, chunk 1 repeats it), so the events of
// chunk 2 cannot be told apart from any other shape and are dropped too, and
// counted: a chunk that starts a new dictionary would bring them back (next test).
TEST(Resync, AZeroedRunOfChunksIsOneLoss) {
  [[maybe_unused]] auto [ops, per_chunk, bytes] = SmallFileBytes();
  auto frames = Frames(bytes);
  std::fill(bytes.begin() + long(frames[1].first) + 5, bytes.begin() + long(frames[2].second) - 3, 0);
  RankTrace t = ReadTraceBuffer(bytes.data(), bytes.size(), "zero.dltrace");
  ASSERT_EQ(t.status, ReadStatus::kDamaged) << t.message;
  ASSERT_EQ(t.skipped.size(), 1u);
  EXPECT_EQ(t.skipped[0].chunks_lost, 2);
  EXPECT_EQ(t.skipped[0].events_lost, 6);
  EXPECT_EQ(t.skipped[0].events_unresolved, 3);
  EXPECT_EQ(t.skipped[0].end, frames[3].first);
  EXPECT_TRUE(t.ops.empty());
  EXPECT_TRUE(t.footer);
  EXPECT_NE(t.message.find("2 chunks, 6 events lost"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("3 later events dropped: their operation shapes were defined in the lost bytes"),
            std::string::npos)
      << t.message;
}

namespace {

// `chunks` chunks of 3 events each; with `new_shape_per_chunk` every chunk
// brings a shape of its own (a count no earlier op had) besides the shared one.
std::vector<OpEvent> WriteChunks(const std::string& path, int chunks, bool new_shape_per_chunk) {
  std::string err;
  auto w = TraceWriter::Create(path, FullHeader(), &err);
  EXPECT_TRUE(w) << err;
  std::vector<OpEvent> ops;
  int64_t t = 5'000'000'000;
  w->AddCommunicator(FullComm());
  for (int c = 0; c < chunks; ++c) {
    for (int i = 0; i < 3; ++i) {
      OpEvent op = FullOp(t, ops.size());
      if (new_shape_per_chunk && i == 1) op.count = 1000 + uint64_t(c);
      t += 1'000'000 + 37 * i;
      ops.push_back(op);
      w->AddOp(op);
    }
    EXPECT_TRUE(w->Flush(&err)) << err;
  }
  EXPECT_TRUE(w->Close({ops.size(), 0, 0, uint64_t(t), 17, "finalize"}, &err)) << err;
  return ops;
}

}  // namespace

// Chunks carry only the shapes new in them, and the next chunk repeats
// those: a flip anywhere in one chunk, even one that defined a shape the
// later chunks use, loses that chunk's events and nothing else.
TEST(Resync, LosingTheChunkThatDefinedAShapeLosesOnlyThatChunk) {
  TempDir dir;
  auto ops = WriteChunks(dir.file("r.dltrace"), 6, /*new_shape_per_chunk=*/true);
  const auto bytes = Slurp(dir.file("r.dltrace"));
  auto frames = Frames(bytes);
  ASSERT_EQ(frames.size(), 8u);  // header, 6 chunks, footer chunk
  for (size_t f = 1; f + 1 < frames.size(); ++f) {
    for (size_t i = frames[f].first; i < frames[f].second; i += 3) {
      auto bad = bytes;
      bad[i] ^= 0x21;
      RankTrace t = ReadTraceBuffer(bad.data(), bad.size(), "bad.dltrace");
      ASSERT_EQ(t.status, ReadStatus::kDamaged) << "flip at " << i << ": " << t.message;
      ASSERT_EQ(t.skipped.size(), 1u) << t.message;
      EXPECT_EQ(t.skipped[0].events_lost, 3) << t.message;
      EXPECT_EQ(t.skipped[0].events_unresolved, 0) << t.message;
      std::vector<OpEvent> expect = ops;
      expect.erase(expect.begin() + long(3 * (f - 1)), expect.begin() + long(3 * f));
      ASSERT_EQ(t.ops, expect) << "flip at " << i << " in chunk " << f - 1;
      ASSERT_EQ(t.communicators.size(), 1u) << "flip at " << i;
      EXPECT_EQ(t.communicators[0], FullComm());
    }
  }
}

// When every chunk that held a shape is lost, the events that use it are
// dropped (and counted) until a chunk starts a new dictionary, which the
// writer does once the file has grown by 32 times the dictionary's bytes;
// every event from there on reads back.
TEST(Resync, ANewDictionaryBringsBackEventsWhoseShapesWereLost) {
  TempDir dir;
  const int chunks = 400;
  auto ops = WriteChunks(dir.file("r.dltrace"), chunks, /*new_shape_per_chunk=*/false);
  auto bytes = Slurp(dir.file("r.dltrace"));
  auto frames = Frames(bytes);
  ASSERT_EQ(frames.size(), size_t(chunks) + 2);
  std::fill(bytes.begin() + long(frames[1].first), bytes.begin() + long(frames[2].second), 0);
  RankTrace t = ReadTraceBuffer(bytes.data(), bytes.size(), "dict.dltrace");
  ASSERT_EQ(t.status, ReadStatus::kDamaged) << t.message;
  ASSERT_EQ(t.skipped.size(), 1u);
  const SkippedBytes& k = t.skipped[0];
  EXPECT_EQ(k.events_lost, 6);
  ASSERT_GT(k.events_unresolved, 0);
  EXPECT_EQ(k.events_unresolved % 3, 0);  // whole chunks, up to the new dictionary
  // What reads back is exactly the tail of the file after those chunks.
  ASSERT_EQ(6 + size_t(k.events_unresolved) + t.ops.size(), ops.size());
  std::vector<OpEvent> tail(ops.end() - long(t.ops.size()), ops.end());
  EXPECT_EQ(t.ops, tail);
  ASSERT_EQ(t.communicators.size(), 1u);  // repeated by the new dictionary
  // The dictionary (one shape, one communicator: a few hundred bytes) came
  // back within 32 times its size: well inside the first half of this file.
  uint64_t recovered_at = frames[2 + size_t(k.events_unresolved) / 3 + 1].first;
  EXPECT_LT(recovered_at, bytes.size() / 2) << recovered_at;
  std::printf("lost the dictionary's two chunks: %lld later events dropped, back at byte %llu of %zu\n",
              (long long)k.events_unresolved, (unsigned long long)recovered_at, bytes.size());
}

// Bytes that are no trace at all never pass for a chunk: random data with
// the marker planted every 64 bytes still yields no frame.
TEST(Resync, GarbageWithPlantedMarkersIsNeverTakenForAChunk) {
  [[maybe_unused]] auto [ops, per_chunk, bytes] = SmallFileBytes();
  auto frames = Frames(bytes);
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(frames[1].second));
  uint64_t x = 88172645463325252ull;  // xorshift64
  for (int i = 0; i < 1 << 20; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    cut.push_back(uint8_t(x));
    if (i % 64 == 12) {
      for (char ch : {'D', 'L', 'T', 'C'}) cut.push_back(uint8_t(ch));
      i += 4;
    }
  }
  RankTrace t = ReadTraceBuffer(cut.data(), cut.size(), "garbage.dltrace");
  ASSERT_EQ(t.status, ReadStatus::kDamaged) << t.message;
  EXPECT_EQ(t.ops.size(), 3u);
  ASSERT_EQ(t.skipped.size(), 1u);
  EXPECT_EQ(t.skipped[0].end, cut.size());
}

TEST(TraceFormat, WrongIdentifierIsNotATrace) {
  auto bytes = SmallFileBytes().bytes;
  // Bad magic.
  auto bad = bytes;
  bad[1] = 'X';
  RankTrace t = ReadTraceBuffer(bad.data(), bad.size(), "m.dltrace");
  EXPECT_EQ(t.status, ReadStatus::kNotATrace);
  EXPECT_NE(t.message.find("not a dltrace trace"), std::string::npos);
  // Right magic, but the first frame carries a chunk identifier, not a header.
  bad = bytes;
  bad[16 + 4] = 'D';
  bad[16 + 5] = 'L';
  bad[16 + 6] = 'T';
  bad[16 + 7] = 'C';
  FixCrc(&bad, 8);
  t = ReadTraceBuffer(bad.data(), bad.size(), "id.dltrace");
  EXPECT_EQ(t.status, ReadStatus::kNotATrace);
  EXPECT_NE(t.message.find("no header frame"), std::string::npos) << t.message;
  // Plain text.
  std::string text = "rank,op,bytes\n0,allreduce,4\n";
  t = ReadTraceBuffer(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "x.csv");
  EXPECT_EQ(t.status, ReadStatus::kNotATrace);
}

TEST(TraceFormat, FutureSchemaVersionAsksForAnUpgrade) {
  TempDir dir;
  std::vector<size_t> per_chunk;
  WriteSmallFile(dir.file("r.dltrace"), &per_chunk);
  Header future = FullHeader();
  future.schema_version = kSchemaVersion + 1;
  auto bytes = WithHeaderPayload(Slurp(dir.file("r.dltrace")), EncodeHeader(future));
  RankTrace t = ReadTraceBuffer(bytes.data(), bytes.size(), "f.dltrace");
  EXPECT_EQ(t.status, ReadStatus::kUnsupportedVersion);
  EXPECT_NE(t.message.find("schema version " + std::to_string(kSchemaVersion + 1)),
            std::string::npos)
      << t.message;
  EXPECT_NE(t.message.find("upgrade dltrace"), std::string::npos);
}

// A version-1 file written by the writer before version 2 existed (main at
// a28f998: WriteSmallFile's content, committed as tests/formats/data) reads
// back whole; so does one the writer writes in version 1 on request.
TEST(Versions, Version1FilesStillRead) {
  TempDir dir;
  std::vector<size_t> per_chunk;
  auto ops = WriteSmallFile(dir.file("v2.dltrace"), &per_chunk);
  RankTrace v2 = ReadTraceFile(dir.file("v2.dltrace"));
  ASSERT_EQ(v2.status, ReadStatus::kComplete) << v2.message;
  EXPECT_EQ(v2.header.schema_version, 2u);

  RankTrace old = ReadTraceFile(std::string(DLTRACE_TEST_DATA) + "/v1-small.dltrace");
  ASSERT_EQ(old.status, ReadStatus::kComplete) << old.message;
  EXPECT_EQ(old.header.schema_version, 1u);
  Header h = FullHeader();
  h.schema_version = 1;
  EXPECT_EQ(old.header, h);
  EXPECT_EQ(old.ops, ops);
  ASSERT_EQ(old.communicators.size(), 1u);
  EXPECT_EQ(old.communicators[0], FullComm());
  EXPECT_EQ(old.samples, v2.samples);
  ASSERT_TRUE(old.footer);
  EXPECT_EQ(*old.footer, *v2.footer);

  // The writer's version-1 layout, byte for byte the old writer's.
  std::string err;
  auto w = TraceWriter::Create(dir.file("v1.dltrace"), FullHeader(), &err, /*schema_version=*/1);
  ASSERT_TRUE(w) << err;
  int64_t t = 5'000'000'000;
  for (int chunk = 0; chunk < 3; ++chunk) {
    if (chunk == 0) w->AddCommunicator(FullComm());
    for (int i = 0; i < 3; ++i, t += 1'000'000) w->AddOp(FullOp(t, 3 * chunk + i));
    w->AddSample({uint64_t(t), 50.5f, 1u << 30, 1, 2, 3, 4});
    ASSERT_TRUE(w->Flush(&err)) << err;
  }
  ASSERT_TRUE(w->Close({9, 0, 3, uint64_t(t), 17, "finalize"}, &err)) << err;
  EXPECT_EQ(Slurp(dir.file("v1.dltrace")), Slurp(std::string(DLTRACE_TEST_DATA) + "/v1-small.dltrace"));
  EXPECT_LT(Slurp(dir.file("v2.dltrace")).size(), Slurp(dir.file("v1.dltrace")).size());

  // A version the writer does not know is refused in one line.
  EXPECT_FALSE(TraceWriter::Create(dir.file("v9.dltrace"), FullHeader(), &err, 9));
  EXPECT_NE(err.find("cannot write trace schema version 9"), std::string::npos) << err;
}

// A version-2 file whose chunks take every column form: a loop of one MPI
// call (consecutive sequence numbers, no optional time, deltas of one,
// two and more varint bytes, some through RepeatOpRoom); then gaps in the
// sequence, groups, GPU and completion times on some ops only; then on all.
void WriteMixedV2File(const std::string& path) {
  std::string err;
  auto w = TraceWriter::Create(path, FullHeader(), &err);
  ASSERT_TRUE(w) << err;
  w->AddCommunicator(FullComm());
  OpEvent mpi;
  mpi.kind = OpKind::MpiAllreduce;
  mpi.comm = 7;
  mpi.count = 2;
  mpi.datatype = DataType::Float32;
  mpi.bytes = 8;
  mpi.red_op = RedOp::Sum;
  int64_t t = 5'000'000'000;
  const int64_t steps[] = {90, 300, 20'000, 3'000'000'000};  // 1, 2, 3 and 5 varint bytes
  for (uint64_t i = 0; i < 40; ++i, t += steps[i % 4]) {
    mpi.seq = i;
    mpi.enter_ns = t;
    mpi.exit_ns = t + steps[(i + 1) % 4] / 3;
    w->AddOp(mpi);
  }
  size_t n = 10;
  OpTimes* room = w->RepeatOpRoom(&n);
  ASSERT_EQ(n, 10u);
  for (uint64_t i = 0; i < n; ++i, t += steps[i % 4]) {
    room[i] = OpTimes{};
    room[i].seq = 40 + i;
    room[i].enter_ns = t;
    room[i].exit_ns = t + 100;
  }
  w->AddedRepeatOps(n);
  ASSERT_TRUE(w->Flush(&err)) << err;
  for (uint64_t i = 0; i < 30; ++i, t += 1'000'000) {
    OpEvent op = FullOp(t, 3 * i + i % 2);
    op.count = i % 3;  // three shapes
    op.group = i % 4 == 0 ? 0 : uint32_t(i);
    if (i % 3 == 0) op.gpu_start_ns = op.gpu_end_ns = std::nullopt;
    if (i % 5 == 0) op.completion_ns = t + 7'000 * int64_t(i);
    w->AddOp(op);
  }
  ASSERT_TRUE(w->Flush(&err)) << err;
  for (uint64_t i = 0; i < 20; ++i, t += 1'000'000) {
    OpEvent op = FullOp(t, 200 + i);
    op.completion_ns = t + 50'000;
    w->AddOp(op);
  }
  w->AddSample({uint64_t(t), 50.5f, 1u << 30, 1, 2, 3, 4});
  ASSERT_TRUE(w->Close({100, 0, 1, uint64_t(t), 17, "finalize"}, &err)) << err;
}

TEST(TraceFormat, Version2BytesAreTheFirstVersion2WritersByteForByte) {
  // data/v2-mixed.dltrace was written by the version-2 writer before its
  // columns were encoded in one pass (main at 8de02dd): the layout is
  // unchanged, whatever the writer's path to it.
  TempDir dir;
  WriteMixedV2File(dir.file("v2.dltrace"));
  RankTrace t = ReadTraceFile(dir.file("v2.dltrace"));
  ASSERT_EQ(t.status, ReadStatus::kComplete) << t.message;
  EXPECT_EQ(t.ops.size(), 100u);
  EXPECT_EQ(Slurp(dir.file("v2.dltrace")),
            Slurp(std::string(DLTRACE_TEST_DATA) + "/v2-mixed.dltrace"));
}

TEST(TraceFormat, ManyOpsSplitIntoChunksAutomatically) {
  TempDir dir;
  std::string err;
  auto w = TraceWriter::Create(dir.file("big.dltrace"), FullHeader(), &err);
  ASSERT_TRUE(w);
  const size_t n = 3 * TraceWriter::kMaxShapesPerChunk + 5;
  for (size_t i = 0; i < n; ++i) {
    OpEvent op = FullOp(int64_t(i) * 1000, i);
    op.count = i;  // every op a distinct shape
    w->AddOp(op);
  }
  ASSERT_TRUE(w->Close({n, 0, 0, 0, 0, "exit"}, &err)) << err;
  RankTrace t = ReadTraceFile(dir.file("big.dltrace"));
  ASSERT_EQ(t.status, ReadStatus::kComplete) << t.message;
  ASSERT_EQ(t.ops.size(), n);
  EXPECT_EQ(t.ops.back().count, n - 1);
  EXPECT_GE(t.chunks, 4u);
}

TEST(TraceSetTest, LoadsRanksInOrderAndReportsAMissingRank) {
  TempDir dir;
  std::string err;
  for (int r : {3, 0, 1}) {  // rank 2 of 4 missing
    auto w = TraceWriter::Create(dir.file("rank" + std::to_string(r) + ".dltrace"),
                                 FullHeader(r, 4), &err);
    ASSERT_TRUE(w) << err;
    w->AddOp(FullOp(1000, 0));
    ASSERT_TRUE(w->Close({1, 0, 0, 0, 0, "finalize"}, &err));
  }
  TraceSet set;
  ASSERT_TRUE(LoadTraceSet(dir.path(), &set, &err)) << err;
  ASSERT_EQ(set.ranks.size(), 3u);
  EXPECT_EQ(set.ranks[0].header.global_rank, 0);
  EXPECT_EQ(set.ranks[2].header.global_rank, 3);
  EXPECT_EQ(set.world_size, 4);
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("missing 1 of 4 ranks (2)"), std::string::npos)
      << set.warnings[0];
  // rank() finds each by its number, past the gap too, and nothing else.
  for (int32_t r : {0, 1, 3}) {
    ASSERT_NE(set.rank(r), nullptr) << r;
    EXPECT_EQ(set.rank(r)->header.global_rank, r);
  }
  for (int32_t r : {-1, 2, 4}) EXPECT_EQ(set.rank(r), nullptr) << r;
}

TEST(TraceSetTest, TwoFilesClaimingOneRankIsAnError) {
  TempDir dir;
  std::string err;
  for (const char* name : {"a.dltrace", "b.dltrace"}) {
    auto w = TraceWriter::Create(dir.file(name), FullHeader(0, 2), &err);
    ASSERT_TRUE(w->Close({}, &err));
  }
  TraceSet set;
  EXPECT_FALSE(LoadTraceSet(dir.path(), &set, &err));
  EXPECT_NE(err.find("rank 0 already recorded"), std::string::npos) << err;
}

TEST(TraceSetTest, TruncatedFileIsAWarningNotAnError) {
  TempDir dir;
  std::vector<size_t> per_chunk;
  WriteSmallFile(dir.file("r.dltrace"), &per_chunk);
  auto bytes = Slurp(dir.file("r.dltrace"));
  bytes.resize(bytes.size() - 7);
  Spit(dir.file("r.dltrace"), bytes);
  TraceSet set;
  std::string err;
  ASSERT_TRUE(LoadTraceSet(dir.file("r.dltrace"), &set, &err)) << err;
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("truncated"), std::string::npos);
  EXPECT_EQ(set.ranks[0].ops.size(), 9u);
}

// A write the kernel refuses (here EFBIG past RLIMIT_FSIZE, as a full disk
// gives ENOSPC) stops the writer: the file keeps its whole chunks, the torn
// one is cut off, later operations are counted, and the footer says so.
TEST(WriteFailure, FileStaysWholeAndFooterCountsWhatWasLost) {
  TempDir dir;
  std::string path = dir.file("r.dltrace");
  std::string err;
  auto w = TraceWriter::Create(path, FullHeader(), &err);
  ASSERT_TRUE(w) << err;
  std::vector<OpEvent> kept;
  for (int i = 0; i < 3; ++i) {
    kept.push_back(FullOp(1'000'000 * (i + 1), uint64_t(i)));
    w->AddOp(kept.back());
  }
  ASSERT_TRUE(w->Flush(&err)) << err;
  const uint64_t good = w->bytes_written();

  struct rlimit old {};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = good + 2048;  // room for the footer, not for 20,000 ops
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  for (int i = 0; i < 20000; ++i) {
    OpEvent op = FullOp(1'000'000'000 + 1000 * i, uint64_t(3 + i));
    op.bytes = uint64_t(i);  // a new shape each: a chunk far above the limit
    w->AddOp(op);
  }
  EXPECT_FALSE(w->Flush(&err));
  EXPECT_TRUE(w->failed());
  EXPECT_NE(err.find("write failed: File too large"), std::string::npos) << err;
  EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
  for (int i = 0; i < 7; ++i) w->AddOp(FullOp(2'000'000'000 + i, 0));  // counted, not kept
  EXPECT_EQ(w->ops_lost(), 20007u);
  Footer f{3, 5, 0, 99, 100, "finalize"};
  EXPECT_FALSE(w->Close(f, &err));
  EXPECT_TRUE(w->footer_written());
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);

  RankTrace t = ReadTraceFile(path);
  ASSERT_EQ(t.status, ReadStatus::kComplete) << t.message;
  EXPECT_EQ(t.ops, kept);
  ASSERT_TRUE(t.footer);
  EXPECT_EQ(t.footer->events_written, 3u);
  EXPECT_EQ(t.footer->events_dropped, 5u + 20007u);
  EXPECT_NE(t.footer->write_error.find("File too large"), std::string::npos);
  std::printf("write failed after %llu bytes: %llu events kept, %llu lost, footer: %s\n",
              (unsigned long long)good, (unsigned long long)t.footer->events_written,
              (unsigned long long)(t.footer->events_dropped - 5), t.footer->write_error.c_str());
  // The set says which rank stopped early and why.
  TraceSet set;
  ASSERT_TRUE(LoadTraceSet(path, &set, &err)) << err;
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("stopped recording early"), std::string::npos) << set.warnings[0];
}

TEST(TraceSetTest, DamagedFileIsAWarningNotAnError) {
  TempDir dir;
  std::vector<size_t> per_chunk;
  WriteSmallFile(dir.file("r.dltrace"), &per_chunk);
  auto bytes = Slurp(dir.file("r.dltrace"));
  bytes[Frames(bytes)[2].first + 30] ^= 0xFF;  // inside chunk 1
  Spit(dir.file("r.dltrace"), bytes);
  TraceSet set;
  std::string err;
  ASSERT_TRUE(LoadTraceSet(dir.file("r.dltrace"), &set, &err)) << err;
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("corrupt chunk 1"), std::string::npos) << set.warnings[0];
  EXPECT_EQ(set.ranks[0].ops.size(), 6u);
}

TEST(TraceSetTest, EmptyDirectoryAndMissingPathAreErrors) {
  TempDir dir;
  TraceSet set;
  std::string err;
  EXPECT_FALSE(LoadTraceSet(dir.path(), &set, &err));
  EXPECT_NE(err.find("no .dltrace files"), std::string::npos) << err;
  EXPECT_FALSE(LoadTraceSet(dir.file("nope"), &set, &err));
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
}

TEST(OpKinds, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOf(OpKind::NcclAllReduce), 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOf(OpKind::MpiAllgather), 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOf(OpKind::NcclReduceScatter), 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOf(OpKind::NcclBroadcast), 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOf(OpKind::MpiBarrier), 16), 0.0);
  EXPECT_TRUE(IsPointToPoint(OpKind::MpiIsend));
  EXPECT_TRUE(IsCollective(OpKind::MpiIallreduce));
  EXPECT_TRUE(IsNonblocking(OpKind::MpiIallreduce));
  EXPECT_FALSE(IsNonblocking(OpKind::MpiAllreduce));
  EXPECT_STREQ(OpKindName(OpKind::MpiReduceScatterBlock), "MPI_Reduce_scatter_block");
}
