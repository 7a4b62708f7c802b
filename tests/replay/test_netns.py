#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace replay --rank R --hosts ...` across several hosts on one machine:
each rank in a network namespace of its own, joined to a bridge (in a
namespace of its own too) by a veth pair shaped with tc tbf to 1 Gbit/s in
both directions. A bandwidth-bound ring all-reduce finishes within 10% of the
alpha-beta estimate for that rate, and a rank killed mid-replay makes the
others exit non-zero with an error naming a peer by its address.

Rate only, no delay: this kernel has neither netem nor red, so the links add
no emulated latency and the estimate is taken with a small per-message
latency (LATENCY_US, about what a veth hop costs); the all-reduce is
bandwidth-bound, so the latency term is a fraction of a percent anyway.

Needs root (ip netns, veth, bridge, tc); otherwise every test is skipped
with a message saying why. Addresses are 10.250.77.0/24, used only inside
the namespaces, which are removed in tearDown (and stale ones of a killed
earlier run at the start); no traffic leaves them."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
RANKS = 4
PORT = 7000
SUBNET = "10.250.77"
RATE = "1gbit"
LINK_GBPS = 1.0
LATENCY_US = 30
# Jumbo frames keep TCP/IP/Ethernet headers (which tc counts against the
# rate, and the estimate does not) under 1% of the wire bytes.
MTU = 9000
ITERATIONS = 4  # the first is warm-up (connection set-up, slow start, start skew)
TOLERANCE = 0.10
PREFIX = "dlt%d" % os.getpid()
SKIP_PREFIX = "network namespaces unavailable"
# The replay's time against the estimate, and how soon ranks stop after a
# kill, are checked only in the `timing` run (ctest -L timing sets
# DLTRACE_TIMING_TESTS=1); the default run checks that the shaped replay
# completes with every scheduled byte.
TIMING = os.environ.get("DLTRACE_TIMING_TESTS") == "1"


def ip(*args, ns=None, check=True):
    cmd = ["ip"] + (["-n", ns] if ns else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return p


def tc(ns, *args):
    cmd = ["ip", "netns", "exec", ns, "tc"] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()))


def remove_stale_namespaces():
    """Namespaces this test made in a run that was killed before its tearDown."""
    p = ip("netns", "list", check=False)
    for line in p.stdout.splitlines():
        m = re.match(r"(dlt(\d+)(?:h\d+|br))\b", line)
        if m and int(m.group(2)) != os.getpid() and not os.path.exists("/proc/" + m.group(2)):
            ip("netns", "del", m.group(1), check=False)


class Network:
    """RANKS hosts (namespaces) on one bridge, every link shaped to RATE."""

    def __init__(self):
        self.bridge = PREFIX + "br"
        self.hosts = ["%sh%d" % (PREFIX, i) for i in range(RANKS)]
        self.made = []

    def address(self, rank):
        return "%s.%d" % (SUBNET, rank + 1)

    def create(self):
        for ns in [self.bridge] + self.hosts:
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("link", "set", "lo", "up", ns=ns)
        ip("link", "add", "br0", "type", "bridge", ns=self.bridge)
        ip("link", "set", "br0", "up", ns=self.bridge)
        for i, ns in enumerate(self.hosts):
            port = "port%d" % i
            ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port,
               "netns", self.bridge)
            ip("link", "set", "eth0", "mtu", str(MTU), ns=ns)
            ip("link", "set", port, "mtu", str(MTU), ns=self.bridge)
            ip("addr", "add", self.address(i) + "/24", "dev", "eth0", ns=ns)
            ip("link", "set", "eth0", "up", ns=ns)
            ip("link", "set", port, "master", "br0", ns=self.bridge)
            ip("link", "set", port, "up", ns=self.bridge)
            # Egress of the host (host -> bridge) and of its bridge port (bridge -> host).
            for where, dev in ((ns, "eth0"), (self.bridge, port)):
                tc(where, "qdisc", "add", "dev", dev, "root", "tbf", "rate", RATE,
                   "burst", "256kb", "latency", "10ms")

    def destroy(self):
        for ns in reversed(self.made):
            ip("netns", "del", ns, check=False)
        self.made = []


