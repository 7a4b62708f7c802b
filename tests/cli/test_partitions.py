#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate --engine ns3 --partitions N`: what cannot be partitioned
is refused with one line before anything runs (more partitions than leaves
or pods, a topology with no cut of point-to-point links, a zero lookahead,
the UET transport, fast-forward, a bad map file, and a build whose ns-3 has no MPI), and
nothing is written. Runs on any ns-3 build (the checks come before MPI)."""
import os
import tempfile
import unittest

from views_fixtures import ns3_built_with_mpi as built_with_mpi, run, synth_resnet50


class PartitionRefusalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = os.path.join(cls.tmp.name, "r50")
        synth_resnet50(cls.trace, 4, 1, 1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def refused(self, words, *args):
        out = os.path.join(self.tmp.name, "out-%d" % len(os.listdir(self.tmp.name)))
        r = run("simulate", self.trace, "--engine", "ns3", *args, "-o", out)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        for w in words:
            self.assertIn(w, lines[0])
        self.assertFalse(os.path.exists(out), "nothing is written for a refused run")

    def test_more_partitions_than_leaves_is_refused(self):
        # 2 leaves x 2 hosts: two parts by leaf.
        self.refused(["--partitions 3", "more than the 2 parts", "by leaf"],
                     "--topo", "leaf-spine:leaves=2,hosts-per-leaf=2", "--partitions", "3")

    def test_more_partitions_than_pods_is_refused(self):
        # k=4 fat-tree: 4 pods.
        self.refused(["--partitions 5", "more than the 4 parts", "by pod"],
                     "--topo", "fat-tree:k=4", "--partitions", "5")

    def test_topology_without_a_cut_is_refused(self):
        # A star is one switch with every host: no leaf or pod to cut between.
        self.refused(["--partitions 2", "no cut of point-to-point links"],
                     "--topo", "star", "--partitions", "2")

    def test_zero_lookahead_is_refused(self):
        self.refused(["zero delay", "lookahead is 0"],
                     "--topo", "leaf-spine:leaves=2,hosts-per-leaf=2,delay=0us", "--partitions", "2")

    def test_uet_is_refused(self):
        self.refused(["--transport uet", "tcp or rdma"], "--topo", "leaf-spine:leaves=2,hosts-per-leaf=2",
                     "--transport", "uet", "--partitions", "2")

    def test_fast_forward_is_refused(self):
        self.refused(["--fast-forward", "not with --partitions"], "--topo", "leaf-spine:leaves=2,hosts-per-leaf=2",
                     "--transport", "rdma", "--fast-forward", "--partitions", "2")

    def test_partition_options_need_partitions(self):
        self.refused(["go with --partitions"], "--topo", "leaf-spine:leaves=2", "--pdes", "barrier")

    def test_bad_map_files_are_refused(self):
        topo = ("--topo", "leaf-spine:leaves=2,hosts-per-leaf=2,spines=1")
        path = os.path.join(self.tmp.name, "map.txt")
        nodes = ["h0 0", "h1 0", "h2 1", "h3 1", "leaf0 0", "leaf1 1", "spine0 1"]
        cases = [
            (nodes[:-1], ["node spine0 has no partition"]),
            (nodes + ["leaf9 0"], ["map.txt:8", "no node named leaf9"]),
            (nodes[:-1] + ["spine0 2"], ["map.txt:7", "partition 2 is not in 0..1"]),
            (nodes + ["h0 1"], ["map.txt:8", "h0 is mapped twice"]),
            (["h0"], ["map.txt:1", "expected NODE PARTITION"]),
            (["h%d 0" % h for h in range(4)] + ["leaf0 0", "leaf1 0", "spine0 0"], ["no point-to-point link crosses"]),
        ]
        for lines, words in cases:
            with self.subTest(lines=lines):
                with open(path, "w") as f:
                    f.write("\n".join(lines) + "\n")
                self.refused(words, *topo, "--partitions", "2", "--partition-map", path)

    def test_a_build_without_mpi_says_how_to_get_one(self):
        if built_with_mpi():
            self.skipTest("this dltrace's ns-3 has MPI (test_partitions_mpi.py runs it)")
        self.refused(["built without MPI", "NS3_MPI=1 scripts/ns3-contrib-build.sh"],
                     "--topo", "leaf-spine:leaves=2,hosts-per-leaf=2", "--partitions", "2")


if __name__ == "__main__":
    unittest.main()
