#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The MPI table (record/tables/mpi.py) against the MPI library's own mpi.h
(Open MPI 4.1 on Debian 12): every function that moves data or makes a
communicator, a window or a matched message is wrapped, unless it is one of
the deliberate omissions below, each with its reason. Which functions those
are is read from mpi.h's prototypes, not from the table."""
import os
import re
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "record"))
import gen_wrappers  # noqa: E402

MPI_H = os.environ.get("DLTRACE_MPI_H", "/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h")

# Functions the rules below select that the recorder deliberately leaves out.
OMISSIONS = {
    # Local: they move bytes within the process (the communicator only says
    # whose data representation to use).
    "MPI_Pack": "local packing",
    "MPI_Unpack": "local unpacking",
    # Attribute caching: the void* is an attribute value, nothing moves.
    "MPI_Attr_get": "attribute cache", "MPI_Attr_put": "attribute cache",
    "MPI_Comm_get_attr": "attribute cache", "MPI_Comm_set_attr": "attribute cache",
    "MPI_Win_get_attr": "attribute cache", "MPI_Win_set_attr": "attribute cache",
    # Memory registration of dynamic windows, and the address of a shared
    # window's segment: nothing moves.
    "MPI_Win_attach": "registers memory", "MPI_Win_detach": "unregisters memory",
    "MPI_Win_shared_query": "local query",
    # Dynamic processes: communicators with processes outside the recorded
    # job, which no replay or simulation could place.
    "MPI_Comm_spawn": "dynamic processes", "MPI_Comm_spawn_multiple": "dynamic processes",
    "MPI_Comm_accept": "dynamic processes", "MPI_Comm_connect": "dynamic processes",
    "MPI_Comm_join": "dynamic processes", "MPI_Comm_get_parent": "dynamic processes",
    "MPI_Comm_disconnect": "dynamic processes",
}

SYNCS = r"MPI_Win_(fence|lock|lock_all|unlock|unlock_all|post|start|complete|wait|test|flush" \
        r"|flush_all|flush_local|flush_local_all)$"


def prototypes():
    with open(MPI_H) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"OMPI_DECLSPEC\s+int\s+(MPI_\w+)\s*\(([^;]*?)\)[^;]*;", text, re.S):
        out[m.group(1)] = " ".join(m.group(2).split())
    return out


def selected(protos):
    """What the recorder must wrap, by mpi.h's prototypes alone."""
    out = set()
    for name, params in protos.items():
        moves = re.search(r"\bvoid\s*\*", params) and re.search(r"\b(MPI_Comm|MPI_Win|MPI_Message)\b", params)
        makes = re.search(r"\b(MPI_Comm|MPI_Win|MPI_Message)\s*\*", params)
        syncs = re.match(SYNCS, name)
        if moves or makes or syncs:
            out.add(name)
    return out


class MpiTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MPI_H):
            raise unittest.SkipTest(f"skipped: no {MPI_H} (apt-get install libopenmpi-dev)")
        cls.protos = prototypes()
        cls.table = {r.name for r in gen_wrappers.load_table("mpi")}

    def test_every_function_that_moves_data_or_makes_a_communicator_is_wrapped(self):
        missing = sorted(selected(self.protos) - self.table - set(OMISSIONS))
        self.assertEqual(missing, [], "data-moving MPI functions neither wrapped nor listed as "
                                      "deliberate omissions in this test")

    def test_the_families_of_mpi_3_1_are_all_there(self):
        for name in ("MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Get_accumulate",
                     "MPI_Fetch_and_op", "MPI_Compare_and_swap", "MPI_Rput", "MPI_Rget",
                     "MPI_Win_fence", "MPI_Win_lock", "MPI_Win_unlock_all", "MPI_Win_post",
                     "MPI_Win_start", "MPI_Win_complete", "MPI_Win_wait", "MPI_Win_flush",
                     "MPI_Neighbor_alltoallv", "MPI_Ineighbor_alltoallw", "MPI_Igatherv",
                     "MPI_Iscatterv", "MPI_Iallgatherv", "MPI_Ialltoallw", "MPI_Iscan",
                     "MPI_Iexscan", "MPI_Mprobe", "MPI_Improbe", "MPI_Mrecv", "MPI_Imrecv",
                     "MPI_Comm_create_group", "MPI_Comm_idup", "MPI_Intercomm_create",
                     "MPI_Intercomm_merge", "MPI_Cart_sub", "MPI_Graph_create",
                     "MPI_Dist_graph_create", "MPI_Dist_graph_create_adjacent"):
            self.assertIn(name, self.table)

    def test_omissions_are_real_and_not_wrapped(self):
        for name in OMISSIONS:
            self.assertIn(name, self.protos, name + " is not in mpi.h: drop it from the list")
            self.assertNotIn(name, self.table, name + " is wrapped: drop it from the omissions")

    def test_every_row_is_a_function_of_mpi_h_with_its_parameter_count(self):
        for row in gen_wrappers.load_table("mpi"):
            self.assertIn(row.name, self.protos)
            params = [p for p in gen_wrappers.split_top(self.protos[row.name]) if p and p != "void"]
            self.assertEqual(len(row.params), len(params), row.name)

    def test_the_rule_sees_a_data_moving_function_left_out(self):
        # The check itself can fail: take a wrapped function away.
        protos = dict(self.protos)
        self.assertIn("MPI_Neighbor_alltoallv", selected(protos) - (self.table - {"MPI_Neighbor_alltoallv"}))


if __name__ == "__main__":
    unittest.main(verbosity=2)