class NetnsReplayTest(unittest.TestCase):
    @classmethod
    def synth_set(cls, name, compute_ms, iterations=ITERATIONS):
        """ResNet-50 in bf16, one rank per host, COMPUTE_MS of compute per iteration: TMP/NAME."""
        path = os.path.join(cls.tmp, name)
        p = subprocess.run([DLTRACE, "synth", "--model", "resnet50", "--ranks", str(RANKS),
                            "--ranks-per-host", "1", "--iterations", str(iterations),
                            "--dtype", "bf16", "--compute-ms", str(compute_ms), "-o", path],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return path

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-netns-")
        # ResNet-50 in bf16: two buckets (28.3 and 22.9 MB) per iteration,
        # about 0.6 s of ring all-reduce per iteration at 1 Gbit/s.
        cls.set = cls.synth_set("set", compute_ms=20)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.procs = []
        self.net = Network()
        if os.geteuid() != 0:
            self.skipTest(SKIP_PREFIX + ": not root")
        if not shutil.which("ip") or not shutil.which("tc"):
            self.skipTest(SKIP_PREFIX + ": ip or tc (iproute2) not installed")
        remove_stale_namespaces()
        # Removed even when create() fails half-way, or a test fails.
        self.addCleanup(self.net.destroy)
        self.addCleanup(self.stop_ranks)
        try:
            self.net.create()
        except (RuntimeError, OSError) as e:
            self.skipTest(SKIP_PREFIX + ": " + str(e))

    def stop_ranks(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate()

    def start_ranks(self, trace, out, *extra):
        hosts = ",".join("%s:%d" % (self.net.address(r), PORT) for r in range(RANKS))
        for r in range(RANKS):
            self.procs.append(subprocess.Popen(
                ["ip", "netns", "exec", self.net.hosts[r], DLTRACE, "replay", trace,
                 "--rank", str(r), "--hosts", hosts, "--algo", "ring", "--no-progress",
                 "-o", out, *extra],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        return self.procs

    def estimate_ms(self):
        """Alpha-beta time of each op at LINK_GBPS, from `dltrace schedule`."""
        p = subprocess.run([DLTRACE, "schedule", self.set, "--algo", "ring", "--no-steps",
                            "--link-gbps", str(LINK_GBPS), "--latency-us", str(LATENCY_US)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        ops = {}
        for m in re.finditer(r"(?m)^(\d+)\s+(\d+)\s+ncclAllReduce\s+all-reduce\s+\d+\s+ring\s+([\d.]+)$",
                             p.stdout):
            ops[int(m.group(1))] = (int(m.group(2)), float(m.group(3)))
        self.assertTrue(re.search(r"(?m)^total_ms [\d.]+$", p.stdout), p.stdout)
        self.assertEqual(len(ops), 2 * ITERATIONS, p.stdout)
        return ops

    def test_ring_allreduce_at_1gbit_within_10_percent_of_the_estimate(self):
        out = os.path.join(self.tmp, "ring")
        # Time scale 0: no compute gaps, the iterations are back-to-back all-reduces.
        procs = self.start_ranks(self.set, out, "--time-scale", "0")
        for r, p in enumerate(procs):
            stdout, stderr = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, "rank %d: %s" % (r, stderr))
            self.assertIn("(all received)", stdout)
        estimate = self.estimate_ms()
        steady = sorted(op for op, (it, _) in estimate.items() if it >= 1)
        expected_ms = sum(estimate[op][1] for op in steady)
        # Per endpoint, from the start of the first steady-state op to the end
        # of the last (its own clock); the slowest endpoint is the job's time.
        measured_ms, whole_ms, per_op = 0.0, 0.0, {}
        for r in range(RANKS):
            with open(os.path.join(out, "rank%d.results.json" % r)) as f:
                res = json.load(f)
            self.assertTrue(res["complete"], res["error"])
            self.assertEqual(res["bytes_received"], res["bytes_scheduled_recv"])
            rows = {row["op"]: row for row in res["ops"]}
            self.assertEqual(sorted(rows), sorted(estimate))
            span = max(rows[op]["end_ns"] for op in steady) - min(rows[op]["start_ns"] for op in steady)
            measured_ms = max(measured_ms, span / 1e6)
            whole_ms = max(whole_ms, res["duration_ns"] / 1e6)
            for op, row in rows.items():
                per_op[op] = max(per_op.get(op, 0), (row["end_ns"] - row["start_ns"]) / 1e6)
        whole_expected_ms = sum(t for _, t in estimate.values())
        print("\nring all-reduce, %d ranks in namespaces, %s links:" % (RANKS, RATE))
        for op in sorted(per_op):
            print("  op %d (iteration %d): replayed %.1f ms, estimate %.1f ms (%+.1f%%)"
                  % (op, estimate[op][0], per_op[op], estimate[op][1],
                     (per_op[op] / estimate[op][1] - 1) * 100))
        print("  iterations 1..%d: replayed %.1f ms, estimate %.1f ms (%+.1f%%)"
              % (ITERATIONS - 1, measured_ms, expected_ms, (measured_ms / expected_ms - 1) * 100))
        print("  whole run (warm-up included): replayed %.1f ms, estimate %.1f ms (%+.1f%%)"
              % (whole_ms, whole_expected_ms, (whole_ms / whole_expected_ms - 1) * 100))
        # Both ways: slower means the replayer loses bandwidth; faster means
        # the shaping did not hold (or the estimate is off).
        if TIMING:
            self.assertLess(abs(measured_ms / expected_ms - 1), TOLERANCE,
                            "replayed %.1f ms, estimate %.1f ms" % (measured_ms, expected_ms))

    def test_killed_rank_stops_the_others_with_an_error_naming_a_peer(self):
        long_set = os.path.join(self.tmp, "long-set")
        p = subprocess.run([DLTRACE, "synth", "--model", "resnet50", "--ranks", str(RANKS),
                            "--ranks-per-host", "1", "--iterations", "50", "--dtype", "bf16",
                            "--compute-ms", "100", "-o", long_set],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.tmp, "killed")
        procs = self.start_ranks(long_set, out)
        time.sleep(1.5)  # mid-replay: connections are up, data is flowing
        for r, p in enumerate(procs):
            if p.poll() is not None:
                self.fail("rank %d ended early: %s" % (r, p.communicate()[1]))
        procs[2].send_signal(signal.SIGKILL)
        killed_at = time.time()
        errors = {}
        for r, p in enumerate(procs):
            if r == 2:
                continue
            _, stderr = p.communicate(timeout=30)
            self.assertNotEqual(p.returncode, 0, "rank %d" % r)
            errors[r] = stderr
        if TIMING:
            self.assertLess(time.time() - killed_at, 15, "the others did not stop in time")
        for r, stderr in errors.items():
            # One line naming the endpoint and the peer whose connection went.
            self.assertRegex(stderr, r"dltrace: error: endpoint %d: peer [0-3] \(%s\.[1-4]:%d\)"
                             % (r, re.escape(SUBNET), PORT))
        # The killed rank's ring neighbours see its connections go first; the
        # rest may see a neighbour that stopped because of it.
        self.assertTrue(any(re.search(r"peer 2 \(%s\.3:%d\)" % (re.escape(SUBNET), PORT), e)
                            for e in errors.values()), errors)
        for path in glob.glob(os.path.join(out, "rank*.results.json")):
            with open(path) as f:
                self.assertFalse(json.load(f)["complete"], path)


if __name__ == "__main__":
    unittest.main(verbosity=2)
