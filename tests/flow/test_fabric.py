#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""AI-cluster fabrics in the flow simulator, against closed forms written here.

- Rail-aligned ring all-reduce (NCCL_CROSS_NIC 2, the default): DDP ResNet-50
  on H hosts x 8 GPUs with 8 channels. One ring edge leaves each host per
  channel, through that channel's NIC, so every NIC
  sends 2(n-1)/n * B / 8 (n = 8H ranks, B the gradient bytes of an
  iteration): rails balanced. With cross-nic=1 every channel leaves through
  the exit GPU's own NIC: one NIC per host carries it all.
- Tensor-parallel bytes never reach a NIC: with ranks placed 8 per host
  (rank r on host r // 8, the rule written here), the bytes NICs sent equal
  the bytes of flows.csv's messages between different hosts, and the NVLink
  bytes those between GPUs of one host.
- A trace recorded on one machine, spread over hosts, crosses the network:
  9 ranks synthesized on one host, placed one per host, send every byte
  through NICs (flows.csv local=0 throughout).
- PXN keeps point-to-point and all-to-all on the destination's rail: a MoE
  job (Mixtral TP2 EP8, expert groups across both hosts) on one segment of a rail-optimized fabric sends no
  byte to a spine; without PXN its cross-rail all-to-all does.
"""
import csv
import glob
import json
import os
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
RESNET50_GRADIENT_BYTES = 25557032 * 4


def run(args, timeout=900):
    r = subprocess.run([DLTRACE] + args, capture_output=True, text=True, timeout=timeout)
    return r


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


class FabricTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def synth(self, name, args):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            r = run(["synth"] + args + ["--iterations", "1", "-o", path])
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return path

    def simulate(self, name, job, topo, extra=()):
        out = os.path.join(self.dir, name)
        r = run(["simulate", "--job", job, "--engine", "flow", "--solver", "incremental", "--topo", topo,
                 "--util-ms", "1", "-o", out] + list(extra))
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        results = []
        for path in glob.glob(os.path.join(out, "rank*.results.json")):
            with open(path) as f:
                results.append(json.load(f))
        self.assertTrue(results)
        self.assertEqual([res["error"] for res in results if not res["complete"]], [])
        return out, r.stdout

    def nic_sent(self, out):
        per = {}
        for row in read_csv(os.path.join(out, "nics.csv")):
            key = (int(row["host"]), int(row["rail"]))
            per[key] = per.get(key, 0) + float(row["sent_bytes"])
        return per

    def link_bytes(self, out, pred):
        return sum(float(row["bytes"]) for row in read_csv(os.path.join(out, "links.csv")) if pred(row["link"]))

    def test_rail_aligned_ring_moves_the_closed_form_through_every_nic(self):
        hosts, gpus = 2, 8
        n = hosts * gpus
        trace = self.synth("r50", ["--model", "resnet50", "--ranks", str(n), "--ranks-per-host", str(gpus)])
        expected = 2 * (n - 1) / n * RESNET50_GRADIENT_BYTES / 8
        out, summary = self.simulate("ring", trace + ":algo=ring:channels=8", "spectrum-x:hosts=%d" % hosts)
        sent = self.nic_sent(out)
        self.assertEqual(len(sent), hosts * gpus)
        for key, b in sent.items():
            self.assertAlmostEqual(b / expected, 1.0, delta=1e-3, msg=str(key))
        self.assertIn("fabric: per rail GB sent:", summary)
        self.assertIn("imbalance 1.000", summary)
        # cross-nic=1: each host's ring edge leaves through its exit GPU's NIC, all 8 channels.
        out, summary = self.simulate("ring-cross", trace + ":algo=ring:channels=8:cross-nic=1",
                                     "spectrum-x:hosts=%d" % hosts)
        sent = self.nic_sent(out)
        busy = {k: b for k, b in sent.items() if b > 0}
        self.assertEqual(len(busy), hosts, busy)
        for b in busy.values():
            self.assertAlmostEqual(b / (8 * expected), 1.0, delta=1e-3)

    def test_tensor_parallel_bytes_stay_on_nvlink(self):
        trace = self.synth("gpt-tp8", ["--model", "llama3-8b", "--tp", "8", "--pp", "1", "--dp", "2",
                                       "--ranks-per-host", "8", "--seq-len", "512"])
        out, _ = self.simulate("tp8", trace, "rail-optimized:hosts=2,gpus=8")
        cross = same = 0
        for row in read_csv(os.path.join(out, "flows.csv")):
            b = int(row["bytes"])
            if int(row["src"]) // 8 != int(row["dst"]) // 8:
                cross += b
                self.assertEqual(row["local"], "0")
            else:
                same += b
                self.assertEqual(row["local"], "1")
        self.assertGreater(same, 0)
        self.assertGreater(cross, 0)
        # Link bytes are the fluid model's rate x time: equal to a few bytes in a gigabyte.
        self.assertAlmostEqual(sum(self.nic_sent(out).values()) / cross, 1.0, delta=1e-6)
        # links.csv names a direction "FROM-TO": GPU to NVSwitch is what a GPU sent over NVLink.
        nvlink_sent = self.link_bytes(out, lambda name: name.endswith(".nvs"))
        # Over NVLink: every same-host message, and the NVLink hops of rail-aligned cross-host ones.
        self.assertGreaterEqual(nvlink_sent, same * (1 - 1e-4))

    def test_a_one_machine_recording_spread_over_hosts_crosses_the_network(self):
        trace = self.synth("r50-one-host", ["--model", "resnet50", "--ranks", "9", "--ranks-per-host", "9"])
        out, summary = self.simulate("spread", trace + ":hosts=0-8:algo=ring", "star")
        rows = read_csv(os.path.join(out, "flows.csv"))
        self.assertTrue(rows)
        self.assertEqual({r["local"] for r in rows}, {"0"})
        # One GPU per host: each host's link (links.csv "hN-sw0") is its NIC.
        sent = self.link_bytes(out, lambda name: name.startswith("h") and name.endswith("-sw0"))
        self.assertAlmostEqual(sent / (2 * 8 * RESNET50_GRADIENT_BYTES), 1.0, delta=1e-6)
        # Kept on one host of 9 GPUs, nothing touches a NIC.
        out, _ = self.simulate("together", trace + ":hosts=trace:algo=ring", "star:gpus=9")
        self.assertEqual(sum(self.nic_sent(out).values()), 0)

    def test_pxn_keeps_all_to_all_on_the_destinations_rail(self):
        trace = self.synth("moe", ["--model", "mixtral-8x7b", "--tp", "2", "--pp", "1", "--dp", "8", "--ep", "8",
                                   "--sequence-parallel", "--ranks-per-host", "8", "--seq-len", "256"])
        topo = "rail-optimized:hosts=2,gpus=8,hosts-per-leaf=2"
        spine = lambda name: "spine" in name
        out, _ = self.simulate("moe-pxn", trace, topo)
        self.assertEqual(self.link_bytes(out, spine), 0)
        out, _ = self.simulate("moe-direct", trace + ":pxn=0", topo)
        self.assertGreater(self.link_bytes(out, spine), 0)

    def test_impossible_placements_and_bad_fabrics_are_one_line(self):
        trace = self.synth("r50-one-host", ["--model", "resnet50", "--ranks", "9", "--ranks-per-host", "9"])
        cases = [
            (trace + ":hosts=trace", "spectrum-x", "more endpoints on host 0 than its 8 GPUs"),
            (trace + ":gpus-per-host=16", "spectrum-x", "gpus-per-host=16"),
            (trace, "spectrum-x:fail=nosuch", "fault 'nosuch'"),
            (trace, "spectrum-x:hosts=2,planes=2", "planes=2 needs ports=2"),
            (trace, os.path.join(self.dir, "missing.json"), "cannot open"),
        ]
        for job, topo, expected in cases:
            r = run(["simulate", "--job", job, "--engine", "flow", "--topo", topo, "-o",
                     os.path.join(self.dir, "never")])
            self.assertNotEqual(r.returncode, 0, topo)
            self.assertIn(expected, r.stderr, topo)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.dir, "never")))


if __name__ == "__main__":
    unittest.main()
