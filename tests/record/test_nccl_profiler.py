#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The NCCL profiler plugin end to end against the test double of libnccl
(tests/nccl/fake_nccl.cc loads NCCL_PROFILER_PLUGIN and makes NCCL 2.28's
plugin calls; tests/nccl/profiler_versions.cc makes NCCL 2.23-2.25's): 4
ranks started as torchrun starts them, with NCCL linked in statically (no
libnccl.so for the interposer to see) and dynamically. The recorded
operations, their algorithm, protocol and channels, the communicators and
the NCCL settings are checked against what the program and the double say
they did; the nccl lowering says it used the recorded choice."""
import os
import subprocess
import unittest

from record_fixtures import DLTRACE, ScratchTestCase, dump, expected_lines, rank_files, record_launched

BIN = os.environ["DLTRACE_NCCL_TEST_BIN"]  # build/tests/nccl
STATIC = os.path.join(BIN, "dltrace-nccl-all-calls-static")
DYNAMIC = os.path.join(BIN, "dltrace-nccl-all-calls")
SIZES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float16": 2,
         "float32": 4, "float64": 8, "bfloat16": 2, "float8_e4m3": 1, "float8_e5m2": 1}
# What the double reports NCCL chose (fake_nccl.cc, Choose): Tree/LL for
# all-reduces of up to 4 KiB per rank, Ring/LL for other collectives up to
# 4 KiB, Ring/Simple above; one channel up to 4 KiB, two above.
PROFILED = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
            "ncclSend", "ncclRecv"}


def fake_choice(kind, count, datatype):
    per_rank = count * SIZES[datatype]
    small = per_rank <= 4096
    algo = "Tree" if small and kind == "ncclAllReduce" else "Ring"
    return algo, "LL" if small else "Simple", 1 if small else 2


def expected_ops(out, rank):
    return [l for l in expected_lines(out, rank) if "kind" in l and l["kind"] in PROFILED]


def record(out, program, mode, extra_env=None):
    env = dict(os.environ, FAKE_NCCL_OP_NS="0", NCCL_BUFFSIZE="8388608")
    env.pop("NCCL_PROFILER_PLUGIN", None)
    env.update(extra_env or {})
    return record_launched(out, program, ["--nccl", mode], env=env)


class NcclProfilerTest(ScratchTestCase):
    def check_plugin_run(self, out, api):
        files = rank_files(out)
        self.assertEqual(files, [f"rank{r}.dltrace" for r in range(4)])
        for rank in range(4):
            rc, recs, err = dump(out, rank)
            self.assertEqual(rc, 0, err)
            header = [r for r in recs if r["type"] == "header"][0]
            self.assertEqual(header["rank"], rank)
            self.assertEqual(header["world_size"], 4)
            self.assertEqual(header["attributes"]["nccl.profiler_api"], api)
            self.assertEqual(header["nccl_env"], {"NCCL_BUFFSIZE": "8388608"})
            comms = {c["id"]: c for c in recs if c["type"] == "comm"}
            ops = sorted((r for r in recs if r["type"] == "op"), key=lambda r: r["enter_ns"])
            want = expected_ops(out, rank)
            self.assertEqual([o["kind"] for o in ops], [e["kind"] for e in want], f"rank {rank}")
            for i, (o, e) in enumerate(zip(ops, want)):
                where = f"rank {rank} op {i} {e['kind']}"
                for field in ("count", "datatype", "bytes"):
                    self.assertEqual(o[field], e[field], where + " " + field)
                if e["peer"] >= 0:
                    self.assertEqual(o["peer"], e["peer"], where + " peer")
                self.assertGreater(comms[o["comm"]]["nccl_unique_id_hash"], 0, where)
                if o["kind"] in ("ncclSend", "ncclRecv"):
                    self.assertNotIn("nccl_algorithm", o, where)
                    continue
                algo, proto, channels = fake_choice(o["kind"], o["count"], o["datatype"])
                self.assertEqual(o["nccl_algorithm"], algo, where)
                self.assertEqual(o["nccl_protocol"], proto, where)
                self.assertEqual(o["nccl_channels"], channels, where)
            footer = [r for r in recs if r["type"] == "footer"][0]
            self.assertEqual(footer["events_dropped"], 0)

        # The rank files merge (communicators by NCCL's hash), and the nccl
        # lowering takes the recorded choice for each collective.
        p = subprocess.run([DLTRACE, "schedule", out, "--algo", "nccl", "--no-steps"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [l for l in p.stdout.splitlines()
                if l.split()[2:3] == ["ncclAllReduce"] and not l.endswith("(one rank)")]
        self.assertTrue(rows)
        for row in rows:
            self.assertRegex(row, r"(Tree|Ring)/(LL|Simple) x[12] \(recorded\)$")

    def test_static_nccl_is_recorded_by_the_plugin(self):
        out = os.path.join(self.tmp, "static")
        p = record(out, STATIC, "auto")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.check_plugin_run(out, "v5")

    def test_profiler_mode_with_the_v4_table(self):
        out = os.path.join(self.tmp, "v4")
        p = record(out, DYNAMIC, "profiler", {"FAKE_NCCL_PROFILER_API": "4"})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.check_plugin_run(out, "v4")

    def test_older_tables_v1_to_v3_record_the_same_operations(self):
        """NCCL 2.23-2.25's tables (numbers in v1, names from v2 on), through
        tests/nccl/profiler_versions.cc: an AllReduce of 1000 float32 (seq 7,
        Ring, LL128, 3 channels) and a Send of 10 float32 to rank 1."""
        for api in ("v1", "v2", "v3"):
            out = os.path.join(self.tmp, api)
            p = subprocess.run([DLTRACE, "record", "--nccl", "profiler", "-o", out, "--",
                                os.path.join(BIN, "dltrace-nccl-profiler-versions"), api],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            rc, recs, err = dump(out, 0)
            self.assertEqual(rc, 0, err)
            header = [r for r in recs if r["type"] == "header"][0]
            self.assertEqual(header["attributes"]["nccl.profiler_api"], api)
            self.assertEqual([c["nccl_unique_id_hash"] for c in recs if c["type"] == "comm"], [0x1234])
            ops = [r for r in recs if r["type"] == "op"]
            self.assertEqual([(o["kind"], o["count"], o["datatype"], o["bytes"], o["peer"]) for o in ops],
                             [("ncclAllReduce", 1000, "float32", 4000, -1), ("ncclSend", 10, "float32", 40, 1)],
                             api)
            self.assertEqual((ops[0]["seq"], ops[0]["nccl_algorithm"], ops[0]["nccl_protocol"],
                              ops[0]["nccl_channels"]), (7, "Ring", "LL128", 3), api)
            self.assertNotIn("nccl_algorithm", ops[1], api)

    def test_auto_leaves_a_shared_libnccl_to_the_interposer(self):
        out = os.path.join(self.tmp, "auto")
        p = record(out, DYNAMIC, "auto")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("ranks 4 of 4", p.stderr)
        for rank in range(4):
            rc, recs, err = dump(out, rank)
            self.assertEqual(rc, 0, err)
            header = [r for r in recs if r["type"] == "header"][0]
            self.assertNotIn("nccl.profiler_api", header["attributes"])
            self.assertEqual(header["nccl_version"], "2.28.9")  # the interposer asks NCCL
            ops = [r for r in recs if r["type"] == "op"]
            self.assertTrue(ops)
            self.assertFalse([o for o in ops if "nccl_algorithm" in o])

    def test_nccl_algo_setting_is_kept_and_reported(self):
        out = os.path.join(self.tmp, "algo")
        p = record(out, STATIC, "profiler", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128"})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rc, recs, err = dump(out, 0)
        header = [r for r in recs if r["type"] == "header"][0]
        self.assertEqual(header["nccl_env"]["NCCL_ALGO"], "Ring")
        self.assertEqual(header["nccl_env"]["NCCL_PROTO"], "LL128")
        colls = [r for r in recs if r["type"] == "op" and r["kind"] not in ("ncclSend", "ncclRecv")]
        self.assertTrue(colls)
        self.assertEqual({(o["nccl_algorithm"], o["nccl_protocol"]) for o in colls}, {("Ring", "LL128")})

    def test_bad_mode_is_a_usage_error(self):
        p = subprocess.run([DLTRACE, "record", "--nccl", "magic", "--", "true"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--nccl", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
