#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The flow simulator's two solvers, as a user runs them: `--solver simgrid`
(SimGrid's engine and max-min) and `--solver incremental` (dltrace's own
FluidNetwork, re-solving only what changed) model the same sharing, so

- on a 32-rank GPT-3 job (TP 8, PP 2, DP 2, 8 ranks per recorded host) and
  8-host ring and tree all-reduces on a 1:1 leaf-spine, the incremental
  solver and SimGrid re-solving every flow at every event
  (`--cfg network/optim:Full`) agree: identical bytes per rank, the same
  flows.csv rows (keyed by what does not depend on sharing), every start
  and end within 2 ns of floating-point rounding. SimGrid's default lazy
  updates may leave a flow at its rate when another joins its link (the
  tree here: two mirror-image cross-leaf flows end 0.59 ms apart), so
  against the default each iteration only agrees within 5%;
- the incremental solver's links.csv carries what crossed each link: on the
  ring (8 ranks on 8 hosts of a k=4 fat-tree, 3 iterations of 2 buckets of
  4,000,000 bytes) each host's uplink and downlink carry 2 (n-1)/n of every
  bucket, 3 * 2 * 2 * 7/8 * 4,000,000 = 42,000,000 bytes (within the
  rounding of one byte per sample);
- what it does not model is refused with one line: an unknown solver,
  MLTCP, a SimGrid setting it does not take."""
import collections
import csv
import glob
import json
import os
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")


def run(*args):
    return subprocess.run([DLTRACE, *args], capture_output=True, text=True, timeout=600)


class IncrementalSolverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.gpt = os.path.join(cls.tmp.name, "gpt")
        subprocess.run([DLTRACE, "synth", "--model", "gpt3-175b", "--tp", "8", "--pp", "2", "--dp", "2",
                        "--ranks-per-host", "8", "--iterations", "1", "-o", cls.gpt], check=True,
                       capture_output=True, timeout=600)
        cls.ring = os.path.join(cls.tmp.name, "ring")
        subprocess.run([SAMPLE, "-o", cls.ring, "--ranks", "8", "--hosts", "8", "--iterations", "3", "--buckets", "2",
                        "--bucket-bytes", "4000000", "--nccl-only"], check=True, capture_output=True, timeout=600)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def simulate(self, name, solver, *job):
        out = os.path.join(self.tmp.name, name + "-" + solver)
        r = run("simulate", *job, "--engine", "flow", "--solver", solver, "--util-ms", "1", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return out

    def assert_agree(self, a, b, ranks, tolerance=0.0, slack_s=2e-9):
        """Runs A and B: the same bytes per rank and the same flows.csv rows;
        iteration times within TOLERANCE of A's (relative) plus SLACK_S, and,
        with TOLERANCE 0, each flow's start and end within SLACK_S."""
        names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(a, "rank*.results.json")))
        self.assertEqual(len(names), ranks)
        for name in names:
            with open(os.path.join(a, name)) as f, open(os.path.join(b, name)) as g:
                x, y = json.load(f), json.load(g)
            for key in ("bytes_sent", "bytes_received", "complete"):
                self.assertEqual(x[key], y[key], (name, key))
            self.assertEqual(len(x["iterations"]), len(y["iterations"]))
            for i, j in zip(x["iterations"], y["iterations"]):
                d1, d2 = i["end_ns"] - i["start_ns"], j["end_ns"] - j["start_ns"]
                self.assertLessEqual(abs(d1 - d2), tolerance * d1 + slack_s * 1e9, (name, i, j))

        def flows(run_dir):
            rows = collections.defaultdict(list)
            with open(os.path.join(run_dir, "flows.csv")) as f:
                for r in csv.DictReader(f):
                    key = tuple(r[c] for c in ("job", "op", "src", "dst", "channel", "bytes", "local"))
                    rows[key].append((float(r["start_s"]), float(r["end_s"])))
            return {k: sorted(v) for k, v in rows.items()}
        fa, fb = flows(a), flows(b)
        self.assertEqual(sorted(fa), sorted(fb))
        for key in fa:
            self.assertEqual(len(fa[key]), len(fb[key]), key)
            for (s1, e1), (s2, e2) in zip(fa[key], fb[key]):
                if tolerance == 0:
                    self.assertLessEqual(abs(s1 - s2), slack_s, (key, s1, s2))
                    self.assertLessEqual(abs(e1 - e2), slack_s, (key, e1, e2))

    def test_gpt_agrees_with_simgrid(self):
        job = ["--job", self.gpt + ":hosts=trace", "--topo", "fat-tree", "--algo", "ring"]
        full = self.simulate("gpt-full", "simgrid", *job, "--cfg", "network/optim:Full")
        self.assert_agree(full, self.simulate("gpt", "incremental", *job), 32)

    def test_tree_agrees_with_simgrid_updating_every_flow(self):
        job = [self.ring, "--topo", "leaf-spine:hosts-per-leaf=4,rate=10Gbps", "--algo", "tree", "--time-scale", "0"]
        incremental = self.simulate("tree", "incremental", *job)
        self.assert_agree(self.simulate("tree-full", "simgrid", *job, "--cfg", "network/optim:Full"), incremental, 8)
        self.assert_agree(self.simulate("tree", "simgrid", *job), incremental, 8, tolerance=0.05)

    def test_ring_agrees_with_simgrid_and_links_carry_the_closed_form(self):
        job = [self.ring, "--topo", "fat-tree:k=4,rate=10Gbps", "--algo", "ring", "--time-scale", "0"]
        simgrid, incremental = self.simulate("ring", "simgrid", *job), self.simulate("ring", "incremental", *job)
        self.assert_agree(simgrid, incremental, 8)
        total, samples = collections.Counter(), collections.Counter()
        with open(os.path.join(incremental, "links.csv")) as f:
            for r in csv.DictReader(f):
                total[r["link"]] += int(r["bytes"])
                samples[r["link"]] += 1
        expected = 3 * 2 * 2 * 7 * 4_000_000 // 8
        for h in range(8):
            up = [k for k in total if k.startswith("h%d-" % h)]
            down = [k for k in total if k.endswith("-h%d" % h)]
            self.assertEqual((len(up), len(down)), (1, 1), sorted(total))
            for link in up + down:
                self.assertLessEqual(abs(total[link] - expected), samples[link], (link, total[link], expected))

    def test_refusals_are_one_line(self):
        job = [self.ring, "--engine", "flow", "--topo", "fat-tree:k=4", "-o", os.path.join(self.tmp.name, "x")]
        for extra, says in ((["--solver", "fast"], "--solver fast"),
                            (["--solver", "incremental", "--cc", "mltcp"], "--cc mltcp"),
                            (["--solver", "incremental", "--cfg", "network/model:IB"], "network/model:IB")):
            r = run("simulate", *job, *extra)
            self.assertNotEqual(r.returncode, 0, extra)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn(says, lines[0])


if __name__ == "__main__":
    unittest.main()
