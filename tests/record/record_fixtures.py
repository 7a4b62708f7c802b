# SPDX-License-Identifier: GPL-2.0-only
"""What the recorder's tests share: a recording read back with `dltrace
dump`, the NCCL test double's programs recorded as torchrun starts them
(4 ranks, 2 per node, tests/nccl/launch.py), and a replay's results checked
(tests/mpi's tests use them too)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

DLTRACE = os.environ["DLTRACE"]
SRC = os.environ.get("PROJECT_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LAUNCH = [sys.executable, os.path.join(SRC, "tests", "nccl", "launch.py")]
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def dump(path, rank=None):
    """`dltrace dump PATH [--rank RANK]`: (exit status, the records, stderr)."""
    args = [DLTRACE, "dump", path] + (["--rank", str(rank)] if rank is not None else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines()], p.stderr


def expected_lines(out, rank):
    """What the NCCL test program wrote it did on RANK (OUT/expected.rankR.jsonl)."""
    with open(os.path.join(out, f"expected.rank{rank}.jsonl")) as f:
        return [json.loads(l) for l in f]


def record_launched(out, program, record_args=(), env=None, timeout=300):
    """`dltrace record RECORD_ARGS -o OUT --` over PROGRAM OUT on 4 ranks started as torchrun starts them."""
    return subprocess.run([DLTRACE, "record", *record_args, "-o", out, "--"] + LAUNCH +
                          ["--nproc", "4", "--per-node", "2", "--", program, out],
                          capture_output=True, text=True, timeout=timeout, env=env)


class ScratchTestCase(unittest.TestCase):
    """A test case with a fresh scratch directory, self.tmp, removed after each test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dltrace-%s-" % type(self).__name__)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def rank_files(out):
    """The rank files (*.dltrace) a recording wrote in OUT, sorted by name."""
    return sorted(f for f in os.listdir(out) if f.endswith(".dltrace"))


def replayed_every_byte(test, out, ranks):
    """OUT's rankN.results.json (a replay's): RANKS of them, each complete and
    having received every byte its schedule receives. Returns them in rank order."""
    results = []
    for path in sorted(glob.glob(os.path.join(out, "rank*.results.json"))):
        with open(path) as f:
            r = json.load(f)
        test.assertTrue(r["complete"], r["error"])
        test.assertEqual(r["bytes_received"], r["bytes_scheduled_recv"], path)
        results.append(r)
    test.assertEqual(sorted(r["endpoint"] for r in results), list(range(ranks)))
    return sorted(results, key=lambda r: r["endpoint"])
