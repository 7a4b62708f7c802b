#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace synth`: trace sets that `dltrace info` reads, bucket bytes summing
to the model's gradient, ranks on hosts, hybrid-parallel transformer jobs that
`dltrace schedule --algo recorded` lowers without a warning, and its errors."""
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

    def test_every_hybrid_layout_lowers_with_no_warning(self):
        cases = {
            "gpt3": ["--model", "gpt3-175b", "--tp", "2", "--pp", "4", "--dp", "2",
                     "--microbatches", "5", "--seq-len", "512", "--iterations", "2"],
            "gpt3-sp": ["--model", "gpt3-175b", "--tp", "4", "--pp", "2", "--dp", "1",
                        "--sequence-parallel", "--seq-len", "256"],
            "llama2": ["--model", "llama2-70b", "--tp", "2", "--pp", "2", "--dp", "2",
                       "--zero", "1", "--microbatches", "3", "--seq-len", "256"],
            "llama3": ["--model", "llama3-8b", "--tp", "1", "--pp", "1", "--dp", "4",
                       "--zero", "3", "--microbatches", "2", "--seq-len", "256",
                       "--iterations", "2"],
            "llama3-zero2": ["--model", "llama3-8b", "--ranks", "8", "--pp", "2", "--zero", "2",
                             "--seq-len", "128"],
            "mixtral": ["--model", "mixtral-8x7b", "--tp", "2", "--pp", "2", "--dp", "4",
                        "--ep", "2", "--sequence-parallel", "--microbatches", "3",
                        "--seq-len", "256", "--ranks-per-host", "4"],
            "mixtral-ep": ["--model", "mixtral-8x7b", "--tp", "1", "--pp", "1", "--dp", "8",
                           "--ep", "8", "--zero", "3", "--seq-len", "128"],
        }
        for name, args in cases.items():
            with self.subTest(name):
                out = os.path.join(self.tmp, name)
                p = run("synth", *args, "-o", out)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("rank files", p.stdout)
                p = run("schedule", out, "--algo", "recorded", "--no-steps")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr, "")

    def test_hybrid_errors_are_one_line(self):
        out = os.path.join(self.tmp, "bad")
        for args, why in [
            (["--model", "gpt3-175b", "--tp", "8", "--pp", "5", "--dp", "1"], "not divisible into 5"),
            (["--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--ranks", "100"], "not a multiple"),
            (["--model", "resnet50", "--tp", "2"], "transformer models only"),
            (["--model", "mixtral-8x7b", "--tp", "2", "--dp", "2", "--ep", "2"], "--sequence-parallel"),
            (["--model", "llama3-8b", "--ep", "2", "--dp", "2"], "mixture-of-experts"),
            (["--model", "llama3-8b", "--zero", "4", "--dp", "2"], "--zero"),
        ]:
            with self.subTest(why):
                p = run("synth", *args, "-o", out)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn(why, p.stderr)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
