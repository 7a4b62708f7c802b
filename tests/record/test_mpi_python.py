#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A Python program that calls MPI through mpi4py (Debian's python3-mpi4py):
mpi4py loads libmpi privately with its extension module, after the recorder.
Under `dltrace record` alone the program runs unharmed with its output
unchanged and one line says how to record it; with libmpi preloaded as that
line says, its calls are recorded (one MPI_Allreduce of 4 doubles = 32 bytes)."""
import json
import os
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
PYTHON = "/usr/bin/python3"  # Debian's interpreter, where python3-mpi4py installs
PROGRAM = ("from mpi4py import MPI\n"
           "import array\n"
           "a = array.array('d', [1.0] * 4); b = array.array('d', [0.0] * 4)\n"
           "MPI.COMM_WORLD.Allreduce(a, b)\n"
           "print('sum', b[0])\n")


def libmpi():
    p = subprocess.run([PYTHON, "-c", "from mpi4py import MPI\n"
                        "print([l.split()[-1] for l in open('/proc/self/maps') if '/libmpi.so' in l][0])"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


@unittest.skipUnless(os.path.exists(PYTHON) and libmpi(), "no Debian python3 with mpi4py")
class PythonMpiTest(unittest.TestCase):
    def record(self, out, env=None):
        return subprocess.run([DLTRACE, "record", "-o", out, "--", PYTHON, "-c", PROGRAM], capture_output=True,
                              text=True, timeout=120, env=env)

    def test_late_libmpi_runs_unrecorded_and_says_how(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.record(os.path.join(tmp, "t"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "sum 1.0\n")
            lines = [l for l in r.stderr.splitlines() if "loaded after the recorder" in l]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn("LD_PRELOAD=", lines[0])

    def test_preloaded_libmpi_is_recorded(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "t")
            r = self.record(out, dict(os.environ, LD_PRELOAD=libmpi()))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "sum 1.0\n")
            d = subprocess.run([DLTRACE, "dump", out], capture_output=True, text=True)
            self.assertEqual(d.returncode, 0, d.stderr)
            ops = [json.loads(l) for l in d.stdout.splitlines() if '"type":"op"' in l]
            allreduce = [o for o in ops if o["kind"] == "MPI_Allreduce"]
            self.assertEqual(len(allreduce), 1, d.stdout)
            self.assertEqual(allreduce[0]["bytes"], 4 * 8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
