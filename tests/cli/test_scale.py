#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace scale`: data-parallel trace sets grown from 4 to 64 and 1,024
ranks with per-rank bytes unchanged, a merge without problems and the ring's
per-rank bytes at 2(n-1)/n of the payload; hybrid synth jobs grown along their
data-parallel dimension; and the patterns it refuses."""
import os
import shutil
import subprocess
import tempfile
import unittest

from test_schedule import totals
from views_fixtures import info_json, run, synth_resnet50

SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")
RESNET50_FP32 = 25_557_032 * 4  # one 200 MiB bucket holds the whole gradient


info = info_json


def ring_totals(path):
    """Per-rank sent bytes of the ring lowering; asserts no warning."""
    p = run("schedule", path, "--algo", "ring", "--no-steps", timeout=600)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return {r: row["sent"] for r, row in totals(p.stdout).items()}


class ScaleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-scale-")
        cls.ddp = synth_resnet50(os.path.join(cls.tmp, "ddp4"), 4, 2, 1, "--bucket-mb", "200")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check_grown(self, ranks, per_host):
        out = os.path.join(self.tmp, "ddp%d" % ranks)
        p = run("scale", self.ddp, "--ranks", str(ranks), "--ranks-per-host", str(per_host), "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("wrote %d rank files" % ranks, p.stdout)
        j = info(out)
        self.assertEqual(j["world_size"], ranks)
        self.assertTrue(j["complete"])
        self.assertEqual(len(j["hosts"]), ranks // per_host)
        # Per rank: the same one all-reduce of the whole gradient.
        kinds = {k["kind"]: k for k in j["op_kinds"]}
        self.assertEqual(kinds["ncclAllReduce"]["bytes"], ranks * RESNET50_FP32)
        # Ring all-reduce: each rank sends 2(n-1)/n of the payload (blocks of
        # S/n rounded, so within one byte per step).
        sent = ring_totals(out)
        self.assertEqual(len(sent), ranks)
        want = 2 * (ranks - 1) / ranks * RESNET50_FP32
        for r, b in sent.items():
            self.assertLessEqual(abs(b - want), 2 * (ranks - 1), "rank %d" % r)

    def test_4_to_64_ranks(self):
        self.check_grown(64, 8)

    def test_4_to_1024_ranks(self):
        self.check_grown(1024, 8)

    def test_a_recorded_nccl_job_grows(self):
        src = os.path.join(self.tmp, "sample")
        subprocess.run([SAMPLE, "-o", src, "--ranks", "4", "--hosts", "2", "--iterations", "2",
                        "--nccl-only"], check=True, capture_output=True)
        out = os.path.join(self.tmp, "sample16")
        p = run("scale", src, "--ranks", "16", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        a, b = info(src), info(out)
        self.assertEqual(b["world_size"], 16)
        self.assertEqual(b["events"], 4 * a["events"])
        self.assertEqual(b["bytes"], 4 * a["bytes"])
        p = run("schedule", out, "--algo", "recorded", "--no-steps")
        self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_hybrid_jobs_grow_their_data_parallel_dimension(self):
        src = os.path.join(self.tmp, "gpt3")
        p = run("synth", "--model", "gpt3-175b", "--tp", "2", "--pp", "2", "--dp", "1",
                "--seq-len", "256", "--iterations", "1", "-o", src)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.tmp, "gpt3-16")
        p = run("scale", src, "--ranks", "16", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("data-parallel size 1 -> 4", p.stdout)
        a, b = info(src), info(out)
        self.assertEqual(b["world_size"], 16)
        ka = {k["kind"]: k["bytes"] for k in a["op_kinds"]}
        kb = {k["kind"]: k["bytes"] for k in b["op_kinds"]}
        # Tensor- and pipeline-parallel traffic per rank is unchanged; the
        # data-parallel all-reduces appear (per rank: the stage's gradients).
        self.assertEqual(kb["ncclSend"], 4 * ka["ncclSend"])
        self.assertEqual(kb["ncclAllReduce"] - 4 * ka["ncclAllReduce"] > 0, True)
        p = run("schedule", out, "--algo", "recorded", "--no-steps")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        p = run("scale", src, "--ranks", "10", "-o", os.path.join(self.tmp, "bad"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("multiple of 4", p.stderr)

    def test_point_to_point_patterns_are_refused(self):
        src = os.path.join(self.tmp, "p2p")
        subprocess.run([SAMPLE, "-o", src, "--ranks", "4", "--hosts", "2", "--iterations", "2"],
                       check=True, capture_output=True)
        out = os.path.join(self.tmp, "p2p-8")
        p = run("scale", src, "--ranks", "8", "-o", out)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("point-to-point", p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_never_overwrites(self):
        out = os.path.join(self.tmp, "exists")
        os.mkdir(out)
        p = run("scale", self.ddp, "--ranks", "8", "-o", out)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot create", p.stderr)


if __name__ == "__main__":
    unittest.main()
