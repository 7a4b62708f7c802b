#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The recorder never changes what MPI does: every C wrapper hands PMPI the
arguments the program passed (buffers, counts, datatypes, requests and what
the request and status arrays hold) and hands the program back what PMPI
returned. libdltrace-mpi-argcheck.so (record/tools/mpi_argcheck.cc),
preloaded in front of the recorder, compares both sides of every call of the
record tests' programs and of a real ScaLAPACK driver under the recorder;
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
from record_fixtures import MPIRUN, SRC, ScratchTestCase  # noqa: E402

ARGCHECK = os.environ["DLTRACE_ARGCHECK_LIB"]
RECORD_LIB = os.environ["DLTRACE_RECORD_LIB"]
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


# The programs the record tests run, each as (program, ranks, its arguments);
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

# Rows none of these programs call: MPI_Abort ends the job (the exit paths
# are test_mpi_record.py's); no C test program calls the rest yet. A row
# added to the table must be called by one of the programs or listed here.
NOT_CALLED = {
    "MPI_Abort",
    "MPI_Bsend_init", "MPI_Rsend_init", "MPI_Ssend_init", "MPI_Ibsend", "MPI_Irsend",
    "MPI_Comm_dup_with_info", "MPI_Graph_create", "MPI_Dist_graph_create",
    "MPI_Neighbor_allgatherv", "MPI_Neighbor_alltoallw", "MPI_Ineighbor_allgather",
    "MPI_Ineighbor_allgatherv", "MPI_Ineighbor_alltoallw",
    "MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_create_dynamic", "MPI_Win_test",
    "MPI_Win_flush_all", "MPI_Win_flush_local", "MPI_Win_flush_local_all",
    "MPI_Get_accumulate", "MPI_Rget", "MPI_Raccumulate", "MPI_Rget_accumulate",
}


def reports(directory):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "argcheck.*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


class ArgumentCheckTest(ScratchTestCase):
    def record_checked(self, argv, ranks, cwd=None, timeout=240):
        """ARGV run on RANKS ranks under the recorder with the argument check
        in front of it (mpirun -x LD_PRELOAD=argcheck:recorder, a launch form
        the recorder documents): the ranks' reports, and the run."""
        run = os.path.join(self.tmp, "run%d" % len(os.listdir(self.tmp)))
        checks, trace = run + ".argcheck", os.path.join(run, "trace")
        for d in (run, checks, trace):
            os.mkdir(d)
        env = dict(os.environ, DLTRACE_OUTPUT=trace, DLTRACE_ARGCHECK_DIR=checks, DLTRACE_QUIET="1")
        argv = [a.format(out=run) for a in argv]
        p = subprocess.run(MPIRUN + ["-np", str(ranks), "-x", "LD_PRELOAD=%s:%s" % (ARGCHECK, RECORD_LIB),
                                     "-x", "DLTRACE_OUTPUT", "-x", "DLTRACE_ARGCHECK_DIR",
                                     "-x", "DLTRACE_QUIET"] + argv,
                           cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertNotIn("dltrace-argcheck:", p.stderr)
        self.assertEqual(len([f for f in os.listdir(trace) if f.endswith(".dltrace")]), ranks)  # recorded
        got = reports(checks)
        self.assertEqual(len(got), ranks, p.stderr[-2000:])  # one report per rank
        for r in got:
            self.assertEqual(r["mismatches"], 0, r["lines"])
            self.assertTrue(r["checked"], r)  # the check saw the program's calls
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
        # Every C wrapper but those listed was checked at least once.
        self.assertEqual(sorted(table_functions() - checked - NOT_CALLED), [])
        self.assertEqual(sorted(checked & NOT_CALLED), [])  # the list stays true
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
        # broken_wrappers.c sits between the check and the recorder: its
        # MPI_Isend hands PMPI a copy of the buffer, its MPI_Waitall gives
        # the program back a request PMPI had freed; the rest reaches the
        # recorder and goes through unchanged.
        checks, trace = os.path.join(self.tmp, "checks"), os.path.join(self.tmp, "trace")
        os.mkdir(checks)
        os.mkdir(trace)
        p = subprocess.run(MPIRUN + ["-np", "2", "-x", "LD_PRELOAD=%s:%s:%s" % (ARGCHECK, BROKEN, RECORD_LIB),
                                     "-x", "DLTRACE_ARGCHECK_DIR=" + checks, "-x", "DLTRACE_OUTPUT=" + trace,
                                     "-x", "DLTRACE_QUIET=1", prog("dltrace-mpi-halo")],
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
            # and nothing else: the recorder's wrappers passed
            self.assertEqual([l for l in r["lines"] if not l.startswith(("MPI_Isend:", "MPI_Waitall:"))],
                             [])
            self.assertEqual(r["checked"]["MPI_Allreduce"], 20)
        self.assertIn("dltrace-argcheck: MPI_Isend: on entry buf was ", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
