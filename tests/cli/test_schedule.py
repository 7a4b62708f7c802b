#!/usr/bin/env python3
"""`dltrace schedule`: GOAL-like steps, per-rank totals matching the ring
formula, an estimate per op and iteration, every algorithm, and errors."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import views_fixtures

SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")
ALGORITHMS = ["recorded", "ring", "tree", "hd", "ps", "stepwise", "gossip", "pairwise"]


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
        cls.synth = views_fixtures.synth_with(os.path.join(cls.tmp, "synth"), "--model", "resnet50",
                                              "--ranks", "4", "--ranks-per-host", "2", "--iterations", "2")
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

    def test_errors(self):
        p = run("schedule", self.synth, "--algo", "magic")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown algorithm", p.stderr)
        p = run("schedule", self.synth)
        self.assertEqual(p.returncode, 2)
        p = run("schedule", os.path.join(self.tmp, "missing"), "--algo", "ring")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
