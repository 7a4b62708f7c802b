#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate` from the command line: bad --topo, unknown --cc and a
missing trace each give one error line and a non-zero exit; a run writes
complete results (bytes delivered == bytes scheduled) in the replayer's
format plus flows, link utilisation and FlowMonitor XML, and never
overwrites an earlier run; several jobs go to job<J>/ and slow each other."""
import glob
import struct
import os
import tempfile
import unittest

from views_fixtures import link_totals, load_json, run, sample_trace


class SimulateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # Two 4 MB all-reduces over 4 ranks, one per host: packet-level
        # ns-3 runs of it take seconds on 2 cores (ResNet-50's 102 MB took minutes).
        cls.trace = sample_trace(os.path.join(cls.tmp.name, "small"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def assertOneLineError(self, r, words):
        self.assertNotEqual(r.returncode, 0)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertTrue(lines, "no error message")
        self.assertTrue(lines[0].startswith("dltrace"), r.stderr)
        for w in words:
            self.assertIn(w, lines[0])

    def test_bad_topology_is_one_error_line(self):
        r = run("simulate", self.trace, "--topo", "torus", "-o", self.out("bad1"))
        self.assertOneLineError(r, ["unknown topology 'torus'"])
        self.assertFalse(os.path.exists(self.out("bad1")), "nothing written for a bad topology")
        r = run("simulate", self.trace, "--topo", "leaf-spine:spines=two", "-o", self.out("bad2"))
        self.assertOneLineError(r, ["bad value", "spines=two"])

    def test_unknown_congestion_control_is_one_error_line(self):
        r = run("simulate", self.trace, "--cc", "TcpWarp", "-o", self.out("bad3"))
        self.assertOneLineError(r, ["unknown TCP congestion control 'TcpWarp'", "TcpDctcp"])
        self.assertFalse(os.path.exists(self.out("bad3")))

    def test_two_endpoints_of_a_job_on_one_host_are_refused(self):
        # ns-3 TCP to the node's own address loses its SYN-ACK (delivered
        # before the socket leaves CLOSED): refused, not a 3 s stall.
        r = run("simulate", "--job", self.trace + ":hosts=0,0,1,2", "-o", self.out("shared"))
        self.assertOneLineError(r, ["endpoints 0 and 1 on host 0", "--engine flow"])
        self.assertFalse(os.path.exists(self.out("shared")))
        # hosts=trace: refused where a trace host recorded several ranks, run where one.
        two = sample_trace(self.out("two-per-host"), buckets=1, bucket_bytes=100000, hosts=2)
        r = run("simulate", "--job", two + ":hosts=trace", "-o", self.out("t2"))
        self.assertOneLineError(r, ["endpoints 0 and 1 on host 0"])
        r = run("simulate", "--job", self.trace + ":hosts=trace", "--time-scale", "0", "-o", self.out("t1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("4 endpoints on hosts 0-3", r.stdout)

    def test_missing_trace_is_one_error_line(self):
        r = run("simulate", self.out("no-such-trace"), "-o", self.out("bad4"))
        self.assertOneLineError(r, ["no-such-trace"])
        r = run("simulate")
        self.assertEqual(r.returncode, 2)

    def test_run_writes_complete_results_and_outputs(self):
        d = self.out("one")
        r = run("simulate", self.trace, "--algo", "ring", "--topo", "leaf-spine:rate=25Gbps",
                "--cc", "TcpDctcp", "--time-scale", "0", "-o", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("simulated s per wall s", r.stdout)
        self.assertIn("packets per wall s", r.stdout)
        self.assertIn("all received", r.stdout)
        files = sorted(glob.glob(os.path.join(d, "rank*.results.json")))
        self.assertEqual(len(files), 4)
        for f in files:
            res = load_json(f)
            self.assertEqual(res["source"], "ns3")
            self.assertTrue(res["complete"], f)
            self.assertEqual(res["bytes_received"], res["bytes_scheduled_recv"], f)
            self.assertEqual(res["bytes_sent"], res["bytes_scheduled_send"], f)
            self.assertTrue(res["ops"] and res["iterations"], f)
        flows = open(os.path.join(d, "flows.csv")).read().splitlines()
        self.assertTrue(flows[0].startswith("job,op,src,dst"))
        self.assertGreater(len(flows), 10)
        # dltrace report reads the flow completion times from the fct_ns column.
        header = flows[0].split(",")
        self.assertIn("fct_ns", header)
        fct = [int(l.split(",")[header.index("fct_ns")]) for l in flows[1:]]
        self.assertTrue(all(v > 0 for v in fct), fct[:10])
        links = open(os.path.join(d, "links.csv")).read().splitlines()
        self.assertGreater(len(links), 10)
        util = [float(l.split(",")[3]) for l in links[1:]]
        self.assertTrue(all(0 <= u <= 1.01 for u in util), max(util))
        self.assertGreater(max(util), 0.5, "some link ran near its rate")
        self.assertIn("<FlowMonitor", open(os.path.join(d, "flowmon.xml")).read(200))
        self.assertFalse(glob.glob(os.path.join(d, "*.tmp")))
        # An earlier run's results are never overwritten.
        r = run("simulate", self.trace, "-o", d)
        self.assertOneLineError(r, ["never overwritten"])

    def test_links_csv_adds_up_to_what_each_link_carried(self):
        # Samples every 10 ms, and the run (about 4 ms) ends before the first:
        # its only sample is the last, shorter period up to the run's end.
        d = self.out("links")
        r = run("simulate", self.trace, "--algo", "ring", "--topo", "leaf-spine:rate=25Gbps",
                "--time-scale", "0", "--util-ms", "10", "--no-flowmon", "-o", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Each host's link up carried its rank's ring sends, 2 (N - 1) / N of
        # each all-reduce (2 of 4 MB over 4 ranks), plus at most 10% in TCP/IP
        # headers and the ACKs of what it received.
        sent = link_totals(d)
        ring_bytes = 2 * 2 * (4 - 1) / 4 * 4000000
        for h in range(4):
            up = [v for k, v in sent.items() if k.startswith("h%d-" % h)]
            self.assertEqual(len(up), 1, sorted(sent))
            self.assertGreaterEqual(up[0], ring_bytes, "h%d" % h)
            self.assertLess(up[0], 1.10 * ring_bytes, "h%d" % h)

    def test_rdma_transport_writes_complete_results_and_fabric_outputs(self):
        out = self.out("rdma")
        r = run("simulate", self.trace, "--transport", "rdma", "--cc", "dcqcn", "--topo",
                "star:rate=10Gbps", "--util-ms", "0.5", "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("RDMA (RoCEv2, PFC), congestion control dcqcn", r.stdout)
        self.assertIn("PFC pause frames", r.stdout)
        for rank in range(4):
            res = load_json(os.path.join(out, "rank%d.results.json" % rank))
            self.assertTrue(res["complete"], res)
        for name in ("queues.csv", "pfc.csv", "qps.csv", "messages.csv", "links.csv", "flows.csv"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        self.assertFalse(os.path.exists(os.path.join(out, "flowmon.xml")))
        with open(os.path.join(out, "messages.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(rows[0], "job,src,dst,channel,priority,bytes,posted_s,completion_s,ideal_s,slowdown")
        # Every message completed, none faster than alone on the empty path.
        for row in rows[1:]:
            self.assertGreaterEqual(float(row.split(",")[-1]), 0.999, row)
        with open(os.path.join(out, "queues.csv")) as f:
            self.assertEqual(f.readline().strip(), "time_s,port,queue_bytes")

    def test_rdma_bad_settings_are_one_error_line(self):
        r = run("simulate", self.trace, "--transport", "rdma", "--cc", "reno", "-o", self.out("bad5"))
        self.assertOneLineError(r, ["unknown RDMA congestion control 'reno'", "hpcc"])
        r = run("simulate", self.trace, "--transport", "rdma", "--cc", "hpcc", "--cc-param", "Etta=0.9",
                "-o", self.out("bad6"))
        self.assertOneLineError(r, ["--cc-param 'Etta=0.9'", "Eta"])
        r = run("simulate", self.trace, "--transport", "rdma", "--rdma-egress", "fair", "-o", self.out("bad7"))
        self.assertOneLineError(r, ["--rdma-egress 'fair'"])
        r = run("simulate", "--job", self.trace + ":priority=9", "--transport", "rdma", "-o", self.out("bad8"))
        self.assertOneLineError(r, ["priority=9"])
        for d in ("bad5", "bad6", "bad7", "bad8"):
            self.assertFalse(os.path.exists(self.out(d)), d)

    def test_uet_transport_completes_without_pfc_and_counts_trims(self):
        out = self.out("uet")
        r = run("simulate", self.trace, "--transport", "uet", "--cc-param", "lb=oblivious", "--cc-param",
                "queue-packets=4", "--topo", "star:rate=10Gbps", "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("UET (Ultra Ethernet: spraying, trimming, no PFC), congestion control nscc", r.stdout)
        line = [l for l in r.stdout.splitlines() if l.startswith("uet: ")]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertIn(" 0 drops, 0 PFC pauses", line[0])
        self.assertRegex(line[0], r"^uet: \d+ packets trimmed, \d+ ECN marks, \d+ NACKs, \d+ retransmitted")
        for rank in range(4):
            res = load_json(os.path.join(out, "rank%d.results.json" % rank))
            self.assertTrue(res["complete"], res)
        for name in ("queues.csv", "qps.csv", "messages.csv"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)

    def test_uet_bad_settings_are_one_error_line(self):
        cases = [(["--cc", "dcqcn"], ["--cc dcqcn", "nscc or rccc"]),
                 (["--cc-param", "lb=spray"], ["--cc-param 'lb=spray'", "oblivious, bitmap, reps, mixed"]),
                 (["--cc-param", "entropies=0"], ["--cc-param 'entropies=0'", "1 to 65536"]),
                 (["--cc-param", "mtu=big"], ["--cc-param 'mtu=big'", "65 to 9000"])]
        for i, (args, words) in enumerate(cases):
            d = self.out("uetbad%d" % i)
            r = run("simulate", self.trace, "--transport", "uet", *args, "-o", d)
            self.assertOneLineError(r, words)
            self.assertFalse(os.path.exists(d), d)

    def test_pcap_writes_one_capture_per_link(self):
        d = self.out("pcap")
        r = run("simulate", self.trace, "--algo", "ring", "--topo", "star:rate=10Gbps", "--time-scale", "0",
                "--pcap", "-o", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        files = sorted(os.listdir(os.path.join(d, "pcap")))
        self.assertEqual(files, ["h%d-sw0.pcap" % h for h in range(4)])
        for name in files:
            with open(os.path.join(d, "pcap", name), "rb") as f:
                header = f.read(24)
                magic, _, _, _, _, _, link_type = struct.unpack("<IHHiIII", header)
                self.assertIn(magic, (0xa1b2c3d4, 0xa1b23c4d), name)
                self.assertEqual(link_type, 9, name)  # PPP, as ns-3's point-to-point devices write
                # A host link carries the host's share of the ring: far more than a handshake.
                self.assertGreater(len(f.read()), 1_000_000, name)

    def test_two_jobs_write_per_job_results_and_slow_each_other(self):
        def job_time(d, j=None):
            pattern = os.path.join(d, "job%d" % j if j is not None else "", "rank*.results.json")
            return max(load_json(f)["duration_ns"] for f in glob.glob(pattern))

        alone = self.out("alone")
        r = run("simulate", "--job", self.trace + ":hosts=0,2,4,6", "--algo", "ring",
                "--time-scale", "0", "--topo", "dumbbell:hosts=8,rate=10Gbps", "--no-flowmon", "-o", alone)
        self.assertEqual(r.returncode, 0, r.stderr)
        both = self.out("both")
        r = run("simulate", "--job", self.trace + ":hosts=0,2,4,6", "--job", self.trace + ":hosts=1,3,5,7:start=0s",
                "--algo", "ring", "--time-scale", "0", "--topo", "dumbbell:hosts=8,rate=10Gbps",
                "--no-flowmon", "-o", both)
        self.assertEqual(r.returncode, 0, r.stderr)
        for j in (0, 1):
            files = glob.glob(os.path.join(both, "job%d" % j, "rank*.results.json"))
            self.assertEqual(len(files), 4)
            for f in files:
                res = load_json(f)
                self.assertTrue(res["complete"])
                self.assertEqual(res["bytes_received"], res["bytes_scheduled_recv"])
        self.assertGreater(job_time(both, 0), 1.2 * job_time(alone))
        r = run("simulate", "--job", self.trace + ":hosts=0-2", "-o", self.out("bad5"))
        self.assertOneLineError(r, ["4 endpoints", "names 3"])


if __name__ == "__main__":
    unittest.main()
