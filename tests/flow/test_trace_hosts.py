#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""--job TRACE:hosts=trace in the flow simulator: the ranks a trace recorded
on one host share one topology host. 16 ResNet-50 ranks synthesized 8 per
host are 16 / 8 = 2 topology hosts (summary: "on hosts 0-1"; SimGrid
platform: one host per (topology host, job, channel), ring with one channel:
2), against 16 without it. Every endpoint completes and ring all-reduce
moves 2 (N - 1) B bytes in all, B = 25,557,032 x 4 (ResNet-50's fp32
gradient), wherever the ranks sit."""
import glob
import json
import os
import re
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
RANKS, PER_HOST = 16, 8
RESNET50_GRADIENT_BYTES = 25557032 * 4


def load(path):
    with open(path) as f:
        return json.load(f)


class TraceHostsTest(unittest.TestCase):
    def simulate(self, tmp, name, job):
        out = os.path.join(tmp, name)
        r = subprocess.run([DLTRACE, "simulate", "--job", job, "--engine", "flow", "--topo", "fat-tree",
                            "--algo", "ring", "--util-ms", "0", "-o", out],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        results = [load(path) for path in glob.glob(os.path.join(out, "rank*.results.json"))]
        self.assertEqual(len(results), RANKS)
        self.assertEqual([res["error"] for res in results if not res["complete"]], [])
        self.assertEqual(sum(res["bytes_sent"] for res in results), 2 * (RANKS - 1) * RESNET50_GRADIENT_BYTES)
        platform = re.search(r"platform of (\d+) hosts", r.stderr)
        self.assertIsNotNone(platform, r.stderr[-2000:])
        return r.stdout, int(platform.group(1))

    def test_ranks_of_a_recorded_host_share_a_topology_host(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "r50")
            subprocess.run([DLTRACE, "synth", "--model", "resnet50", "--ranks", str(RANKS), "--ranks-per-host",
                            str(PER_HOST), "--iterations", "1", "-o", trace], check=True, capture_output=True,
                           timeout=600)
            summary, hosts = self.simulate(tmp, "shared", trace + ":hosts=trace")
            self.assertIn("%d endpoints on hosts 0-%d" % (RANKS, RANKS // PER_HOST - 1), summary)
            self.assertEqual(hosts, RANKS // PER_HOST)
            summary, hosts = self.simulate(tmp, "apart", trace)
            self.assertIn("%d endpoints on hosts 0-%d" % (RANKS, RANKS - 1), summary)
            self.assertEqual(hosts, RANKS)

    def test_bad_hosts_value_is_one_line(self):
        r = subprocess.run([DLTRACE, "simulate", "--job", "x:hosts=tracer", "--engine", "flow"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("bad value in 'hosts=tracer'", r.stderr)


if __name__ == "__main__":
    unittest.main()
