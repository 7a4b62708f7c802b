#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace convert`: every exporter read back by a real reader. Chrome JSON
through a JSON parser (one process per rank, one thread per communicator or
stream with no overlapping events, microseconds, args); CSV one row per op;
GOAL parsed back (counts, bytes, every `requires` names an earlier label,
sends and receives pair up); Chakra through protobuf (python3-protobuf with
code protoc generates from views/proto), checking node types, comm sizes,
src/dst/tag and dependencies. Both a synthetic NCCL trace set and a real
MPI training run recorded under mpirun."""
import collections
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import google.protobuf  # noqa: F401
except ImportError:
    # CMake may have picked a Python without Debian's python3-protobuf; the system one has it.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from views_fixtures import op_count, record_all_calls, record_training, run, synth  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def parse_goal(path):
    """GOAL text -> (num_ranks, {rank: [(label, op, bytes, peer, tag)]}, {rank: [(a, b)]})."""
    num_ranks, ranks, deps, current = None, {}, {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("//"):
                continue
            m = re.fullmatch(r"num_ranks (\d+)", line)
            if m:
                num_ranks = int(m.group(1))
                continue
            m = re.fullmatch(r"rank (\d+) \{", line)
            if m:
                current = int(m.group(1))
                ranks[current], deps[current] = [], []
                continue
            if line == "}":
                current = None
                continue
            assert current is not None, "step outside a rank block: " + line
            m = re.fullmatch(r"(l\d+): (send|recv) (\d+)b (to|from) (\d+) tag (\d+)", line)
            if m:
                ranks[current].append((m.group(1), m.group(2), int(m.group(3)), int(m.group(5)), int(m.group(6))))
                continue
            m = re.fullmatch(r"(l\d+): calc (\d+)", line)
            if m:
                ranks[current].append((m.group(1), "calc", int(m.group(2)), -1, -1))
                continue
            m = re.fullmatch(r"(l\d+) requires (l\d+)", line)
            assert m, "not GOAL: " + line
            deps[current].append((m.group(1), m.group(2)))
    return num_ranks, ranks, deps


def chakra_module(tmp):
    subprocess.run(["protoc", "-I" + os.path.join(ROOT, "views", "proto"), "--python_out=" + tmp,
                    os.path.join(ROOT, "views", "proto", "chakra_et.proto")], check=True)
    sys.path.insert(0, tmp)
    import chakra_et_pb2
    return chakra_et_pb2


def read_chakra(pb, path):
    """A Chakra .et file: varint-length-prefixed GlobalMetadata, then Nodes."""
    from google.protobuf.internal.decoder import _DecodeVarint32
    with open(path, "rb") as f:
        data = f.read()
    pos, records = 0, []
    while pos < len(data):
        n, pos = _DecodeVarint32(data, pos)
        records.append(data[pos:pos + n])
        pos += n
    assert pos == len(data), path + ": a record runs past the end"
    meta = pb.GlobalMetadata()
    meta.ParseFromString(records[0])
    nodes = []
    for raw in records[1:]:
        node = pb.Node()
        node.ParseFromString(raw)
        nodes.append(node)
    return meta, nodes


def attrs(node):
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr}


class ConvertTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-convert-")
        cls.synth = synth(os.path.join(cls.tmp, "synth"), ranks=4, per_host=2, iterations=2)
        cls.recorded, cls.why_not = record_training(os.path.join(cls.tmp, "train"))
        cls.sets = [cls.synth] + ([cls.recorded] if cls.recorded else [])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def convert(self, path, to, out, *extra):
        p = run("convert", path, "--to", to, "-o", out, *extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def rows(self, path, name):
        self.convert(path, "csv", self.out(name))
        return read_csv(self.out(name))

    def test_real_recorded_run_is_available(self):
        if not self.recorded:
            self.skipTest(self.why_not)
        self.assertGreater(op_count(self.recorded), 100)

    def test_chrome_trace_one_process_per_rank_and_no_overlap_per_thread(self):
        for k, path in enumerate(self.sets):
            out = self.out("trace%d.json" % k)
            p = self.convert(path, "chrome", out)
            self.assertIn("ui.perfetto.dev", p.stdout)
            with open(out) as f:
                doc = json.load(f)
            events = doc["traceEvents"]
            procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
            self.assertEqual(sorted(procs), [0, 1, 2, 3])
            rows = self.rows(path, "ops%d.csv" % k)
            hosts = {int(r["rank"]): r["host"] for r in rows}
            for pid, name in procs.items():
                self.assertEqual(name, "rank %d (%s)" % (pid, hosts[pid]))
            threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                       if e["ph"] == "M" and e["name"] == "thread_name"}
            spans = [e for e in events if e["ph"] == "X"]
            self.assertEqual(len(spans), op_count(path))
            by_thread = collections.defaultdict(list)
            for e in spans:
                self.assertIn((e["pid"], e["tid"]), threads)
                by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
                self.assertGreaterEqual(e["dur"], 0)
                for key in ("bytes", "seq", "op"):
                    self.assertIn(key, e["args"])
            for key, intervals in by_thread.items():
                intervals.sort()
                for a, b in zip(intervals, intervals[1:]):
                    self.assertLessEqual(a[1], b[0] + 1e-3, "overlap on %s (%s)" % (key, threads[key]))
            # Microseconds: each event's dur is the CSV's duration_ns / 1000.
            csv_dur = {(int(r["rank"]), int(r["op"])): int(r["duration_ns"]) for r in rows}
            for e in spans:
                self.assertAlmostEqual(e["dur"], csv_dur[(e["pid"], e["args"]["op"])] / 1000, delta=0.002)
            names = set(threads.values())
            if path == self.synth:
                self.assertTrue(any(n.startswith("stream 0x") for n in names), names)
                self.assertTrue(all(e["args"].get("timed_on") == "gpu" for e in spans))
            else:
                self.assertTrue(any(n.startswith("comm ") for n in names), names)
                bcasts = [e for e in spans if e["name"] == "MPI_Bcast"]
                self.assertTrue(bcasts and all("root_world" in e["args"] for e in bcasts))
                counters = {e["name"] for e in events if e["ph"] == "C"}
                self.assertTrue({"cpu %", "memory MB"} <= counters, counters)

    def test_csv_one_row_per_operation(self):
        for k, path in enumerate(self.sets):
            out = self.out("rows%d.csv" % k)
            self.convert(path, "csv", out)
            rows = read_csv(out)
            self.assertEqual(len(rows), op_count(path))
            for r in rows:
                self.assertLessEqual(int(r["start_ns"]), int(r["end_ns"]))
            allreduce = [r for r in rows if r["collective"] == "all-reduce"]
            self.assertTrue(allreduce)
            self.assertTrue(all(r["comm_size"] == "4" and r["iteration"] != "" for r in allreduce))

    def check_goal(self, out, ranks):
        num_ranks, steps, deps = parse_goal(out)
        self.assertEqual(num_ranks, ranks)
        self.assertEqual(sorted(steps), list(range(ranks)))
        sends, recvs = collections.Counter(), collections.Counter()
        for r, items in steps.items():
            labels = [s[0] for s in items]
            self.assertEqual(len(labels), len(set(labels)), "labels repeat on rank %d" % r)
            order = {l: i for i, l in enumerate(labels)}
            for a, b in deps[r]:
                self.assertIn(a, order, "rank %d: %s requires an undefined label" % (r, a))
                self.assertIn(b, order, "rank %d: %s requires undefined %s" % (r, a, b))
                self.assertLess(order[b], order[a])
            for label, kind, size, peer, tag in items:
                if kind == "send":
                    sends[(r, peer, tag, size)] += 1
                elif kind == "recv":
                    recvs[(peer, r, tag, size)] += 1
        self.assertEqual(sends, recvs, "every send has its receive (same pair, tag, bytes)")
        return steps

    def test_goal_of_the_lowered_schedule_parses_back(self):
        out = self.out("ring.goal")
        p = self.convert(self.synth, "goal", out, "--algo", "ring")
        steps = self.check_goal(out, 4)
        # Ring all-reduce: each rank sends 2(n-1)/n of every bucket.
        rows = self.rows(self.synth, "b.csv")
        bucket_bytes = sum(int(r["bytes"]) for r in rows if r["rank"] == "0")
        for r in range(4):
            sent = sum(s[2] for s in steps[r] if s[1] == "send")
            self.assertAlmostEqual(sent, 2 * 3 / 4 * bucket_bytes, delta=64 * 4)
        self.assertIn("%d steps" % sum(len(v) for v in steps.values()), p.stdout)
        # Parameter servers are endpoints of their own.
        self.convert(self.synth, "goal", self.out("ps.goal"), "--algo", "ps", "--servers", "2")
        self.check_goal(self.out("ps.goal"), 6)
        if self.recorded:
            self.convert(self.recorded, "goal", self.out("train.goal"))
            self.check_goal(self.out("train.goal"), 4)

    def test_chakra_reads_back_with_protobuf(self):
        pb = chakra_module(self.tmp)
        for k, path in enumerate(self.sets):
            prefix = self.out("chakra%d" % k)
            self.convert(path, "chakra", prefix)
            rows = self.rows(path, "c%d.csv" % k)
            with open(prefix + ".comm_groups.json") as f:
                groups = json.load(f)
            for rank in range(4):
                meta, nodes = read_chakra(pb, "%s.%d.et" % (prefix, rank))
                self.assertTrue(meta.version)
                ids = set()
                for n in nodes:
                    for d in n.data_deps:
                        self.assertIn(d, ids, "node %d depends on a later or missing node" % n.id)
                    ids.add(n.id)
                    a = attrs(n)
                    self.assertIs(a["is_cpu_op"], False)
                colls = [n for n in nodes if n.type == pb.COMM_COLL_NODE]
                mine = [r for r in rows if int(r["rank"]) == rank and r["collective"] in ("all-reduce", "broadcast")]
                self.assertEqual(len(colls), len(mine), "one COMM_COLL node per collective call")
                for n, r in zip(colls, mine):
                    a = attrs(n)
                    want = {"all-reduce": pb.ALL_REDUCE, "broadcast": pb.BROADCAST}[r["collective"]]
                    self.assertEqual(a["comm_type"], want)
                    self.assertEqual(a["comm_size"], int(r["bytes"]))
                    self.assertIn(rank, groups[a["pg_name"]])
                self.assertTrue(any(n.type == pb.COMP_NODE for n in nodes))

    def test_chakra_point_to_point_and_scan_become_send_recv_nodes(self):
        # A real MPI run with Send/Recv, Sendrecv and Scan (which Chakra has no
        # collective type for): their steps become COMM_SEND/RECV nodes that pair up.
        pb = chakra_module(self.tmp)
        path, why = record_all_calls(self.out("allcalls"), self.out("allcalls-scratch"))
        if not path:
            self.skipTest(why)
        prefix = self.out("p2p")
        self.convert(path, "chakra", prefix)
        sends, recvs = collections.Counter(), collections.Counter()
        kinds = collections.Counter()
        for rank in range(4):
            _, nodes = read_chakra(pb, "%s.%d.et" % (prefix, rank))
            for n in nodes:
                a = attrs(n)
                kinds[n.type] += 1
                if n.type == pb.COMM_SEND_NODE:
                    self.assertEqual(a["comm_src"], rank)
                    sends[(a["comm_src"], a["comm_dst"], a["comm_tag"], a["comm_size"])] += 1
                elif n.type == pb.COMM_RECV_NODE:
                    self.assertEqual(a["comm_dst"], rank)
                    recvs[(a["comm_src"], a["comm_dst"], a["comm_tag"], a["comm_size"])] += 1
        self.assertGreater(len(sends), 10)
        self.assertEqual(sends, recvs, "every COMM_SEND node has its COMM_RECV (src, dst, tag, size)")
        self.assertGreater(kinds[pb.COMM_COLL_NODE], 10)
        self.assertIn(80, {k[3] for k in sends}, "the 10-double MPI_Send")

    def test_bad_input_one_line_error_and_nothing_left(self):
        p = run("convert", self.out("missing"), "--to", "chrome", "-o", self.out("x.json"))
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertFalse(os.path.exists(self.out("x.json")))
        p = run("convert", self.synth, "--to", "svg", "-o", self.out("x"))
        self.assertEqual(p.returncode, 2)
        p = run("convert", self.synth, "--to", "chrome")
        self.assertEqual(p.returncode, 2)
        p = run("convert", self.synth, "--to", "chrome", "--algo", "ring", "-o", self.out("y.json"))
        self.assertEqual(p.returncode, 2)
        p = run("convert", self.synth, "--to", "csv", "-o", self.out("no/such/dir/ops.csv"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("no/such/dir", p.stderr)
        bad = self.out("corrupt")
        os.makedirs(bad)
        with open(os.path.join(bad, "rank0.dltrace"), "wb") as f:
            f.write(b"not a trace at all" * 10)
        p = run("convert", bad, "--to", "chakra", "-o", self.out("corrupt-et"))
        self.assertEqual(p.returncode, 1)
        self.assertEqual(glob.glob(self.out("corrupt-et*")), [])
        self.assertEqual(glob.glob(os.path.join(self.tmp, "*.tmp.*")), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
