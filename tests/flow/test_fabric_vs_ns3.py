#!/usr/bin/env python3
"""The flow simulator against ns-3 (TCP) on AI-cluster fabrics: one
description of the fabric, the same placement and the same NIC rules
(models::ConnectionPath) in both, so what differs is the network model.

Cases (issue #43): a rail-aligned ring all-reduce on a rail-optimized
fabric; a MoE job's all-to-all on rails with PXN; an hpn dual-plane fabric
with one failed ToR. Asserted: every endpoint's bytes in both, the same
bytes on every NIC port in both (nics.csv), and the mean iteration time
within TOLERANCE. The default run uses small sizes; DLTRACE_FABRIC_FULL=1
(the `long` label) runs the ring at 16 hosts x 8 GPUs.
Run as a script it prints the table."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flow_vs_ns3 import DLTRACE, SAMPLE, check_bytes, mean_iteration, simulate  # noqa: E402

TOLERANCE = 0.05
FULL = os.environ.get("DLTRACE_FABRIC_FULL") == "1"


def nic_bytes(out):
    with open(os.path.join(out, "nics.csv")) as f:
        return {r["port"]: (float(r["sent_bytes"]), float(r["received_bytes"])) for r in csv.DictReader(f)}


def cases(tmp):
    """(name, trace maker, simulate arguments after the trace)."""
    hosts = 16 if FULL else 4
    ring = os.path.join(tmp, "ring")

    def make_ring():
        subprocess.run([SAMPLE, "-o", ring, "--ranks", str(8 * hosts), "--hosts", str(hosts), "--iterations", "3",
                        "--buckets", "1", "--bucket-bytes", str(16 << 20 if FULL else 4 << 20), "--nccl-only"],
                       check=True, capture_output=True)
        return ring

    moe = os.path.join(tmp, "moe")

    def make_moe():
        subprocess.run([DLTRACE, "synth", "--model", "mixtral-8x7b", "--tp", "2", "--pp", "1", "--dp", "8",
                        "--ep", "8", "--ranks-per-host", "8", "--seq-len", "64", "--iterations", "2", "-o", moe],
                       check=True, capture_output=True)
        return moe

    return [
        ("ring all-reduce, rail-optimized %d x 8" % hosts, make_ring,
         lambda t: ["--job", t + ":algo=ring:channels=8",
                    "--topo", "rail-optimized:hosts=%d,gpus=8,hosts-per-leaf=2,rate=100G" % hosts]),
        ("MoE all-to-all with PXN, rail-optimized 2 x 8", make_moe,
         lambda t: ["--job", t, "--topo", "rail-optimized:hosts=2,gpus=8,rate=100G"]),
        ("ring all-reduce, hpn dual plane, one ToR failed", make_ring,
         lambda t: ["--job", t + ":algo=ring:channels=8",
                    "--topo", "hpn:hosts=%d,planes=2,hosts-per-leaf=2,rate=50G,fail=p0.s0.r3" % hosts]),
    ]


class FabricVsNs3Test(unittest.TestCase):
    def test_flow_and_ns3_agree_on_ai_fabrics(self):
        with tempfile.TemporaryDirectory() as tmp:
            made = {}
            for name, make, args in cases(tmp):
                if make not in made:
                    made[make] = make()
                out = {}
                for engine in ("flow", "ns3"):
                    out[engine] = os.path.join(tmp, "%s-%d" % (engine, len(os.listdir(tmp))))
                    simulate(engine, args(made[make]), out[engine])
                    check_bytes(self, out[engine])
                flow_nics, ns3_nics = nic_bytes(out["flow"]), nic_bytes(out["ns3"])
                self.assertEqual(flow_nics.keys(), ns3_nics.keys(), name)
                for port, (sent, received) in flow_nics.items():
                    # ns-3 counts headers on the wire; the payload is at most a few percent less.
                    self.assertAlmostEqual(sent, ns3_nics[port][0], delta=0.1 * sent + 1e5, msg=(name, port))
                (flow_ms, ns3_ms), = mean_iteration([out["flow"], out["ns3"]])
                print("%-48s flow %9.3f ms  ns-3 %9.3f ms  %+.1f%%" % (name, flow_ms, ns3_ms,
                                                                     100 * (flow_ms / ns3_ms - 1)))
                self.assertAlmostEqual(flow_ms / ns3_ms, 1.0, delta=TOLERANCE, msg=name)


if __name__ == "__main__":
    unittest.main()
