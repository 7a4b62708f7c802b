#!/usr/bin/env python3
"""The recorder never changes what MPI does: every C wrapper hands PMPI the
arguments the program passed (buffers, counts, datatypes, requests and what
the request and status arrays hold) and hands the program back what PMPI
returned. libdltrace-mpi-argcheck.so (record/tools/mpi_argcheck.cc),
preloaded in front of the recorder, compares both sides of every call of the
record tests' programs and of a real ScaLAPACK driver under `dltrace record`;
the one allowed difference, a status of the recorder's where the program
passed MPI_STATUS(ES)_IGNORE, is counted. And the check itself fails when a
wrapper changes an argument (tests/record/broken_wrappers.c)."""
import glob
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_fixtures import DLTRACE, MPIRUN, SRC, ScratchTestCase  # noqa: E402

ARGCHECK = os.environ["DLTRACE_ARGCHECK_LIB"]
BROKEN = os.environ["DLTRACE_BROKEN_WRAPPERS_LIB"]
BIN = os.environ["DLTRACE_TEST_BIN"]  # directory of the MPI test programs
SCALAPACK_TESTS = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests"


def prog(name):
    for d in (BIN, os.path.join(BIN, "mpi")):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    raise FileNotFoundError(name + " not built")


def table_functions():
    """The C functions of record/tables/mpi.py, as the generator reads them."""
    sys.path.insert(0, os.path.join(SRC, "record"))
    import gen_wrappers
    return {row.name for row in gen_wrappers.load_table("mpi")}


# The programs the record tests run, each as (ranks, argv after the program);
# "{out}" is the run's scratch directory.
PROGRAMS = [
    ("dltrace-mpi-all-calls", 4, ["{out}"]),
    ("dltrace-mpi-families", 4, ["2"]),
    ("dltrace-mpi-patterns", 4, ["--pattern", "testall", "--iterations", "3"]),
    ("dltrace-mpi-patterns", 4, ["--pattern", "anysource", "--iterations", "3"]),
    ("dltrace-mpi-patterns", 4, ["--pattern", "probe", "--iterations", "3"]),
    ("dltrace-mpi-persistent-ring", 4, ["3", "100"]),
    ("dltrace-mpi-halo", 4, []),
    ("dltrace-mpi-threads", 2, ["4", "50"]),
]

# Rows none of these programs call (each says why it is left out).
NOT_CALLED = {
    "MPI_Abort",  # ends the job: test_mpi_record.py's exit paths
}


def reports(directory):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "argcheck.*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


class ArgumentCheckTest(ScratchTestCase):
    def record_checked(self, argv, ranks, cwd=None, timeout=240):
        """ARGV run on RANKS ranks under `dltrace record` with the argument
        check in front of the recorder: the reports of the ranks."""
        run = os.path.join(self.tmp, "run%d" % len(os.listdir(self.tmp)))
        checks = run + ".argcheck"
        os.mkdir(run)
        os.mkdir(checks)
        env = dict(os.environ, LD_PRELOAD=ARGCHECK, DLTRACE_ARGCHECK_DIR=checks,
                   OMPI_MCA_mca_base_env_list="DLTRACE_ARGCHECK_DIR", DLTRACE_QUIET="1")
        argv = [a.format(out=run) for a in argv]
        p = subprocess.run([DLTRACE, "record", "-o", os.path.join(run, "trace"), "--"] + MPIRUN +
                           ["-np", str(ranks)] + argv, cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=timeout)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertNotIn("dltrace-argcheck:", p.stderr)
        got = reports(checks)
        self.assertEqual(len(got), ranks, p.stderr[-2000:])  # one report per rank
        for r in got:
            self.assertEqual(r["mismatches"], 0, r["lines"])
        return got, p

    def test_record_test_programs_reach_pmpi_unchanged(self):
        checked = set()
        substituted = 0
        for name, ranks, args in PROGRAMS:
            with self.subTest(program=name, args=args):
                got, _ = self.record_checked([prog(name)] + args, ranks)
                for r in got:
                    checked.update(r["checked"])
                    substituted += r["statuses_substituted"]
        # Every C wrapper was checked at least once.
        self.assertEqual(sorted(table_functions() - checked - NOT_CALLED), [])
        # The recorder's statuses stood in where programs ignored theirs (the
        # halo's MPI_Waitall(..., MPI_STATUSES_IGNORE)): the check saw them.
        self.assertGreater(substituted, 0)

    @unittest.skipUnless(os.path.exists(os.path.join(SCALAPACK_TESTS, "xdqr")),
                         "scalapack-mpi-test is not installed (scripts/install-deps.sh installs it)")
    def test_scalapack_driver_reaches_pmpi_unchanged(self):
        # BLACS: MPI_Comm_create per grid, Isend + Testall polling,
        # MPI_ANY_SOURCE receives, Allreduce with user operations on
        # derived datatypes (the calls issue #48's xdllt makes).
        got, p = self.record_checked(["./xdqr"], 4, cwd=SCALAPACK_TESTS, timeout=240)
        self.assertIn("tests completed and passed", p.stdout)
        calls = {}
        for r in got:
            for fn, n in r["checked"].items():
                calls[fn] = calls.get(fn, 0) + n
        for fn in ("MPI_Comm_create", "MPI_Comm_free", "MPI_Isend", "MPI_Testall", "MPI_Recv",
                   "MPI_Allreduce", "MPI_Bcast"):
            self.assertGreater(calls.get(fn, 0), 0, fn)

    def test_check_fails_when_a_wrapper_changes_an_argument(self):
        # broken_wrappers.c sits where the recorder would: its MPI_Isend
        # hands PMPI a copy of the buffer, its MPI_Waitall gives the program
        # back a request PMPI had freed.
        checks = os.path.join(self.tmp, "checks")
        os.mkdir(checks)
        p = subprocess.run(MPIRUN + ["-np", "2", "-x", "LD_PRELOAD=%s:%s" % (ARGCHECK, BROKEN),
                                     "-x", "DLTRACE_ARGCHECK_DIR=" + checks, prog("dltrace-mpi-halo")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        got = reports(checks)
        self.assertEqual(len(got), 2, p.stderr[-2000:])
        for r in got:
            self.assertGreater(r["mismatches"], 0)
            self.assertTrue(any(l.startswith("MPI_Isend: on entry buf was ") for l in r["lines"]),
                            r["lines"])
            self.assertTrue(any(l.startswith("MPI_Waitall: on return what array_of_requests "
                                             "points to differs") for l in r["lines"]), r["lines"])
            self.assertEqual(r["checked"]["MPI_Allreduce"], 20)  # the rest passed unchanged
        self.assertIn("dltrace-argcheck: MPI_Isend: on entry buf was ", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
