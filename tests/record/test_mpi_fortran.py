#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The MPI recorder sees Fortran programs: one call sequence (point-to-point,
probe, nonblocking with Waitall/Waitany/Waitsome/Testall, collectives with
their v and w forms, MPI_IN_PLACE, split and duplicated communicators,
persistent requests) written in C and in Fortran, the Fortran
one built three ways (mpif.h, use mpi, use mpi_f08), each run under real
mpirun with and without `dltrace record`. The C recording, whose wrappers
test_mpi_record.py checks against what the program logged, is the reference:
every Fortran recording must hold the same operations with the same counts,
bytes, peers, tags, datatypes and communicators, and every program's output
must be what it prints without the recorder."""
import os
import subprocess
import sys
import tempfile
import shutil
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_mpi_record import DLTRACE, MPIRUN, dump, info, prog  # noqa: E402

NP = 4
FORTRAN = {"mpif.h": "dltrace-mpi-twin-mpifh", "use mpi": "dltrace-mpi-twin-usempi",
           "use mpi_f08": "dltrace-mpi-twin-f08"}


def run(argv, out=None):
    cmd = ([DLTRACE, "record", "-o", out, "--"] if out else []) + MPIRUN + ["-np", str(NP)] + argv
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def recording(out):
    """Per rank: the ops in issue order, as comparable tuples, and the
    communicators by file id."""
    ranks = {}
    for rank in range(NP):
        rc, recs, err = dump(out, rank)
        assert rc == 0, err
        comms = {r["id"]: (r["name"], r["size"], tuple(r["members"]))
                 for r in recs if r["type"] == "comm"}
        ops = sorted((r for r in recs if r["type"] == "op"),
                     key=lambda r: (r["enter_ns"], r["kind"], r["peer"]))
        ranks[rank] = [(o["kind"], comms.get(o["comm"]), o["count"], o["bytes"], o["datatype"],
                        o["red_op"], o["peer"], o["tag"], o.get("peer_send_bytes"),
                        o.get("peer_recv_bytes"), "completion_ns" in o)
                       for o in ops]
    return ranks


def without_polls(ops):
    # How often a Test* or Waitsome loop polls depends on timing, not on the program.
    return [o for o in ops if not o[0].startswith("MPI_Test") and o[0] != "MPI_Waitsome"]


class FortranTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-fortran-")
        out = os.path.join(cls.tmp, "c")
        cls.c_plain = run([prog("dltrace-mpi-twin-c")])
        cls.c_rec = run([prog("dltrace-mpi-twin-c")], out)
        assert cls.c_rec.returncode == 0, cls.c_rec.stderr
        cls.c_out = out
        cls.reference = recording(out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_c_twin_output_unchanged_and_recorded(self):
        self.assertEqual(self.c_plain.returncode, 0, self.c_plain.stderr)
        self.assertEqual(sorted(self.c_rec.stdout.splitlines()),
                         sorted(self.c_plain.stdout.splitlines()))
        for rank, ops in self.reference.items():
            kinds = [o[0] for o in ops]
            # Closed-form spot checks of the reference itself: 16 doubles
            # (128 bytes) per message; the persistent pair started 4 times;
            # one more Isend for the matched probe.
            self.assertEqual(kinds.count("MPI_Isend"), 5 + 4 + 1, rank)
            # One-sided: 4 doubles put to the right, 2 got from the left, in
            # the epoch the first fence opened; the matched receive of 3
            # doubles from the partner; 2 doubles to each ring neighbour.
            one = lambda kind: [o for o in ops if o[0] == kind]
            right, left = (rank + 1) % NP, (rank - 1) % NP
            self.assertEqual([(o[3], o[6], o[7]) for o in one("MPI_Put")], [(32, right, 1)])
            self.assertEqual([(o[3], o[6], o[7]) for o in one("MPI_Get")], [(16, left, 1)])
            self.assertEqual([(o[3], o[6], o[7]) for o in one("MPI_Mrecv")], [(24, rank ^ 1, 16)])
            self.assertEqual([o[8] for o in one("MPI_Neighbor_alltoall")],
                             [[16 if i in (left, right) else 0 for i in range(NP)]])
            self.assertEqual(kinds.count("MPI_Irecv"), 4 + 4, rank)
            # Alltoallv and w: rank r sends i + 1 ints to rank i, gets r + 1 from each.
            for kind in ("MPI_Alltoallv", "MPI_Alltoallw"):
                o = [o for o in ops if o[0] == kind][0]
                self.assertEqual((o[8], o[9]), ([4 * (i + 1) for i in range(NP)],
                                                [4 * (rank + 1)] * NP), kind)
            allreduce = [o for o in ops if o[0] == "MPI_Allreduce"]
            self.assertEqual([o[3] for o in allreduce], [128, 128, 128])
            self.assertEqual(allreduce[2][1][2], tuple(range(rank % 2, NP, 2)))  # the split half
            self.assertTrue(all(o[10] for o in ops if o[0] in ("MPI_Isend", "MPI_Irecv")))

    def _check_twin(self, flavour):
        name = FORTRAN[flavour]
        try:
            path = prog(name)
        except FileNotFoundError:
            self.skipTest(f"{name} not built (no gfortran, or Open MPI lacks {flavour})")
        plain = run([path])
        self.assertEqual(plain.returncode, 0, plain.stderr)
        # The Fortran program computes what the C one does.
        self.assertEqual(sorted(plain.stdout.splitlines()),
                         sorted(self.c_plain.stdout.splitlines()))
        out = os.path.join(self.tmp, name)
        rec = run([path], out)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertEqual(sorted(rec.stdout.splitlines()), sorted(plain.stdout.splitlines()))
        self.assertIn("dltrace: traces in " + out, rec.stderr)
        got = recording(out)
        for rank in range(NP):
            want = self.reference[rank]
            self.assertEqual(without_polls(got[rank]), without_polls(want), f"{flavour} rank {rank}")
            self.assertTrue([o for o in got[rank] if o[0] == "MPI_Testall" and o[10] is False])
        rc, j, err = info(out)
        self.assertEqual(rc, 0, err)
        self.assertTrue(j["complete"])
        # Each rank's MPI_COMM_SELF is listed once, as one per rank.
        selves = [c for c in j["communicators"] if c["name"] == "MPI_COMM_SELF"]
        self.assertEqual(len(selves), 1, j["communicators"])
        self.assertEqual((selves[0]["size"], selves[0]["members"], selves[0]["per_rank"]),
                         (1, list(range(NP)), True))
        # The merged view pairs every send with its receive.
        p = subprocess.run([DLTRACE, "schedule", out, "--algo", "recorded", "--no-steps"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("no matching", p.stderr)

    def test_mpif_h_program_recorded_like_its_c_twin(self):
        self._check_twin("mpif.h")

    def test_use_mpi_program_recorded_like_its_c_twin(self):
        self._check_twin("use mpi")

    def test_use_mpi_f08_program_recorded_like_its_c_twin(self):
        self._check_twin("use mpi_f08")

    def test_more_f08_calls_recorded_with_their_fields(self):
        # The rows the twins leave out, checked against what the program does:
        # 4 integers (16 bytes) per operation, to the right, from the left.
        try:
            path = prog("dltrace-mpi-f08-more")
        except FileNotFoundError:
            self.skipTest("dltrace-mpi-f08-more not built (no gfortran or no mpi_f08)")
        plain = run([path])
        self.assertEqual(plain.returncode, 0, plain.stderr)
        out = os.path.join(self.tmp, "f08-more")
        rec = run([path], out)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertEqual(rec.stdout, plain.stdout)
        for rank, ops in recording(out).items():
            right, left = (rank + 1) % NP, (rank - 1) % NP
            got = [(o[0], o[1][0] if o[1] else None, o[3], o[4], o[5], o[6], o[7], o[10])
                   for o in ops if o[0] not in ("MPI_Testany", "MPI_Testsome", "MPI_Iprobe",
                                                 "MPI_Test", "MPI_Wait")]
            got.sort(key=lambda o: o[0])
            want = sorted([
                ("MPI_Init", None, 0, "unknown", "None", -1, -1, False),
                ("MPI_Scan", "cart", 16, "int32", "Sum", -1, -1, False),
                ("MPI_Exscan", "split_type", 16, "int32", "Max", -1, -1, False),
                ("MPI_Ibcast", "MPI_COMM_WORLD", 16, "int32", "None", 0, -1, True),
                ("MPI_Ibarrier", "MPI_COMM_WORLD", 0, "unknown", "None", -1, -1, True),
                ("MPI_Issend", "MPI_COMM_WORLD", 16, "int32", "None", right, 3, True),
                ("MPI_Irecv", "MPI_COMM_WORLD", 16, "int32", "None", left, 3, True),
                ("MPI_Ireduce_scatter_block", "MPI_COMM_WORLD", 4 * NP, "int32", "Sum", -1, -1,
                 True),
                ("MPI_Finalize", None, 0, "unknown", "None", -1, -1, False)], key=lambda o: o[0])
            self.assertEqual(got, want, f"rank {rank}")

    def test_info_shows_mpi_comm_self_once(self):
        p = subprocess.run([DLTRACE, "info", self.c_out], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [l for l in p.stdout.splitlines() if "MPI_COMM_SELF" in l]
        self.assertEqual(len(lines), 1, p.stdout)
        self.assertIn(f"each of 0-{NP - 1} alone", lines[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
