#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace place`: CASSINI time shifts for two synthetic data-parallel jobs
that share a dumbbell's bottleneck; the plan it writes runs with
`dltrace simulate --plan` (flow engine) and lowers the mean iteration time
against both jobs starting at 0; bad input is one error line."""
import glob
import json
import os
import tempfile
import unittest

from views_fixtures import run

TOPO = "dumbbell:hosts=4,rate=10Gbps"


def mean_iteration_ms(out_dir, job, skip=1):
    """Mean iteration length of JOB over its endpoints, iterations from SKIP on."""
    times = []
    for path in glob.glob(os.path.join(out_dir, "job%d" % job, "rank*.results.json")):
        with open(path) as f:
            res = json.load(f)
        assert res["complete"], res.get("error")
        times += [(it["end_ns"] - it["start_ns"]) / 1e6 for it in res["iterations"] if it["iteration"] >= skip]
    assert times, out_dir
    return sum(times) / len(times)


class PlaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = os.path.join(cls.tmp.name, "r50")
        # 2 ranks on 2 hosts: 51 MB of bf16 gradients per iteration (41 ms at 10 Gbit/s) and 40 ms of compute.
        r = run("synth", "--model", "resnet50", "--ranks", "2", "--ranks-per-host", "1", "--iterations", "8",
                "--compute-ms", "40", "--dtype", "bf16", "--link-gbps", "10", "-o", cls.trace)
        assert r.returncode == 0, r.stderr
        # Each job has one host on each side of the bottleneck.
        cls.jobs = ["--job", cls.trace + ":hosts=0,2", "--job", cls.trace + ":hosts=1,3"]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_place_shifts_the_second_job_and_the_plan_lowers_iteration_time(self):
        plan_path = os.path.join(self.tmp.name, "plan.json")
        r = run("place", *self.jobs, "--topo", TOPO, "--algo", "ring", "-o", plan_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("start_ms", r.stdout)
        self.assertIn("dltrace simulate --topo " + TOPO, r.stdout)
        with open(plan_path) as f:
            plan = json.load(f)
        self.assertEqual(plan["topology"], TOPO)
        starts = [j["start_ns"] for j in plan["jobs"]]
        periods = [j["period_ns"] for j in plan["jobs"]]
        self.assertEqual(starts[0], 0)
        self.assertGreater(starts[1], 0)
        self.assertLess(starts[1], periods[1])
        self.assertEqual([j["hosts"] for j in plan["jobs"]], [[0, 2], [1, 3]])
        # The bottleneck, both directions, is shared and less overloaded after the shift.
        shared = [l for l in plan["links"] if l["jobs"] == [0, 1]]
        self.assertEqual(sorted((l["from"], l["to"]) for l in shared), [("left", "right"), ("right", "left")])
        for l in shared:
            self.assertLess(l["excess_bytes_after"], l["excess_bytes_before"])

        zero = os.path.join(self.tmp.name, "zero")
        r = run("simulate", "--engine", "flow", *self.jobs, "--topo", TOPO, "--algo", "ring", "-o", zero)
        self.assertEqual(r.returncode, 0, r.stderr)
        shifted = os.path.join(self.tmp.name, "shifted")
        r = run("simulate", "--engine", "flow", "--plan", plan_path, "-o", shifted)
        self.assertEqual(r.returncode, 0, r.stderr)
        at_zero = [mean_iteration_ms(zero, j) for j in (0, 1)]
        with_plan = [mean_iteration_ms(shifted, j) for j in (0, 1)]
        print("mean iteration ms, all at 0: %s; CASSINI offsets: %s" % (at_zero, with_plan))
        self.assertLess(sum(with_plan), 0.95 * sum(at_zero), "the offsets interleave the jobs")

    def test_jobs_on_separate_links_start_at_zero(self):
        r = run("place", "--job", self.trace + ":hosts=0,1", "--job", self.trace + ":hosts=2,3", "--topo", TOPO)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("share no link", r.stdout)

    def test_bad_input_is_one_error_line(self):
        r = run("place", "--topo", TOPO)
        self.assertEqual(r.returncode, 2)
        r = run("place", "--job", os.path.join(self.tmp.name, "missing"), "--topo", TOPO)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        r = run("place", "--job", self.trace + ":hosts=0,1,2", "--topo", TOPO)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = run("simulate", "--engine", "flow", "--plan", os.path.join(self.tmp.name, "missing.json"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
