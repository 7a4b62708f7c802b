#!/usr/bin/env python3
"""`dltrace synth`: trace sets that `dltrace info` reads, bucket bytes summing
to the model's gradient, ranks on hosts, and its errors."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
RESNET50 = 25_557_032


def run(*args):
    return subprocess.run([DLTRACE, *args], capture_output=True, text=True, timeout=120)


class SynthTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dltrace-synth-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_resnet50_trace_set_reads_back_with_the_gradient_bytes(self):
        out = os.path.join(self.tmp, "r50")
        p = run("synth", "--model", "resnet50", "--ranks", "8", "--ranks-per-host", "4",
                "--iterations", "3", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("wrote 8 rank files", p.stdout)
        p = run("info", out, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["world_size"], 8)
        self.assertTrue(j["complete"])
        self.assertEqual([h["ranks"] for h in j["hosts"]], [[0, 1, 2, 3], [4, 5, 6, 7]])
        kinds = {k["kind"]: k for k in j["op_kinds"]}
        self.assertEqual(set(kinds), {"ncclAllReduce"})
        self.assertEqual(kinds["ncclAllReduce"]["bytes"], 8 * 3 * RESNET50 * 4)

    def test_bf16_halves_the_bytes(self):
        out = os.path.join(self.tmp, "bf16")
        p = run("synth", "--model", "resnet50", "--ranks", "2", "--iterations", "1",
                "--dtype", "bf16", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(run("info", out, "--json").stdout)
        self.assertEqual(j["bytes"], 2 * RESNET50 * 2)

    def test_errors_are_one_line_and_nonzero(self):
        out = os.path.join(self.tmp, "x")
        p = run("synth", "--model", "alexnet", "-o", out)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown model", p.stderr)
        p = run("synth", "--model", "resnet50")
        self.assertEqual(p.returncode, 2)
        os.mkdir(out)
        p = run("synth", "--ranks", "2", "-o", out)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        self.assertIn("cannot create", p.stderr)


if __name__ == "__main__":
    unittest.main()
