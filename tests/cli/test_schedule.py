#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace schedule`: GOAL-like steps, per-rank totals matching the ring
formula, an estimate per op and iteration, every algorithm, and errors."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import views_fixtures

SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")
ALGORITHMS = ["recorded", "ring", "tree", "hd", "ps", "stepwise", "gossip", "pairwise", "nccl"]


def run(*args):
    return views_fixtures.run(*args, timeout=120)


def totals(stdout):
    rows = {}
    lines = stdout.split("# totals\n", 1)[1].splitlines()[1:]
    for line in lines:
        if not line.strip():
            break
        f = line.split()
        rows[int(f[0])] = {"sent": int(f[6]), "recv": int(f[7]), "local": int(f[8])}
    return rows


class ScheduleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-schedule-")
        cls.synth = views_fixtures.synth_resnet50(os.path.join(cls.tmp, "synth"), 4, 2, 2)
        cls.sample = os.path.join(cls.tmp, "sample")
        subprocess.run([SAMPLE, "-o", cls.sample, "--ranks", "4", "--hosts", "2",
                        "--iterations", "3"], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_ring_totals_match_the_formula(self):
        p = run("schedule", self.synth, "--algo", "ring", "--no-steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        gradient = 2 * 25_557_032 * 4
        t = totals(p.stdout)
        self.assertEqual(sorted(t), [0, 1, 2, 3])
        for r in t.values():
            # 2(n-1)/n per bucket; the buckets' shares need not divide by 4.
            self.assertAlmostEqual(r["sent"] / gradient, 2 * 3 / 4, places=5)
        self.assertGreater(t[0]["local"], 0)  # rank 0 -> 1 stays on node0
        self.assertEqual(t[1]["local"], 0)    # rank 1 -> 2 crosses hosts

    def test_prints_goal_steps_for_one_rank(self):
        p = run("schedule", self.synth, "--algo", "ring", "--rank", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("rank 1 {", p.stdout)
        self.assertNotIn("rank 0 {", p.stdout)
        self.assertRegex(p.stdout, r"l\d+: send \d+b to 2 tag \d+")
        self.assertRegex(p.stdout, r"l\d+ requires l\d+")

    def test_estimate_per_op_and_iteration(self):
        p = run("schedule", self.synth, "--algo", "ring", "--no-steps", "--link-gbps", "10")
        self.assertEqual(p.returncode, 0, p.stderr)
        iterations = re.findall(r"^(\d+)\s+([\d.]+)$", p.stdout, re.M)
        self.assertEqual([int(i) for i, _ in iterations], [0, 1])
        self.assertTrue(all(float(ms) > 0 for _, ms in iterations))
        self.assertRegex(p.stdout, r"total_ms [\d.]+")
        slow = float(re.search(r"total_ms ([\d.]+)", p.stdout).group(1))
        fast = run("schedule", self.synth, "--algo", "ring", "--no-steps", "--link-gbps", "400")
        self.assertLess(float(re.search(r"total_ms ([\d.]+)", fast.stdout).group(1)), slow)

    def test_every_algorithm_lowers_the_sample_set(self):
        for algo in ALGORITHMS:
            p = run("schedule", self.sample, "--algo", algo, "--no-steps")
            self.assertEqual(p.returncode, 0, algo + ": " + p.stderr)
            self.assertIn("iterations", p.stdout)
        p = run("schedule", self.sample, "--algo", "ps", "--servers", "2", "--no-steps")
        self.assertEqual(len([k for k in totals(p.stdout)]), 6)  # 4 workers + 2 servers

    def test_calibrate_writes_a_host_profile_that_the_lowering_models(self):
        prof = os.path.join(self.tmp, "host.json")
        p = run("calibrate", "--no-mpi", "-o", prof)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(prof) as f:
            j = json.load(f)
        self.assertEqual(j["format"], "dltrace-host-profile")
        for key in ("reduce_float_gbps", "reduce_double_gbps", "memcpy_gbps"):
            self.assertGreater(j[key], 0, key)
        # A profile of our own: 1 ms per message, no arithmetic. Each ring
        # all-reduce of 4 ranks waits 3 of them in its reduce-scatter.
        slow = os.path.join(self.tmp, "slow-host.json")
        with open(slow, "w") as f:
            json.dump({"format": "dltrace-host-profile", "version": 1, "reduce_float_gbps": 0,
                       "mpi_message_ns": 1e6}, f)
        base = run("schedule", self.synth, "--algo", "ring", "--no-steps")
        host = run("schedule", self.synth, "--algo", "ring", "--no-steps", "--host-profile", slow)
        self.assertEqual(host.returncode, 0, host.stderr)
        op_ms = lambda out: [float(m) for m in re.findall(r"(?m)^\d+\s+\d+\s+ncclAllReduce\s.*\s([\d.]+)$", out)]
        a, b = op_ms(base.stdout), op_ms(host.stdout)
        self.assertTrue(a and len(a) == len(b), base.stdout)
        for x, y in zip(a, b):
            self.assertAlmostEqual(y - x, 3.0, places=3)
        p = run("schedule", self.synth, "--algo", "ring", "--host-profile", os.path.join(self.tmp, "missing.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing.json", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_nccl_says_per_op_what_nccl_chose_and_why(self):
        p = run("schedule", self.synth, "--algo", "nccl", "--no-steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [l for l in p.stdout.splitlines() if "ncclAllReduce" in l]
        self.assertTrue(rows)
        for row in rows:
            # 4 ranks, 2 per host: 2 nodes; 25 MB buckets are rings (tuning model, no recorded choice).
            self.assertRegex(row, r"nccl\s+[\d.]+\s+Ring/(LL128|Simple) x\d+ \(tuning model\)$")
        p = run("schedule", self.synth, "--algo", "nccl", "--no-steps", "--rank", "0")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_nccl_is_the_default_for_nccl_traces_and_an_algo_given_wins(self):
        # No --algo: the synthetic job's all-reduces are NCCL's, so it lowers
        # as NCCL would run them, exactly as --algo nccl does.
        p = run("schedule", self.synth, "--no-steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^# schedule of .*: algorithm nccl,")
        self.assertRegex(p.stdout, r"ncclAllReduce .*nccl\s+[\d.]+\s+Ring/(LL128|Simple) x\d+ \(tuning model\)")
        self.assertEqual(p.stdout, run("schedule", self.synth, "--algo", "nccl", "--no-steps").stdout)
        self.assertEqual(json.loads(run("schedule", self.synth, "--json").stdout)["algorithm"], "nccl")
        # The old lowering, one plain ring per collective, when asked for.
        p = run("schedule", self.synth, "--algo", "recorded", "--no-steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^# schedule of .*: algorithm recorded,")
        self.assertNotIn("tuning model", p.stdout)

    def test_errors(self):
        p = run("schedule", self.synth, "--algo", "magic")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown algorithm", p.stderr)
        p = run("schedule", os.path.join(self.tmp, "missing"), "--algo", "ring")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
