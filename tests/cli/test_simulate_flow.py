#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate --engine flow` from the command line: the flow-level
engine writes results files (source "flow") whose bytes equal the schedule's,
flows.csv with one row per message and links.csv; a ring all-reduce on a star
takes the time the formula gives; two jobs sharing a bottleneck slow each
other; compare --with flow and report read its runs; bad input is one error line."""
import csv
import glob
import json
import os
import tempfile
import unittest

from views_fixtures import load_json, run, sample_trace

DLTRACE = os.environ.get("DLTRACE", "dltrace")


class FlowSimulateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # One all-reduce bucket of S bytes per iteration on N ranks, one per host, nothing else.
        cls.n, cls.size, cls.iterations = 8, 8000000, 2
        cls.trace = sample_trace(os.path.join(cls.tmp.name, "t"), ranks=cls.n, iterations=cls.iterations, buckets=1,
                                 bucket_bytes=cls.size)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_ring_allreduce_takes_the_formula_time_and_writes_every_output(self):
        out = self.out("ring")
        r = run("simulate", self.trace, "--engine", "flow", "--topo", "star:rate=10Gbps,delay=1us", "--algo", "ring",
                "--time-scale", "0", "--cfg", "network/bandwidth-factor:1", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all received", r.stdout)
        self.assertIn("messages per wall s", r.stdout)
        files = sorted(glob.glob(os.path.join(out, "rank*.results.json")))
        self.assertEqual(len(files), self.n)
        for path in files:
            res = load_json(path)
            self.assertEqual(res["source"], "flow")
            self.assertTrue(res["complete"], res["error"])
            self.assertEqual(res["bytes_received"], res["bytes_scheduled_recv"])
            self.assertEqual(res["bytes_sent"], res["bytes_scheduled_send"])
            # Ring: each rank sends 2(n-1) chunks of S/n.
            self.assertEqual(res["bytes_sent"], self.iterations * 2 * (self.n - 1) * self.size // self.n)
        # Each step moves S/n over one 10 Gbit/s host link, then one switch hop: 2 links of 1 us each.
        n, size = self.n, self.size
        step_s = size / n * 8 / 10e9 + 2e-6
        expected_ms = 2 * (n - 1) * step_s * 1e3
        op_ms = max(o["end_ns"] - o["start_ns"] for o in load_json(files[0])["ops"]) / 1e6
        self.assertAlmostEqual(op_ms / expected_ms, 1.0, delta=0.02, msg="%.3f ms, formula %.3f ms" % (op_ms, expected_ms))
        with open(os.path.join(out, "flows.csv")) as f:
            flows = list(csv.DictReader(f))
        self.assertEqual(len(flows), self.iterations * 2 * (n - 1) * n)
        self.assertTrue(all(int(row["fct_ns"]) > 0 for row in flows))
        with open(os.path.join(out, "links.csv")) as f:
            links = list(csv.DictReader(f))
        self.assertIn("h0-sw0", {row["link"] for row in links})
        self.assertGreater(max(float(row["utilisation"]) for row in links), 0.9)

    def test_nccl_lowering_agrees_with_the_alpha_beta_estimate(self):
        # 16 ranks on 2 nodes (ResNet-50 buckets): the nccl lowering's channels share a host
        # link in both the estimate and the flow engine; iteration times within 5%.
        trace = self.out("nccl16")
        r = run("synth", "--model", "resnet50", "--ranks", "16", "--ranks-per-host", "8", "--iterations", "2",
                "--compute-ms", "1", "-o", trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        est = run("schedule", trace, "--algo", "nccl", "--no-steps", "--link-gbps", "100", "--latency-us", "2")
        self.assertEqual(est.returncode, 0, est.stderr)
        def iterations(stdout, column):  # the numbered rows of the iteration table
            rows = [l.split() for l in stdout.split("\niteration", 1)[1].splitlines()[1:]]
            return [float(f[column]) for f in rows if f and f[0].isdigit()][:2]
        estimated = iterations(est.stdout, 1)
        out = self.out("nccl16-flow")
        r = run("simulate", trace, "--engine", "flow", "--topo", "star:rate=100Gbps,delay=1us", "--algo", "nccl",
                "--cfg", "network/bandwidth-factor:1", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all received", r.stdout)
        simulated = iterations(r.stdout, 2)
        self.assertEqual(len(estimated), 2)
        self.assertEqual(len(simulated), 2)
        for e, s in zip(estimated, simulated):
            self.assertAlmostEqual(s / e, 1.0, delta=0.05, msg="flow %.3f ms, estimate %.3f ms" % (s, e))

    def test_channels_spread_over_equal_cost_paths(self):
        # Ring on 2 leaves x 4 hosts: only host 3 -> host 4 crosses from leaf0 to leaf1. One
        # connection takes one spine; eight channels (NCCL channels, one TCP connection each)
        # spread over the spines, as per-flow ECMP spreads them.
        topo = "leaf-spine:leaves=2,spines=4,hosts-per-leaf=4,rate=10Gbps"
        n, size = self.n, self.size
        cross = self.iterations * 2 * (n - 1) * size // n  # what rank 3 sends rank 4
        used = {}
        for channels in (1, 8):
            out = self.out("channels%d" % channels)
            r = run("simulate", self.trace, "--engine", "flow", "--topo", topo, "--algo", "ring", "--channels",
                    str(channels), "--time-scale", "0", "--util-ms", "0.1",
                    # Links then carry exactly the payload (the default factor models header bytes too).
                    "--cfg", "network/bandwidth-factor:1", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            up = {}
            with open(os.path.join(out, "links.csv")) as f:
                for row in csv.DictReader(f):
                    if row["link"].startswith("leaf0-spine"):
                        up[row["link"]] = up.get(row["link"], 0) + float(row["bytes"])
            self.assertAlmostEqual(sum(up.values()) / cross, 1.0, delta=0.01, msg=up)
            used[channels] = sum(1 for b in up.values() if b > 0.05 * cross)
        self.assertEqual(used[1], 1)
        self.assertGreaterEqual(used[8], 3)

    def test_two_jobs_on_one_bottleneck_slow_each_other(self):
        topo = "dumbbell:hosts=16,rate=10Gbps"
        alone, both = self.out("alone"), self.out("both")
        r = run("simulate", "--engine", "flow", "--job", self.trace + ":hosts=0-3,8-11", "--topo", topo,
                "--time-scale", "0", "--algo", "ring", "-o", alone)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("simulate", "--engine", "flow", "--job", self.trace + ":hosts=0-3,8-11",
                "--job", self.trace + ":hosts=4-7,12-15", "--topo", topo, "--time-scale", "0", "--algo", "ring",
                "-o", both)
        self.assertEqual(r.returncode, 0, r.stderr)
        t_alone = load_json(os.path.join(alone, "rank0.results.json"))["duration_ns"]
        t_both = [load_json(os.path.join(both, "job%d" % j, "rank0.results.json"))["duration_ns"] for j in (0, 1)]
        for t in t_both:
            self.assertGreater(t, 1.5 * t_alone, "two jobs share the 10G bottleneck")

    def test_compare_with_flow_and_report_read_its_runs(self):
        out = self.out("algos")
        r = run("compare", "--algos", "ring,tree", self.trace, "--with", "flow", "-o", out, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        labels = [x["label"] for x in json.loads(r.stdout)["runs"]]
        self.assertEqual(labels, ["recorded", "flow:ring", "flow:tree"])
        r = run("report", self.trace, "-o", self.out("report.html"), "--results", os.path.join(out, "ring"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_bad_input_is_one_error_line(self):
        r = run("simulate", self.trace, "--engine", "flow", "--topo", "torus", "-o", self.out("bad"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("unknown topology 'torus'", r.stderr)
        self.assertFalse(os.path.exists(self.out("bad")))
        r = run("simulate", self.trace, "--engine", "warp")
        self.assertEqual(r.returncode, 2)
        r = run("simulate", self.trace, "--cfg", "network/latency-factor:1", "-o", self.out("bad2"))
        self.assertEqual(r.returncode, 2, "--cfg goes with --engine flow")
        r = run("simulate", self.trace, "--engine", "flow", "--cc", "TcpBbr", "-o", self.out("bad3"))
        self.assertEqual(r.returncode, 2, "the flow engine's only --cc is mltcp")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("only --cc is mltcp", r.stderr)
        self.assertFalse(os.path.exists(self.out("bad3")))

    def test_mltcp_weights_the_shares_and_says_so(self):
        # Two jobs at once on one bottleneck (no compute): under MLTCP the job
        # whose endpoint has sent more of its iteration gets more of the link;
        # the run completes with every byte and the summary names F.
        topo = "dumbbell:hosts=16,rate=10Gbps"
        out = self.out("mltcp")
        r = run("simulate", "--engine", "flow", "--cc", "mltcp", "--mltcp-slope", "2", "--job",
                self.trace + ":hosts=0-3,8-11", "--job", self.trace + ":hosts=4-7,12-15:start=1ms", "--topo", topo,
                "--time-scale", "0", "--algo", "ring", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("MLTCP shares, F(r) = 2 r + 0.5", r.stdout)
        for j in (0, 1):
            res = load_json(os.path.join(out, "job%d" % j, "rank0.results.json"))
            self.assertTrue(res["complete"])
            self.assertEqual(res["bytes_sent"], res["bytes_scheduled_send"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
