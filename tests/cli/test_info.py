#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace info` on generated trace sets, checked field by field (text and JSON),
and its errors: missing path, not a trace, truncated file, missing rank."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")

RANKS, HOSTS, ITERS, BUCKETS, BUCKET_BYTES = 4, 2, 10, 4, 25 << 20


def run(*args):
    return subprocess.run([DLTRACE, *args], capture_output=True, text=True, timeout=60)


class InfoTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dltrace-info-")
        self.set = os.path.join(self.tmp, "set")
        subprocess.run([SAMPLE, "-o", self.set, "--ranks", str(RANKS), "--hosts", str(HOSTS),
                        "--iterations", str(ITERS), "--buckets", str(BUCKETS)],
                       check=True, capture_output=True)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_json_fields(self):
        p = run("info", self.set, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["world_size"], RANKS)
        self.assertEqual(j["ranks_found"], RANKS)
        self.assertTrue(j["complete"])
        self.assertEqual(j["warnings"], [])
        self.assertEqual(j["nccl_version"], "2.28.9")
        self.assertEqual(j["mpi_version"], "Open MPI v4.1.4")
        self.assertEqual(j["hosts"], [{"name": "node0", "ranks": [0, 1]},
                                      {"name": "node1", "ranks": [2, 3]}])
        # Per rank: 1 bcast + ITERS*(BUCKETS all-reduce + send + recv) + barrier.
        per_rank_ops = 1 + ITERS * (BUCKETS + 2) + 1
        self.assertEqual(j["events"], RANKS * per_rank_ops)
        self.assertEqual(j["samples"], RANKS * ITERS)
        self.assertEqual(j["events_dropped"], 0)
        per_rank_bytes = (1 << 20) + ITERS * (BUCKETS * BUCKET_BYTES + 2 * (1 << 20))
        self.assertEqual(j["bytes"], RANKS * per_rank_bytes)
        kinds = {k["kind"]: k for k in j["op_kinds"]}
        self.assertEqual(set(kinds), {"ncclAllReduce", "MPI_Send", "MPI_Recv", "MPI_Bcast",
                                      "MPI_Barrier"})
        ar = kinds["ncclAllReduce"]
        self.assertEqual(ar["calls"], RANKS * ITERS * BUCKETS)
        self.assertEqual(ar["bytes"], RANKS * ITERS * BUCKETS * BUCKET_BYTES)
        # Each all-reduce runs 10 ms on the GPU (not the 20 us host enqueue).
        self.assertAlmostEqual(ar["time_s"], RANKS * ITERS * BUCKETS * 0.010, places=6)
        algbw = BUCKET_BYTES / 0.010 / 1e9
        self.assertAlmostEqual(ar["algbw_gbps"], algbw, places=6)
        self.assertAlmostEqual(ar["busbw_gbps"], algbw * 2 * (RANKS - 1) / RANKS, places=6)
        self.assertIsNone(kinds["MPI_Barrier"]["algbw_gbps"])
        self.assertEqual(kinds["MPI_Send"]["calls"], RANKS * ITERS)
        comms = {c["name"]: c for c in j["communicators"]}
        self.assertEqual(set(comms), {"MPI_COMM_WORLD", "nccl-dp"})
        self.assertEqual(comms["MPI_COMM_WORLD"]["members"], list(range(RANKS)))
        self.assertEqual(comms["MPI_COMM_WORLD"]["api"], "MPI")
        self.assertEqual(comms["nccl-dp"]["api"], "NCCL")
        self.assertEqual(comms["nccl-dp"]["nccl_unique_id_hash"], "0x5eed5eed12345678")
        self.assertEqual(comms["nccl-dp"]["ops"], RANKS * ITERS * BUCKETS)
        ranks = j["ranks"]
        self.assertEqual([r["rank"] for r in ranks], list(range(RANKS)))
        self.assertEqual([r["host"] for r in ranks], ["node0", "node0", "node1", "node1"])
        self.assertEqual([r["local_rank"] for r in ranks], [0, 1, 0, 1])
        self.assertEqual([r["pid"] for r in ranks], [1000, 1001, 1002, 1003])
        self.assertTrue(all(r["ops"] == per_rank_ops for r in ranks))
        self.assertTrue(all(r["bytes"] == per_rank_bytes for r in ranks))
        self.assertTrue(all(r["status"] == "complete" for r in ranks))
        self.assertGreater(j["time_span_s"], ITERS * 0.07)

    def test_text_fields(self):
        p = run("info", self.set)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        self.assertIn("ranks       4 of 4\n", out)
        self.assertIn("hosts       2: node0 (ranks 0,1), node1 (ranks 2,3)", out)
        self.assertIn("NCCL: 2.28.9", out)
        lines = {l.split()[0]: l.split() for l in out.splitlines() if l.startswith("  ")}
        ar = lines["ncclAllReduce"]
        self.assertEqual(int(ar[1]), RANKS * ITERS * BUCKETS)
        self.assertEqual(int(ar[2]), RANKS * ITERS * BUCKETS * BUCKET_BYTES)
        self.assertAlmostEqual(float(ar[4]), BUCKET_BYTES / 0.010 / 1e9, places=2)
        self.assertAlmostEqual(float(ar[5]), BUCKET_BYTES / 0.010 / 1e9 * 1.5, places=2)
        self.assertEqual(lines["MPI_Barrier"][4], "-")
        world = [l for l in out.splitlines() if "MPI_COMM_WORLD" in l][0].split()
        self.assertEqual(world[1:5], ["MPI", "MPI_COMM_WORLD", "4", "0-3"])
        rank_rows = [l.split() for l in out.splitlines() if l.startswith("  ") and
                     l.split()[0].isdigit() and len(l.split()) == 9]
        self.assertEqual([r[0] for r in rank_rows], ["0", "1", "2", "3"])
        self.assertEqual(rank_rows[2][1], "node1")
        self.assertEqual(rank_rows[0][8], "complete")

    def test_single_file(self):
        p = run("info", os.path.join(self.set, "rank1.dltrace"), "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["ranks_found"], 1)
        self.assertEqual(j["ranks"][0]["rank"], 1)

    def test_missing_path_is_one_error_line(self):
        p = run("info", os.path.join(self.tmp, "nope"))
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("No such file or directory", p.stderr)

    def test_not_a_trace(self):
        bogus = os.path.join(self.tmp, "bogus.dltrace")
        with open(bogus, "w") as f:
            f.write("hello, not a trace\n")
        p = run("info", bogus)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.strip(),
                         f"dltrace: error: {bogus}: not a dltrace trace (bad magic)")

    def test_truncated_file_prints_what_it_holds(self):
        f = os.path.join(self.set, "rank2.dltrace")
        size = os.path.getsize(f)
        os.truncate(f, size - 100)
        p = run("info", self.set, "--json")
        self.assertEqual(p.returncode, 3, p.stderr)
        j = json.loads(p.stdout)
        self.assertFalse(j["complete"])
        r2 = j["ranks"][2]
        self.assertEqual(r2["status"], "truncated")
        self.assertGreater(r2["ops"], 0)
        self.assertIn("rank2.dltrace: truncated at byte %d" % (size - 100), p.stderr)
        self.assertIn("dltrace: warning:", p.stderr)

    def test_missing_rank_is_reported(self):
        os.unlink(os.path.join(self.set, "rank3.dltrace"))
        p = run("info", self.set)
        self.assertEqual(p.returncode, 3)
        self.assertIn("ranks       3 of 4 (incomplete", p.stdout)
        self.assertIn("missing 1 of 4 ranks (3)", p.stderr)

    def test_bad_arguments(self):
        p = run("info")
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing PATH", p.stderr)
        p = run("info", self.set, "--bogus")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option --bogus", p.stderr)
        p = run("frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown command", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
