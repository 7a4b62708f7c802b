#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace compare`: the recorded run and replayed (and, when this dltrace
has it, simulated) runs of one job side by side. --algos runs the job under
parameter server, ring, tree and step-wise reduce over real loopback TCP and
prints one table; rows match by op and iteration, bytes agree across runs,
differences are against the first run, bus bandwidth follows nccl-tests; a
run of another job is refused."""
import csv
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from views_fixtures import run, sample_trace, synth  # noqa: E402

ALGOS = ["ps", "ring", "tree", "stepwise"]


class CompareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-compare-")
        # Two 4 MB all-reduces per iteration on 4 ranks (one per host): the
        # replays and the ns-3 runs below take seconds, not minutes.
        cls.set = sample_trace(os.path.join(cls.tmp, "set"), iterations=3)
        cls.algos_dir = os.path.join(cls.tmp, "algos")
        cls.table = run("compare", "--algos", ",".join(ALGOS), cls.set, "--with", "replay", "-o", cls.algos_dir,
                        "--", "--iterations", "2")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def test_algos_with_replay_prints_one_table(self):
        p = self.table
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        for algo in ALGOS:
            self.assertTrue(any(l.startswith("replay:" + algo + " ") for l in lines), algo)
            self.assertTrue(os.path.exists(os.path.join(self.algos_dir, algo, "rank0.results.json")))
            self.assertIn("replaying " + algo, p.stderr)
        self.assertIn("per op kind", p.stdout)
        self.assertIn("per iteration", p.stdout)
        header = next(l for l in lines if l.startswith("iteration"))
        self.assertEqual(header.split()[1:], ["recorded"] + ["replay:" + a for a in ALGOS])
        # --iterations 2 passed through: two iteration rows, in every run.
        self.assertEqual(len([l for l in lines if l[:1].isdigit()]), 2)

    def test_json_rows_match_by_op_and_agree_on_bytes(self):
        dirs = [os.path.join(self.algos_dir, a) for a in ALGOS]
        p = run("compare", self.set, *dirs, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([r["label"] for r in doc["runs"]], ["recorded"] + ["replay:" + a for a in ALGOS])
        self.assertEqual(doc["runs"][0]["diff_percent"], 0)
        kinds = [k for k in doc["kinds"] if k["kind"] == "ncclAllReduce"]
        self.assertEqual(len(kinds), 5)
        self.assertEqual(len({(k["ops"], k["bytes"]) for k in kinds}), 1, "every run moved the same ops")
        base = kinds[0]
        for k in kinds:
            self.assertGreater(k["time_ms"], 0)
            # nccl-tests: busbw = bytes / time * 2(n-1)/n for all-reduce on 4 ranks.
            self.assertAlmostEqual(k["busbw_gbps"], k["bytes"] / (k["time_ms"] * 1e6) * 1.5, delta=k["busbw_gbps"] * 1e-6)
            self.assertAlmostEqual(k["diff_percent"], (k["time_ms"] - base["time_ms"]) / base["time_ms"] * 100, places=3)
        iterations = {}
        for row in doc["iterations"]:
            iterations.setdefault(row["run"], []).append(row["time_ms"])
        for r in doc["runs"]:
            self.assertEqual(iterations[r["label"]], r["iteration_ms"])
            self.assertEqual(len(r["iteration_ms"]), 2)

    def test_csv_for_scripts(self):
        p = run("compare", os.path.join(self.algos_dir, "ring"), self.set, "--csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertEqual({r["section"] for r in rows}, {"setup", "kind", "iteration", "summary"})
        # A replay's connections are up before it starts: no set-up of its own.
        setup = {r["run"]: float(r["time_ms"]) for r in rows if r["section"] == "setup"}
        self.assertEqual(setup["replay:ring"], 0)
        self.assertGreaterEqual(setup["recorded"], 0)
        ring = [r for r in rows if r["run"] == "replay:ring" and r["section"] != "setup"]
        self.assertTrue(ring and all(float(r["diff_percent"]) == 0 for r in ring), "the first RUN is the baseline")

    def test_runs_of_another_job_are_refused(self):
        other = synth(self.out("other"), ranks=4, per_host=1, iterations=3, model="resnet152")
        p = run("compare", other, os.path.join(self.algos_dir, "ring"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a run of the same job", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_a_torn_recorded_run_is_compared_but_marked_incomplete(self):
        torn = self.out("torn")
        shutil.copytree(self.set, torn)
        path = os.path.join(torn, "rank2.dltrace")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) * 2 // 3])
        p = run("compare", torn, os.path.join(self.algos_dir, "ring"))
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertRegex(p.stdout, r"recorded\s+recorded\s+recorded\s+NO")
        self.assertIn("truncated", p.stderr)

    def test_bad_arguments(self):
        self.assertEqual(run("compare").returncode, 2)
        self.assertEqual(run("compare", "--algos", "ring", self.set).returncode, 2)  # no --with
        self.assertEqual(run("compare", "--algos", "nosuch", self.set, "--with", "replay").returncode, 2)
        p = run("compare", self.out("missing"))
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        # An existing algorithm directory is never overwritten.
        p = run("compare", "--algos", "ring", self.set, "--with", "replay", "-o", self.algos_dir)
        self.assertEqual(p.returncode, 1)
        self.assertIn("never overwritten", p.stderr)

    def test_algos_with_simulate(self):
        probe = run("simulate", "--help")
        if probe.returncode != 0:
            reason = "dltrace simulate is not in this build (its --help exited %d)" % probe.returncode
            print("skipped: " + reason)
            self.skipTest(reason)
        out = self.out("sim")
        p = run("compare", "--algos", "ring,ps", self.set, "--with", "simulate", "-o", out, "--json", timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([r["source"] for r in doc["runs"]], ["recorded", "ns3", "ns3"])
        self.assertEqual([r["algorithm"] for r in doc["runs"]], ["recorded", "ring", "ps"])
        for r in doc["runs"]:
            self.assertTrue(r["complete"])
            self.assertTrue(all(t > 0 for t in r["iteration_ms"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
