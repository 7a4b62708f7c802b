#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tests/mpi/mpi_families.c recorded under real mpirun (4 ranks): what each
rank recorded for the neighbourhood collectives, one-sided epochs, the newer
nonblocking collectives, matched probes and the intercommunicator equals the
closed forms written here (from the program's pattern, not from the
recorder), and the set lowers without a forced op and replays over loopback
moving every scheduled byte."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from record_fixtures import DLTRACE, MPIRUN, dump, replayed_every_byte

BIN = os.environ["DLTRACE_TEST_BIN"]
P, N = 4, 1000
D, I = 8, 4  # sizeof(double), sizeof(int)


def records(path, rank):
    """RANK's records, read back without error."""
    rc, recs, err = dump(path, rank)
    assert rc == 0, err
    return recs


class MpiFamiliesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-families-")
        cls.set = os.path.join(cls.tmp, "run")
        prog = os.path.join(BIN, "mpi", "dltrace-mpi-families")
        p = subprocess.run([DLTRACE, "record", "-o", cls.set, "--", *MPIRUN, "-np", str(P), prog,
                            str(N)], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        cls.recs = {r: records(cls.set, r) for r in range(P)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ops(self, rank, kind):
        ops = sorted((o for o in self.recs[rank] if o["type"] == "op"), key=lambda o: o["enter_ns"])
        return [o for o in ops if o["kind"] == kind]

    def comm(self, rank, op):
        return [c for c in self.recs[rank] if c["type"] == "comm" and c["id"] == op["comm"]][0]

    def one(self, rank, kind):
        got = self.ops(rank, kind)
        self.assertEqual(len(got), 1, f"rank {rank} {kind}")
        return got[0]

    def per_peer(self, entries):
        v = [0] * P
        for peer, b in entries:
            v[peer] += b
        return v

    def test_neighbourhood_collectives_record_bytes_per_neighbour(self):
        for r in range(P):
            left, right = (r - 1) % P, (r + 1) % P
            # the halo exchange: N(r+1) doubles to each side of the ring
            for kind in ("MPI_Neighbor_alltoallv", "MPI_Ineighbor_alltoallv"):
                o = self.one(r, kind)
                self.assertEqual(o["bytes"], 2 * N * (r + 1) * D, kind)
                self.assertEqual(o["peer_send_bytes"],
                                 self.per_peer([(left, N * (r + 1) * D), (right, N * (r + 1) * D)]))
                self.assertEqual(o["peer_recv_bytes"],
                                 self.per_peer([(left, N * (left + 1) * D), (right, N * (right + 1) * D)]))
                self.assertEqual(self.comm(r, o)["name"], "cart")
            o = self.one(r, "MPI_Neighbor_allgather")
            self.assertEqual(o["bytes"], 2 * N * I)
            self.assertEqual(o["peer_send_bytes"], self.per_peer([(left, N * I), (right, N * I)]))
            # the directed ring: to the right only, from the left only
            for kind in ("MPI_Neighbor_alltoall", "MPI_Ineighbor_alltoall"):
                o = self.one(r, kind)
                self.assertEqual(o["bytes"], N * I)
                self.assertEqual(o["peer_send_bytes"], self.per_peer([(right, N * I)]))
                self.assertEqual(o["peer_recv_bytes"], self.per_peer([(left, N * I)]))
                self.assertEqual(self.comm(r, o)["name"], "dist_graph_adjacent")

    def test_one_sided_ops_carry_window_target_bytes_and_epoch(self):
        for r in range(P):
            left, right = (r - 1) % P, (r + 1) % P
            puts = self.ops(r, "MPI_Put")
            self.assertEqual([(o["peer"], o["bytes"], o["tag"]) for o in puts],
                             [(right, N * D, 1), (right, 2 * N * D, 2), (right, 3 * N, 4)])
            get = self.one(r, "MPI_Get")
            self.assertEqual((get["peer"], get["bytes"], get["tag"]), (left, N // 2 * D, 1))
            acc = self.one(r, "MPI_Accumulate")
            self.assertEqual((acc["peer"], acc["bytes"], acc["tag"], acc["red_op"]),
                             ((r + 2) % P, N * I, 1, "Sum"))
            fao = self.one(r, "MPI_Fetch_and_op")
            self.assertEqual((fao["peer"], fao["bytes"], fao["tag"]), (0, 8, 3))
            cas = self.one(r, "MPI_Compare_and_swap")
            self.assertEqual((cas["peer"], cas["bytes"], cas["tag"]), (0, I, 3))
            rput = self.one(r, "MPI_Rput")
            self.assertEqual((rput["peer"], rput["bytes"], rput["tag"]), (right, N * D, 3))
            # every op is on the window, and completes at its epoch's closing call
            win = {o["comm"] for o in puts + [get, acc, fao, cas, rput]}
            self.assertEqual(len(win), 1)
            self.assertEqual(self.comm(r, puts[0])["name"], "win")
            fences = self.ops(r, "MPI_Win_fence")
            self.assertEqual([f["tag"] for f in fences], [0, 1])
            for o in (puts[0], get, acc):
                self.assertGreaterEqual(o["completion_ns"], fences[1]["enter_ns"])
                self.assertLessEqual(o["completion_ns"], fences[1]["exit_ns"])
            unlock = self.one(r, "MPI_Win_unlock")
            self.assertEqual((unlock["peer"], unlock["tag"]), (right, 2))
            self.assertGreaterEqual(puts[1]["completion_ns"], unlock["enter_ns"])
            flush = self.one(r, "MPI_Win_flush")
            for o in (fao, cas):
                self.assertGreaterEqual(o["completion_ns"], flush["enter_ns"])
                self.assertLessEqual(o["completion_ns"], flush["exit_ns"])
            complete = self.one(r, "MPI_Win_complete")
            self.assertEqual(complete["tag"], 4)
            self.assertGreaterEqual(puts[2]["completion_ns"], complete["enter_ns"])
            self.assertEqual(self.one(r, "MPI_Win_wait")["tag"], 5)
            for kind in ("MPI_Win_lock", "MPI_Win_lock_all", "MPI_Win_unlock_all", "MPI_Win_post",
                         "MPI_Win_start"):
                self.one(r, kind)

    def test_every_new_nonblocking_collective_records_its_bytes(self):
        tri = P * (P + 1) // 2  # sum of i+1 over the ranks
        for r in range(P):
            self.assertEqual(self.one(r, "MPI_Igather")["bytes"], N * I * P)
            self.assertEqual(self.one(r, "MPI_Igatherv")["bytes"], tri * I if r == 1 else (r + 1) * I)
            self.assertEqual(self.one(r, "MPI_Iscatter")["bytes"], N * I * P)
            self.assertEqual(self.one(r, "MPI_Iscatterv")["bytes"], tri * I if r == 3 else (r + 1) * I)
            self.assertEqual(self.one(r, "MPI_Iallgatherv")["bytes"], tri * I)
            a2a = sum((r + j + 1) * I for j in range(P))
            for kind in ("MPI_Ialltoallv", "MPI_Ialltoallw"):
                o = self.one(r, kind)
                self.assertEqual(o["bytes"], a2a, kind)
                self.assertEqual(o["peer_send_bytes"], [(r + j + 1) * I for j in range(P)])
            self.assertEqual(self.one(r, "MPI_Iscan")["bytes"], N * D)
            self.assertEqual(self.one(r, "MPI_Iexscan")["bytes"], N * D)
            for kind in ("MPI_Igather", "MPI_Iscan", "MPI_Ialltoallw"):
                o = self.one(r, kind)
                self.assertGreaterEqual(o["completion_ns"], o["exit_ns"])

    def test_matched_probes_and_receives(self):
        for r in range(P):
            left = (r - 1) % P
            probe = self.one(r, "MPI_Mprobe")
            self.assertEqual((probe["peer"], probe["tag"], probe["bytes"]), (left, 7, 100 * (left + 1)))
            recv = self.one(r, "MPI_Mrecv")
            self.assertEqual((recv["peer"], recv["tag"], recv["bytes"]), (left, 7, 100 * (left + 1)))
            self.assertEqual(recv["comm"], probe["comm"])
            self.assertEqual(self.ops(r, "MPI_Improbe")[-1]["bytes"], 50 * (left + 1))
            imrecv = self.one(r, "MPI_Imrecv")
            self.assertEqual((imrecv["peer"], imrecv["bytes"]), (left, 50 * (left + 1)))

    def test_intercommunicator_peers_are_world_ordered_and_merge_keeps_mpi_order(self):
        for r in range(P):
            o = self.one(r, "MPI_Sendrecv")
            c = self.comm(r, o)
            self.assertEqual((c["name"], c["members"]), ("intercomm", list(range(P))))
            partner = r ^ 1  # local rank i of the evens meets local rank i of the odds
            self.assertEqual(o["peer"], partner)
            self.assertEqual(o["peer_send_bytes"], self.per_peer([(partner, 40 * (r + 1))]))
            self.assertEqual(o["peer_recv_bytes"], self.per_peer([(partner, 40 * (partner + 1))]))
            merged = [x for x in self.ops(r, "MPI_Allreduce") if self.comm(r, x)["name"] == "merge"]
            self.assertEqual(len(merged), 1)
            self.assertEqual(self.comm(r, merged[0])["members"], [0, 2, 1, 3])  # low group first
            self.assertEqual(merged[0]["bytes"], N * I)
            bcast = self.one(r, "MPI_Bcast")
            self.assertEqual((self.comm(r, bcast)["name"], bcast["bytes"]), ("idup", N * D))
            self.assertEqual(self.comm(r, self.one(r, "MPI_Barrier"))["name"], "create_group")

    def test_the_set_lowers_without_a_forced_op_and_replays_every_byte(self):
        p = subprocess.run([DLTRACE, "schedule", self.set, "--algo", "recorded", "--no-steps"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("contradicting", p.stderr)
        self.assertNotIn("not recorded on rank", p.stderr)
        self.assertNotIn("not recorded consistently", p.stderr)
        out = os.path.join(self.tmp, "replay")
        p = subprocess.run([DLTRACE, "replay", self.set, "--local", "--no-progress", "-o", out],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        replayed_every_byte(self, out, P)

    def test_one_sided_and_neighbour_ops_lower_to_their_point_to_point_bytes(self):
        """Only the neighbourhood and one-sided parts (the program's second
        form): what each rank sends in the lowered schedule is, in closed
        form, its neighbours' blocks, its puts and accumulates, the replies
        to the gets others make of it (a get is an empty request and its
        reply), both ways of fetch-and-op and compare-and-swap (on rank 0:
        the others' replies; its own, on its own window part, move nothing),
        and no byte for a fence (a barrier of empty messages)."""
        out = os.path.join(self.tmp, "rma")
        prog = os.path.join(BIN, "mpi", "dltrace-mpi-families")
        p = subprocess.run([DLTRACE, "record", "-o", out, "--", *MPIRUN, "-np", str(P), prog, str(N),
                            "neighbors-and-rma"], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([DLTRACE, "schedule", out, "--algo", "recorded", "--no-steps"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("contradicting", p.stderr)
        lines = p.stdout.split("# totals\n")[1].split("\n\n")[0].splitlines()[1:]
        sent = {int(l.split()[0]): int(l.split()[6]) for l in lines}
        for r in range(P):
            neighbours = 2 * 2 * N * (r + 1) * D + 2 * N * I + 2 * N * I
            puts = N * D + 2 * N * D + 3 * N + N * D  # fence, lock, PSCW, Rput
            accumulate, get_reply = N * I, N // 2 * D
            atomics = (P - 1) * (8 + I) if r == 0 else 8 + I
            self.assertEqual(sent[r], neighbours + puts + accumulate + get_reply + atomics, r)
        p = subprocess.run([DLTRACE, "replay", out, "--local", "--no-progress", "-o",
                            os.path.join(self.tmp, "rma-replay")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        replayed_every_byte(self, os.path.join(self.tmp, "rma-replay"), P)

    def test_a_receive_the_recorder_cannot_place_is_counted_and_named(self):
        """A message probed through PMPI_Mprobe, which the recorder does not
        see: its MPI_Mrecv moves data the recorder cannot place, and is
        counted by name instead of silently lost."""
        out = os.path.join(self.tmp, "unrecorded")
        prog = os.path.join(BIN, "mpi", "dltrace-mpi-families")
        p = subprocess.run([DLTRACE, "record", "-o", out, "--", *MPIRUN, "-np", str(P), prog, str(N),
                            "unrecorded-receive"], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("seen but not recorded: MPI_Mrecv 4", p.stderr)
        for r in range(P):
            recs = records(out, r)
            footer = [x for x in recs if x["type"] == "footer"][0]
            self.assertEqual(footer["unrecorded"], {"MPI_Mrecv": 1})
            self.assertEqual([o for o in recs if o["type"] == "op" and o["kind"] == "MPI_Mrecv"], [])
        p = subprocess.run([DLTRACE, "info", out, "--json"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(json.loads(p.stdout)["unrecorded"], {"MPI_Mrecv": P})
        p = subprocess.run([DLTRACE, "info", out], capture_output=True, text=True, timeout=120)
        self.assertIn("seen but not recorded: MPI_Mrecv 4", p.stdout)
        p = subprocess.run([DLTRACE, "info", self.set, "--json"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(json.loads(p.stdout)["unrecorded"], {})

    def test_info_names_the_new_kinds(self):
        p = subprocess.run([DLTRACE, "info", self.set], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        for kind in ("MPI_Neighbor_alltoallv", "MPI_Put", "MPI_Get", "MPI_Win_fence",
                     "MPI_Ialltoallw", "MPI_Mrecv"):
            self.assertIn(kind, p.stdout)
        self.assertNotIn("unknown", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
