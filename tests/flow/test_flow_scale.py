#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A 1,024-rank job in the flow simulator, small enough for the default run:
ResNet-50 data parallel (synth, 8 ranks per host, one iteration), tree
all-reduce on a k=16 fat-tree. Every endpoint completes, and the bytes
equal closed forms written here: an all-reduce of B bytes over N ranks,
tree or ring, moves 2 (N - 1) B bytes in all (reduce: every rank but the
root passes its B on once; broadcast: every rank but the root receives B
once), and ResNet-50's fp32 gradient is 25,557,032 parameters x 4 bytes.
flows.csv (written as the run goes) has every message once: its bytes sum
to the same total and each results file's bytes_sent to its rows' bytes.
The progress lines show simulated time, messages per wall second and
memory. No wall-clock bound here: scripts/bench-sim.sh measures speed."""
import csv
import glob
import json
import os
import subprocess
import tempfile
import unittest
from collections import defaultdict

DLTRACE = os.environ.get("DLTRACE", "dltrace")
RANKS = 1024
RESNET50_GRADIENT_BYTES = 25557032 * 4


class FlowScaleTest(unittest.TestCase):
    def test_thousand_ranks_complete_with_closed_form_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace, out = os.path.join(tmp, "r50"), os.path.join(tmp, "sim")
            subprocess.run([DLTRACE, "synth", "--model", "resnet50", "--ranks", str(RANKS), "--ranks-per-host", "8",
                            "--iterations", "1", "-o", trace], check=True, capture_output=True, timeout=600)
            r = subprocess.run([DLTRACE, "simulate", trace, "--engine", "flow", "--topo", "fat-tree:k=16",
                                "--algo", "tree", "--util-ms", "0", "-o", out],
                               capture_output=True, text=True, timeout=1800)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            files = glob.glob(os.path.join(out, "rank*.results.json"))
            self.assertEqual(len(files), RANKS)
            sent = {}
            for path in files:
                with open(path) as f:
                    res = json.load(f)
                self.assertTrue(res["complete"], res["error"])
                self.assertEqual(res["bytes_sent"], res["bytes_scheduled_send"])
                sent[res["endpoint"]] = res["bytes_sent"]
            total = 2 * (RANKS - 1) * RESNET50_GRADIENT_BYTES
            self.assertEqual(sum(sent.values()), total)
            rows, by_src = 0, defaultdict(int)
            with open(os.path.join(out, "flows.csv")) as f:
                for row in csv.DictReader(f):
                    rows += 1
                    by_src[int(row["src"])] += int(row["bytes"])
                    self.assertGreaterEqual(int(row["fct_ns"]), 0)
            self.assertEqual(sum(by_src.values()), total)
            self.assertEqual(dict(by_src), {e: b for e, b in sent.items() if b})
            speed = [l for l in r.stdout.splitlines() if l.startswith("speed:")]
            self.assertEqual(len(speed), 1)
            self.assertIn(" %d messages," % rows, speed[0])


if __name__ == "__main__":
    unittest.main()
