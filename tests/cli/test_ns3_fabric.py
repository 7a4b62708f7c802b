#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate --engine ns3` on AI-cluster fabrics (multi-GPU hosts, an
NVSwitch per host, rail-optimized NICs), over TCP and RDMA: several ranks of a
job run on one host (a GPU node each), traffic between GPUs of one host
crosses NVLink and never a NIC, and each NIC's bytes match what a ring
all-reduce puts on it, in closed form: rail-aligned over TCP and RDMA (channel
c leaves and enters every host through NIC c % G, an NVLink hop to that GPU
and on), and an all-to-all with PXN over RDMA puts no byte on a spine. The
bytes come from nics.csv and links.csv; a progress line says what will be
simulated."""
import csv
import os
import subprocess
import tempfile
import unittest

from views_fixtures import SAMPLE, link_totals, run, sample_trace

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

    def check_rail_aligned_ring(self, transport):
        # Ranks 0-3 on host 0's GPUs, 4-7 on host 1's; the ring 0 -> 1 -> ...
        # -> 7 -> 0 crosses hosts at 3 -> 4 and 7 -> 0. Channel c's crossing
        # leaves through NIC c % 4 of the sending host (NCCL_CROSS_NIC=2):
        # every NIC sends one channel's share of the all-reduce.
        out, r = self.simulate("rail-" + transport, self.eight, transport, channels=CHANNELS)
        n = HOSTS * GPUS
        expected = {k: 0.0 for k in range(GPUS)}
        for c in range(CHANNELS):
            expected[c % GPUS] += ring_bytes_per_rank(n, S, CHANNELS)
        nics = nic_rows(out)
        for h in range(HOSTS):
            for k in range(GPUS):
                row = nics[f"h{h}.g{k}"]
                sent, received = float(row["sent_bytes"]), float(row["received_bytes"])
                # Payload plus headers, and the acknowledgements of what it receives: at most 15% more.
                self.assertGreaterEqual(sent, expected[k], row)
                self.assertLessEqual(sent, 1.15 * expected[k], row)
                self.assertGreaterEqual(received, expected[k], row)
                self.assertLessEqual(received, 1.15 * expected[k], row)
        # The relays cross NVLink: GPU 3 of host 0 hands channels 0-2 of its
        # crossing to GPUs 0-2 (3/4 of its share), and GPU 3 relays channel 3
        # of the crossing 7 -> 0 that enters by its NIC on to GPU 0 (1/4).
        links = link_totals(out)
        each = ring_bytes_per_rank(n, S)
        self.assertGreaterEqual(links["h0.g3-h0.nvs"], each)
        self.assertLessEqual(links["h0.g3-h0.nvs"], 1.15 * each)
        self.assertIn("fabric:", r.stdout)

    def test_rail_aligned_ring_over_tcp(self):
        self.check_rail_aligned_ring("tcp")

    def test_rail_aligned_ring_over_rdma(self):
        # RDMA stores and forwards at the relay GPU (a queue pair per stage).
        self.check_rail_aligned_ring("rdma")

    def test_pxn_all_to_all_stays_on_rails_over_rdma(self):
        # An all-to-all of 256 KB from every GPU to every other on one
        # segment: with PXN each cross-host message crosses NVLink to the
        # GPU on the destination's rail, so no byte reaches a spine; without
        # PXN (pxn=0) the cross-rail ones do.
        trace = os.path.join(self.tmp.name, "a2a")
        subprocess.run([SAMPLE, "-o", trace, "--ranks", str(HOSTS * GPUS), "--hosts", str(HOSTS), "--iterations",
                        "1", "--buckets", "0", "--alltoall-bytes", str(256 * 1024 * HOSTS * GPUS), "--nccl-only"],
                       check=True, capture_output=True)
        spines = {}
        for pxn in ("1", "0"):
            out = os.path.join(self.tmp.name, "a2a-rdma-pxn" + pxn)
            r = run("simulate", "--engine", "ns3", "--job", f"{trace}:pxn={pxn}", "--transport", "rdma",
                    "--topo", f"rail-optimized:hosts={HOSTS},gpus={GPUS},hosts-per-leaf={HOSTS}",
                    "--time-scale", "0", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("all received", r.stdout)
            spines[pxn] = sum(b for name, b in link_totals(out).items() if "spine" in name)
        self.assertEqual(spines["1"], 0)
        # Without PXN: 3 of every 4 cross-host messages change rails, at 256 KB each.
        self.assertGreaterEqual(spines["0"], 2 * HOSTS * GPUS * (GPUS - 1) * 256 * 1024)


if __name__ == "__main__":
    unittest.main()
