#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate --engine ns3` on AI-cluster fabrics (multi-GPU hosts, an
NVSwitch per host, rail-optimized NICs), over TCP and RDMA: several ranks of a
job run on one host (a GPU node each), traffic between GPUs of one host
crosses NVLink and never a NIC, and each NIC's bytes match what a ring
all-reduce puts on it, in closed form: rail-aligned over TCP (channel c leaves
and enters every host through NIC c % G, an NVLink hop to that GPU and on),
the GPUs' own NICs over RDMA (no relays there). The bytes come from nics.csv
and links.csv; a progress line says what will be simulated."""
import csv
import os
import tempfile
import unittest

from views_fixtures import link_totals, run, sample_trace

GPUS = 4          # per host
HOSTS = 2
CHANNELS = 4
S = 3_200_000     # bytes per all-reduce: a whole number of chunks for every ring below


def nic_rows(out):
    with open(os.path.join(out, "nics.csv")) as f:
        return {row["gpu"]: row for row in csv.DictReader(f)}


def ring_bytes_per_rank(n, size, channels=1):
    """Payload each rank of a ring all-reduce of SIZE bytes over N ranks sends
    on each of CHANNELS channels (reduce-scatter, then all-gather)."""
    return 2 * (n - 1) / n * size / channels


class Ns3FabricTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # One all-reduce of S bytes: 4 ranks (one host's GPUs), and 8 (two hosts).
        cls.four = sample_trace(os.path.join(cls.tmp.name, "four"), ranks=GPUS, hosts=1, buckets=1,
                                bucket_bytes=S)
        cls.eight = sample_trace(os.path.join(cls.tmp.name, "eight"), ranks=HOSTS * GPUS, hosts=HOSTS,
                                 buckets=1, bucket_bytes=S)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def simulate(self, name, trace, transport, channels=1, extra=()):
        out = os.path.join(self.tmp.name, name)
        r = run("simulate", "--engine", "ns3", "--job", f"{trace}:algo=ring:channels={channels}",
                "--topo", f"rail-optimized:hosts={HOSTS},gpus={GPUS}", "--transport", transport,
                "--time-scale", "0", "-o", out, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all received", r.stdout)
        return out, r

    def check_one_host(self, transport):
        # Tensor-parallel traffic: a ring over the 4 GPUs of host 0 moves its
        # bytes over NVLink (each GPU's link to h0.nvs, both ways) and none
        # through a NIC, not even a handshake.
        out, r = self.simulate("tp-" + transport, self.four, transport)
        self.assertIn("dltrace simulate (ns3): 4 endpoints of 1 job on 2 hosts x 4 GPUs", r.stderr)
        nics = nic_rows(out)
        self.assertEqual(len(nics), HOSTS * GPUS, "one NIC port per GPU")
        for gpu, row in nics.items():
            self.assertEqual(float(row["sent_bytes"]), 0, gpu)
            self.assertEqual(float(row["received_bytes"]), 0, gpu)
        links = link_totals(out)
        each = ring_bytes_per_rank(GPUS, S)
        for k in range(GPUS):
            up = links[f"h0.g{k}-h0.nvs"]
            down = links[f"h0.nvs-h0.g{k}"]
            # Payload plus headers and acknowledgements: at most 15% more.
            self.assertGreaterEqual(up, each, k)
            self.assertLessEqual(up, 1.15 * each, k)
            self.assertGreaterEqual(down, each, k)
            self.assertLessEqual(down, 1.15 * each, k)
        for k in range(GPUS):
            self.assertEqual(links[f"h1.g{k}-h1.nvs"], 0)
        self.assertIn("fabric:", r.stdout)

    def test_tensor_parallel_bytes_stay_on_nvlink_tcp(self):
        self.check_one_host("tcp")

    def test_tensor_parallel_bytes_stay_on_nvlink_rdma(self):
        self.check_one_host("rdma")

    def test_rail_aligned_ring_over_tcp(self):
        # Ranks 0-3 on host 0's GPUs, 4-7 on host 1's; the ring 0 -> 1 -> ...
        # -> 7 -> 0 crosses hosts at 3 -> 4 and 7 -> 0. Channel c's crossing
        # leaves through NIC c % 4 of the sending host (NCCL_CROSS_NIC=2):
        # every NIC sends one channel's share of the all-reduce.
        out, r = self.simulate("rail-tcp", self.eight, "tcp", channels=CHANNELS)
        n = HOSTS * GPUS
        expected = {k: 0.0 for k in range(GPUS)}
        for c in range(CHANNELS):
            expected[c % GPUS] += ring_bytes_per_rank(n, S, CHANNELS)
        nics = nic_rows(out)
        for h in range(HOSTS):
            for k in range(GPUS):
                row = nics[f"h{h}.g{k}"]
                sent, received = float(row["sent_bytes"]), float(row["received_bytes"])
                self.assertGreaterEqual(sent, expected[k], row)
                self.assertLessEqual(sent, 1.1 * expected[k], row)
                self.assertGreaterEqual(received, expected[k], row)
                self.assertLessEqual(received, 1.1 * expected[k], row)
        # The relays cross NVLink: GPU 3 of host 0 hands channels 0-2 of its
        # crossing to GPUs 0-2 (3/4 of its share), and GPU 3 relays channel 3
        # of the crossing 7 -> 0 that enters by its NIC on to GPU 0 (1/4).
        links = link_totals(out)
        each = ring_bytes_per_rank(n, S)
        self.assertGreaterEqual(links["h0.g3-h0.nvs"], each)
        self.assertLessEqual(links["h0.g3-h0.nvs"], 1.1 * each)
        self.assertIn("fabric:", r.stdout)

    def test_direct_nics_over_rdma(self):
        # RDMA takes every QP's direct path: the crossing 3 -> 4 leaves by host
        # 0's GPU 3 NIC with all channels, 7 -> 0 by host 1's GPU 3; GPU 0's
        # NICs send the acknowledgements of what they receive, the others nothing.
        out, r = self.simulate("direct-rdma", self.eight, "rdma", channels=CHANNELS)
        each = ring_bytes_per_rank(HOSTS * GPUS, S)
        nics = nic_rows(out)
        for h in range(HOSTS):
            last = nics[f"h{h}.g{GPUS - 1}"]
            self.assertGreaterEqual(float(last["sent_bytes"]), each, last)
            self.assertLessEqual(float(last["sent_bytes"]), 1.15 * each, last)
            first = nics[f"h{h}.g0"]
            self.assertGreaterEqual(float(first["received_bytes"]), each, first)
            self.assertLessEqual(float(first["sent_bytes"]), 0.15 * each, first)
            for k in range(1, GPUS - 1):
                row = nics[f"h{h}.g{k}"]
                self.assertEqual(float(row["sent_bytes"]), 0, row)
                self.assertEqual(float(row["received_bytes"]), 0, row)


if __name__ == "__main__":
    unittest.main()
