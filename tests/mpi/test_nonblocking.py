#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A real nonblocking halo exchange (tests/mpi/mpi_halo.c: MPI_Irecv,
MPI_Isend to both neighbours, MPI_Waitall, per iteration) recorded under
mpirun: it lowers with no forced order (no "contradicting orders" warning,
exit 0), one iteration per program iteration, every halo message a transfer
of its size, and its replay over loopback moves every scheduled byte."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "record"))
from record_fixtures import DLTRACE, MPIRUN, replayed_every_byte  # noqa: E402

HALO = os.environ.get("DLTRACE_MPI_HALO", "dltrace-mpi-halo")
RANKS, ITERATIONS, ROWS, HALO_COLS = 4, 6, 64, 16


class NonblockingLoweringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-nonblocking-")
        cls.set = os.path.join(cls.tmp, "halo")
        p = subprocess.run([DLTRACE, "record", "-o", cls.set, "--", *MPIRUN, "-np", str(RANKS), HALO,
                            "--iterations", str(ITERATIONS), "--rows", str(ROWS), "--halo", str(HALO_COLS),
                            "--cells", "256"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_halo_exchange_lowers_without_forced_order(self):
        p = subprocess.run([DLTRACE, "schedule", self.set, "--algo", "recorded", "--no-steps"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("contradicting", p.stderr)
        self.assertIn("%d iterations" % ITERATIONS, p.stdout)
        # Each rank sends two halos per iteration, ROWS*HALO_COLS doubles each.
        halo_bytes = ROWS * HALO_COLS * 8
        for line in p.stdout.splitlines():
            cols = line.split()
            if len(cols) > 6 and cols[1] == "worker":
                self.assertGreaterEqual(int(cols[6]), 2 * ITERATIONS * halo_bytes, line)

    def test_replay_moves_every_scheduled_byte(self):
        out = os.path.join(self.tmp, "replay")
        p = subprocess.run([DLTRACE, "replay", self.set, "--local", "--no-progress", "-o", out],
                           capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        for r in replayed_every_byte(self, out, RANKS):
            self.assertEqual(len(r["iterations"]), ITERATIONS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
