// SPDX-License-Identifier: GPL-2.0-only
// What the flusher and the recovery share (a buffered record as an
// OpEvent), and the recovery of a raw file a killed process left.
#include "raw_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "dltrace/formats/reader.h"
#include "dltrace/formats/writer.h"

namespace dltrace::record {

int64_t TickScale::Earlier(int64_t t) const {
  // The last line that starts at or before T (the oldest for a time before all).
  const Recorder::TickLine* end = earlier + n_earlier;
  const Recorder::TickLine* l = std::upper_bound(
      earlier, end, t, [](int64_t v, const Recorder::TickLine& x) { return v < x.ticks; });
  return (l == earlier ? earlier : l - 1)->ToNs(t);
}

formats::OpEvent ExpandRecord(const OpRecord& c, uint32_t thread, const TickScale& scale) {
  formats::OpEvent op;
  op.kind = c.kind;
  op.datatype = c.datatype;
  op.red_op = c.red_op;
  op.captured_in_graph = c.flags & OpRecord::kCapturedInGraph;
  op.comm = c.comm;
  op.peer = c.peer;
  op.tag = c.tag;
  op.nccl_algorithm = c.nccl_algorithm;
  op.nccl_protocol = c.nccl_protocol;
  op.nccl_channels = c.nccl_channels;
  op.count = c.count;
  op.bytes = c.bytes;
  op.stream = c.stream;
  op.thread = thread;
  formats::OpTimes t{};
  PutTimes(c, scale, &t);
  op.seq = t.seq;
  op.group = t.group;
  op.enter_ns = t.enter_ns;
  op.exit_ns = t.exit_ns;
  if (t.has & formats::OpTimes::kGpuTimes) {
    op.gpu_start_ns = t.gpu_start_ns;
    op.gpu_end_ns = t.gpu_end_ns;
  }
  if (t.has & formats::OpTimes::kCompletion) op.completion_ns = t.completion_ns;
  return op;
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

namespace {

// A file descriptor and a read-only mapping, released on every path.
struct MappedFile {
  int fd = -1;
  const uint8_t* data = nullptr;
  size_t size = 0;
  ~MappedFile() {
    if (data) ::munmap(const_cast<uint8_t*>(data), size);
    if (fd >= 0) ::close(fd);
  }
};

// Ticks to ns for records the dead process never converted: its last line
// up to the last tick it converted, then on from there to a reading taken
// now, where this is the same boot (the same host, the same TSC); elsewhere
// at the rate it measured.
std::vector<Recorder::TickLine> RecoveryLines(const RawHeader& h) {
  const Recorder::TickLine last{h.line_ticks, h.line_ns, h.line_mult};
  const Recorder::TickPoint from{h.last_ticks, h.last_ns};
  if (h.boot_id[0] && BootId() == h.boot_id) {
    const int64_t t0 = NowTicks(true);
    const int64_t ns = NowNs();
    const int64_t t1 = NowTicks(true);
    const Recorder::TickPoint now{t0 + (t1 - t0) / 2, ns};
    if (now.ticks > from.ticks && now.ns > from.ns)
      return {last, Recorder::TickLine::Through(from, now)};
  }
  double rate = h.ns_per_tick;
  if (from.ns - h.start_ns > 100'000'000 && from.ticks > h.start_ticks)
    rate = double(from.ns - h.start_ns) / double(from.ticks - h.start_ticks);
  if (!(rate > 0)) rate = 1;
  const int64_t span = 1'000'000'000;
  return {last, Recorder::TickLine::Through(from, {from.ticks + span, from.ns + int64_t(double(span) * rate)})};
}

}  // namespace

bool RecoverRawFile(const std::string& raw_path, std::string* error, std::string* note,
                    uint64_t* recovered) {
  auto fail = [&](const std::string& why) {
    *error = raw_path + ": " + why;
    return false;
  };
  MappedFile raw;
  raw.fd = ::open(raw_path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (raw.fd < 0 || ::fstat(raw.fd, &st) != 0) return fail(std::strerror(errno));
  raw.size = size_t(st.st_size);
  if (raw.size < sizeof(RawHeader)) {
    if (raw.size >= sizeof(kRawMagic) && raw.size > 0) {
      char magic[sizeof(kRawMagic)];
      if (::pread(raw.fd, magic, sizeof(magic), 0) == ssize_t(sizeof(magic)) &&
          std::memcmp(magic, kRawMagic, sizeof(magic)) == 0)
        return fail("truncated raw file: " + std::to_string(raw.size) +
                    " bytes, shorter than its header (" + std::to_string(sizeof(RawHeader)) + ")");
    }
    return fail("not a dltrace raw file");
  }
  void* mem = ::mmap(nullptr, raw.size, PROT_READ, MAP_SHARED, raw.fd, 0);
  if (mem == MAP_FAILED) return fail(std::string("cannot map: ") + std::strerror(errno));
  raw.data = static_cast<const uint8_t*>(mem);
  const auto& h = *reinterpret_cast<const RawHeader*>(raw.data);
  if (std::memcmp(h.magic, kRawMagic, sizeof(kRawMagic)) != 0)
    return fail("not a dltrace raw file");
  if (h.version != kRawVersion)
    return fail("raw file version " + std::to_string(h.version) + ", this dltrace reads " +
                std::to_string(kRawVersion));
  const uint64_t blocks = h.blocks.load();
  const uint32_t threads = std::min(h.threads.load(), kRawThreads);
  if (h.header_bytes != kRawHeaderBytes || h.record_bytes != sizeof(BufferedOp) ||
      h.block_events == 0 ||
      h.block_bytes < offsetof(Recorder::Block, events) + uint64_t(h.block_events) * sizeof(BufferedOp) ||
      h.block_bytes % 4096 != 0 || blocks > (uint64_t(1) << 40) / h.block_bytes)
    return fail("corrupt raw header");
  const uint64_t need = kRawHeaderBytes + blocks * h.block_bytes;
  if (raw.size < need)
    return fail("truncated raw file: its header counts " + std::to_string(blocks) + " blocks (" +
                std::to_string(need) + " bytes), the file has " + std::to_string(raw.size) +
                " bytes");
  const uint32_t flags = h.flags.load();
  if (!(flags & RawHeader::kStarted))
    return fail("process " + std::to_string(h.pid) +
                " ended before recording started: nothing to recover");
  if (flags & RawHeader::kWriterFailed)
    return fail("the recording had stopped writing its trace (a write failed; its footer "
                "or stderr says why): nothing to recover");
  const std::string trace_path(h.trace_path, strnlen(h.trace_path, sizeof(h.trace_path)));

  formats::RankTrace trace = formats::ReadTraceFile(trace_path);
  if (!trace.usable()) return fail("its trace " + trace.message);
  if (trace.status == formats::ReadStatus::kComplete)
    return fail("its trace " + trace_path + " is complete (it has a footer): nothing to recover");
  // The ops the trace holds, as the writer counted them (a damaged chunk's too).
  uint64_t have = trace.ops.size();
  for (const auto& s : trace.skipped)
    if (s.events_lost > 0) have += uint64_t(s.events_lost);

  // Each thread's first event the trace does not hold (RawMark).
  std::vector<uint64_t> from(threads);
  for (uint32_t s = 0; s < threads; ++s) {
    const RawThread& t = h.thread[s];
    const RawMark& m = t.mark[t.current & 1];
    const uint64_t span = m.end_seq == ~uint64_t(0) ? ~uint64_t(0) : m.end_seq - m.base_seq;
    const uint64_t in = have > m.base_ops ? std::min(have - m.base_ops, span) : 0;
    from[s] = m.base_seq + in;
  }
  // Every published event past that, in each thread's order.
  struct Found {
    uint32_t slot;
    uint64_t seq;
    const BufferedOp* e;
  };
  std::vector<Found> found;
  for (uint64_t k = 0; k < blocks; ++k) {
    const auto* blk =
        reinterpret_cast<const Recorder::Block*>(raw.data + kRawHeaderBytes + k * h.block_bytes);
    if (blk->slot >= threads) continue;
    const uint32_t n = std::min(blk->count.load(), h.block_events);
    for (uint32_t i = 0; i < n; ++i)
      if (blk->first + i >= from[blk->slot]) found.push_back({blk->slot, blk->first + i, &blk->events[i]});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.slot != b.slot ? a.slot < b.slot : a.seq < b.seq;
  });

  const std::string tmp = trace_path + ".recovering";
  ::unlink(tmp.c_str());  // what an interrupted recovery left
  std::string err;
  auto writer = formats::TraceWriter::Create(tmp, trace.header, &err);
  if (!writer) return fail(err);
  for (const auto& c : trace.communicators) writer->AddCommunicator(c);
  for (const auto& op : trace.ops) writer->AddOp(op);
  for (const auto& s : trace.samples) writer->AddSample(s);
  const std::vector<Recorder::TickLine> lines = RecoveryLines(h);
  const TickScale scale(lines);
  uint64_t without_peer_bytes = 0, gaps = 0, added = 0;
  int64_t end_ns = 0;
  for (const auto& op : trace.ops) end_ns = std::max(end_ns, op.exit_ns);
  for (size_t i = 0; i < found.size(); ++i) {
    const Found& f = found[i];
    if (i > 0 && found[i - 1].slot == f.slot && found[i - 1].seq == f.seq) continue;
    const uint64_t expect = (i > 0 && found[i - 1].slot == f.slot) ? found[i - 1].seq + 1 : from[f.slot];
    if (f.seq != expect) gaps += f.seq - expect;
    // Per-peer byte counts lived in the dead process's heap.
    if (f.e->extras) ++without_peer_bytes;
    formats::OpEvent op = ExpandRecord(f.e->op, h.thread[f.slot].index, scale);
    end_ns = std::max(end_ns, op.exit_ns);
    writer->AddOp(op);
    ++added;
  }
  formats::Footer footer;
  footer.events_written = trace.ops.size() + added;
  footer.events_dropped = gaps;
  footer.samples_written = trace.samples.size();
  footer.end_monotonic_ns = uint64_t(std::max<int64_t>(end_ns, 0));
  footer.reason = "killed (recovered from its raw file)";
  if (!writer->Close(footer, &err)) {
    ::unlink(tmp.c_str());
    return fail(err);
  }
  if (::rename(tmp.c_str(), trace_path.c_str()) != 0) {
    err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail("cannot replace " + trace_path + ": " + err);
  }
  ::unlink(raw_path.c_str());
  note->clear();
  if (without_peer_bytes)
    *note += std::to_string(without_peer_bytes) +
             " recovered v-form calls without their per-peer byte counts; ";
  if (gaps)
    *note += std::to_string(gaps) + " events missing from the raw file (counted as dropped); ";
  if (flags & RawHeader::kSomeBlocksAnonymous)
    *note += "some blocks were in memory, not in the raw file (their events are lost); ";
  if (!trace.skipped.empty() || trace.status == formats::ReadStatus::kTruncated)
    *note += "the trace had a damaged or torn chunk, read past as its reader does; ";
  *recovered = added;
  return true;
}

}  // namespace dltrace::record
