#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Iteration time means one thing everywhere (README, "Iteration time"): on a
pipeline-parallel synthetic job (Llama-3 8B, tp 2 x pp 2 x dp 2, 10 identical
iterations), the per-iteration times that `schedule`, `simulate --engine
flow` and `compare` (recorded and simulated) print add up to the job's time
within 1%, and the iterations after the first are equal."""
import json
import os
import re
import shutil
import tempfile
import unittest

from views_fixtures import info_json, run

ITERATIONS = 10


class IterationTimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-iterations-")
        cls.set = os.path.join(cls.tmp, "pp")
        p = run("synth", "--model", "llama3-8b", "--tp", "2", "--pp", "2", "--dp", "2", "--seq-len", "1024",
                "--ranks-per-host", "2", "--iterations", str(ITERATIONS), "-o", cls.set)
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_adds_up(self, its, job_ms, what):
        self.assertEqual(len(its), ITERATIONS, what)
        self.assertTrue(all(t > 0 for t in its), (what, its))
        self.assertLess(abs(sum(its) / job_ms - 1), 0.01, "%s: iterations sum to %.3f ms, job %.3f ms"
                        % (what, sum(its), job_ms))

    def assert_equal_after_first(self, its, tolerance, what):
        for t in its[1:]:
            self.assertLess(abs(t / its[1] - 1), tolerance, "%s: %s" % (what, its))

    def test_schedule_estimate_adds_up_to_its_total(self):
        p = run("schedule", self.set, "--algo", "ring", "--no-steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        table = p.stdout.split("\niteration", 1)[1]
        its = [float(ms) for _, ms in re.findall(r"(?m)^(\d+)\s+([\d.]+)$", table)]
        total = float(re.search(r"(?m)^total_ms ([\d.]+)$", p.stdout).group(1))
        self.assert_adds_up(its, total, "schedule")
        # The estimate is exact arithmetic on identical iterations.
        self.assert_equal_after_first(its, 1e-6, "schedule")

    def test_recorded_and_flow_simulated_iterations_add_up_to_the_job(self):
        out = os.path.join(self.tmp, "flow")
        # hosts=trace: each tensor-parallel pair on the one host its trace recorded (placement decides locality).
        p = run("simulate", "--job", self.set + ":hosts=trace", "--engine", "flow", "--algo", "ring", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        job_ms = float(re.search(r"job time ([\d.]+) ms", p.stdout).group(1))
        table = p.stdout.split("\niteration ", 1)[1]
        rows = re.findall(r"(?m)^(\d+)\s+([\d.]+)\s+([\d.]+)\s+[-+][\d.]+$", table)
        self.assert_adds_up([float(r[2]) for r in rows], job_ms, "simulate --engine flow")
        # Flows of neighbouring iterations share links a little differently.
        self.assert_equal_after_first([float(r[2]) for r in rows], 0.01, "simulate --engine flow")

        p = run("compare", self.set, out, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        recorded, flow = json.loads(p.stdout)["runs"]
        for a, b in zip(flow["iteration_ms"], [float(r[2]) for r in rows]):
            self.assertAlmostEqual(a, b, places=2)
        # The recorded job: from its first rank's start to its last op (info's span).
        span_ms = info_json(self.set)["time_span_s"] * 1e3
        self.assert_adds_up(recorded["iteration_ms"], span_ms, "recorded")
        self.assert_equal_after_first(recorded["iteration_ms"], 1e-6, "recorded")


if __name__ == "__main__":
    unittest.main(verbosity=2)
