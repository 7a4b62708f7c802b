#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Coalescing in the flow simulator, as a user runs it: a 32-rank GPT-3
job (TP 8, PP 2, DP 2, 8 ranks per recorded host, `hosts=trace`) simulated
with equal messages that start together between two hosts sent as one
weighted SimGrid flow (the default) and with --no-coalesce (one flow each).
Max-min gives k equal flows on one route the rate that one flow of k times
their weight gets, so both runs must agree: identical per-rank results,
the same flows.csv rows (their order among messages that started at one
instant may differ: the bundle's leader delivers its members; end times
within 2 ns of floating-point rounding), and links.csv within a byte. The
default run must have coalesced some messages (the tensor-parallel ranks
of a host send to the next stage together), or the comparison proves
nothing."""
import csv
import glob
import os
import re
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")


class CoalesceTest(unittest.TestCase):
    def simulate(self, trace, out, *extra):
        r = subprocess.run([DLTRACE, "simulate", "--job", trace + ":hosts=trace", "--engine", "flow", "--topo",
                            "fat-tree", "--algo", "ring", "--util-ms", "1", "-o", out, *extra],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return r.stderr

    def test_coalesced_run_matches_one_flow_per_message(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "gpt")
            subprocess.run([DLTRACE, "synth", "--model", "gpt3-175b", "--tp", "8", "--pp", "2", "--dp", "2",
                            "--ranks-per-host", "8", "--iterations", "1", "-o", trace], check=True,
                           capture_output=True, timeout=600)
            bundled, alone = os.path.join(tmp, "bundled"), os.path.join(tmp, "alone")
            err = self.simulate(trace, bundled)
            m = re.search(r"(\d+) of (\d+) messages went in the SimGrid flow of an equal one", err)
            self.assertIsNotNone(m, err[-2000:])
            self.assertGreater(int(m.group(1)), 0)
            err = self.simulate(trace, alone, "--no-coalesce")
            self.assertNotIn("messages went in the SimGrid flow", err)

            names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(alone, "rank*.results.json")))
            self.assertEqual(len(names), 32)
            for name in names:
                with open(os.path.join(bundled, name)) as a, open(os.path.join(alone, name)) as b:
                    self.assertEqual(a.read(), b.read(), name)

            # Rows keyed by what does not depend on sharing (job, op, src, dst,
            # channel, bytes, local, start); the end within 2 ns of
            # floating-point rounding (one weighted flow sums its members'
            # bytes where the solver had them apart).
            def flows(run):
                with open(os.path.join(run, "flows.csv")) as f:
                    rows = list(csv.reader(f))
                return rows[0], sorted((r[:8], float(r[8]), int(r[9])) for r in rows[1:])
            (head_a, a), (head_b, b) = flows(bundled), flows(alone)
            self.assertEqual(head_a, head_b)
            self.assertEqual(len(a), len(b))
            for x, y in zip(a, b):
                self.assertEqual(x[0], y[0])
                self.assertLessEqual(abs(x[1] - y[1]), 2e-9, (x, y))
                self.assertLessEqual(abs(x[2] - y[2]), 2, (x, y))

            def rows(run):
                with open(os.path.join(run, "links.csv")) as f:
                    return list(csv.reader(f))
            a, b = rows(bundled), rows(alone)
            self.assertEqual(len(a), len(b))
            self.assertEqual(a[0], b[0])
            for x, y in zip(a[1:], b[1:]):
                self.assertEqual(x[:2], y[:2])  # time, link
                self.assertLessEqual(abs(int(x[2]) - int(y[2])), 1, (x, y))  # bytes


if __name__ == "__main__":
    unittest.main()
