#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A 128-GPU hybrid job at packet level to its end (issue #43; label long:
about 5 minutes over RDMA and longer over TCP on 2 cores).

Llama-3 8B at TP 8 x PP 16 (2 micro-batches of 1 x 128 tokens, bf16, one
iteration), 8 ranks per host, on `spectrum-x:hosts=16` (16 hosts x 8 GPUs x
8 NICs): tensor-parallel all-reduces inside each host on NVLink, pipeline
activations between hosts through the NICs. ns-3 runs it over RDMA and over
TCP; each run must deliver every scheduled byte to every endpoint, and the
bytes its NICs send must be the pipeline's closed form written here (plus
headers): (PP - 1) stage boundaries x 2 micro-batches x 2 directions
(activations forward, gradients back) x TP ranks, each sending the whole
activation of seq x hidden x 2 bytes (Megatron without scatter-gather).
Run as a script it prints each run's summary lines."""
import csv
import json
import os
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
TP, PP, MICROBATCHES, SEQ, HIDDEN = 8, 16, 2, 128, 4096
NIC_PAYLOAD = (PP - 1) * MICROBATCHES * 2 * TP * SEQ * HIDDEN * 2  # 503,316,480 bytes


class Fabric128Test(unittest.TestCase):
    def test_a_128_gpu_hybrid_job_runs_to_its_end_over_rdma_and_tcp(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "llama")
            subprocess.run([DLTRACE, "synth", "--model", "llama3-8b", "--tp", str(TP), "--pp", str(PP), "--dp", "1",
                            "--ranks", "128", "--microbatches", str(MICROBATCHES), "--seq-len", str(SEQ),
                            "--dtype", "bf16", "--iterations", "1", "--ranks-per-host", "8", "-o", trace],
                           check=True, capture_output=True)
            for transport in ("rdma", "tcp"):
                out = os.path.join(tmp, transport)
                p = subprocess.run([DLTRACE, "simulate", "--engine", "ns3", "--transport", transport,
                                    "--job", trace + ":gpus-per-host=8", "--topo", "spectrum-x:hosts=16", "-o", out],
                                   capture_output=True, text=True, timeout=3000)
                self.assertEqual(p.returncode, 0, p.stderr[-2000:])
                print("\n".join(l for l in p.stdout.splitlines() if l.startswith(("job time", "fabric", "speed"))))
                self.assertIn("(all received)", p.stdout)
                for name in os.listdir(out):
                    if name.endswith(".results.json"):
                        with open(os.path.join(out, name)) as f:
                            r = json.load(f)
                        self.assertTrue(r["complete"], (transport, name))
                        self.assertEqual(r["bytes_received"], r["bytes_scheduled_recv"], (transport, name))
                with open(os.path.join(out, "nics.csv")) as f:
                    sent = sum(float(r["sent_bytes"]) for r in csv.DictReader(f))
                # Payload plus headers (RDMA's 58 B per 1 KB packet, TCP's per 1448 B segment and its ACKs).
                self.assertGreaterEqual(sent, NIC_PAYLOAD, transport)
                self.assertLess(sent, 1.2 * NIC_PAYLOAD, transport)


if __name__ == "__main__":
    unittest.main()
