#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""MPI's completion semantics in the lowering, on real programs under real
mpirun (tests/mpi/mpi_patterns.c): an Isend/Testall polling exchange,
broadcasts on overlapping split communicators entered in different orders,
eager sends posted before their receives on every side, Probe/Iprobe-driven
receives and MPI_ANY_SOURCE receives. For each: `schedule --json` forces no
op, the socket replay on loopback completes, and each rank's sent and
received bytes are what the program sent and received (closed forms below).
Then ScaLAPACK's QR test driver (Debian scalapack-mpi-test, BLACS: Isend +
Testall polling, broadcasts on many communicators) lowers with no forced op."""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
PATTERNS = os.environ.get("DLTRACE_MPI_PATTERNS", "dltrace-mpi-patterns")
SCALAPACK_TESTS = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests"
RANKS, ITERATIONS, BYTES = 4, 5, 1024  # BYTES: under Open MPI's shared-memory eager limit (4096)


def mpirun():
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(RANKS)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def left(r):
    return (r + RANKS - 1) % RANKS


# Per pattern and rank: (bytes sent, bytes received) over the whole run, from
# what mpi_patterns.c sends; None where the algorithm decides (a broadcast's
# forwarding), then only the totals are checked.
def expected(pattern, r):
    n = ITERATIONS
    if pattern == "testall":  # BYTES to each neighbour, from each neighbour
        return 2 * BYTES * n, 2 * BYTES * n
    if pattern == "eager":  # BYTES to the right, from the left
        return BYTES * n, BYTES * n
    if pattern == "probe":  # 256 + 32 r and 128 + 16 r bytes to the right
        return (384 + 48 * r) * n, (384 + 48 * left(r)) * n
    if pattern == "anysource":  # 100 (r + 1) up to rank 0, 50 (r + 1) back
        if r == 0:
            return sum(50 * (k + 1) for k in range(1, RANKS)) * n, sum(100 * (k + 1) for k in range(1, RANKS)) * n
        return 100 * (r + 1) * n, 50 * (r + 1) * n
    if pattern == "split":  # each rank is a non-root member of one broadcast per iteration
        return None, BYTES * n
    raise ValueError(pattern)


class CompletionSemanticsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-patterns-")
        cls.sets = {}
        for pattern in ("testall", "split", "eager", "probe", "anysource"):
            path = os.path.join(cls.tmp, pattern)
            p = subprocess.run([DLTRACE, "record", "-o", path, "--", *mpirun(), PATTERNS, "--pattern", pattern,
                                "--iterations", str(ITERATIONS), "--bytes", str(BYTES)],
                               capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, pattern + ": " + p.stdout + p.stderr
            cls.sets[pattern] = path

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def schedule(self, path):
        p = subprocess.run([DLTRACE, "schedule", path, "--algo", "recorded", "--json"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("contradicting", p.stderr)
        return json.loads(p.stdout)

    def replay(self, pattern):
        out = os.path.join(self.tmp, pattern + "-replay")
        p = subprocess.run([DLTRACE, "replay", self.sets[pattern], "--local", "--no-progress", "-o", out],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        # No --algo: an MPI trace set keeps the recorded lowering (NCCL ones default to nccl).
        self.assertRegex(p.stdout, r"(?m)^# replay of .*: algorithm recorded,")
        results = {}
        for path in glob.glob(os.path.join(out, "rank*.results.json")):
            with open(path) as f:
                r = json.load(f)
            self.assertTrue(r["complete"], r["error"])
            results[r["endpoint"]] = r
        self.assertEqual(sorted(results), list(range(RANKS)))
        return results

    def check(self, pattern):
        j = self.schedule(self.sets[pattern])
        self.assertEqual(j["forced"], {"count": 0, "ops": []})
        results = self.replay(pattern)
        total_sent = total_received = 0
        for t in j["totals"]:
            r = t["endpoint"]
            sent, received = expected(pattern, r)
            if sent is not None:
                self.assertEqual(t["sent_bytes"], sent, "rank %d" % r)
                self.assertEqual(results[r]["bytes_sent"], sent, "rank %d" % r)
            self.assertEqual(t["recv_bytes"], received, "rank %d" % r)
            self.assertEqual(results[r]["bytes_received"], received, "rank %d" % r)
            total_sent += results[r]["bytes_sent"]
            total_received += results[r]["bytes_received"]
        self.assertEqual(total_sent, total_received)

    def test_isend_testall_polling_exchange(self):
        self.check("testall")

    def test_broadcasts_on_split_communicators_in_different_orders(self):
        self.check("split")

    def test_eager_sends_before_their_receives_on_every_side(self):
        self.check("eager")

    def test_probe_and_iprobe_driven_receives(self):
        self.check("probe")

    def test_any_source_receives(self):
        self.check("anysource")

    def test_sends_over_the_eager_limit_are_forced_and_named(self):
        # The same eager ring with a 512-byte limit: every send must meet its
        # receive, every rank sends first, so each iteration forces one op.
        p = subprocess.run([DLTRACE, "schedule", self.sets["eager"], "--algo", "recorded", "--json",
                            "--eager-limit-local", "512"], capture_output=True, text=True, timeout=300)
        j = json.loads(p.stdout)
        self.assertEqual(j["forced"]["count"], ITERATIONS)
        first = j["forced"]["ops"][0]
        self.assertEqual(first["kind"], "MPI_Send")
        self.assertEqual(first["members"], list(range(RANKS)))
        self.assertEqual(sorted(x["reached"] for x in first["ranks"]), [False, True])
        self.assertIn("contradicting orders: %d ops" % ITERATIONS, p.stderr)
        self.assertIn(first["description"], p.stderr)

    @unittest.skipUnless(os.path.exists(os.path.join(SCALAPACK_TESTS, "xdqr")),
                         "scalapack-mpi-test is not installed (scripts/install-deps.sh installs it)")
    def test_scalapack_qr_driver_lowers_without_forced_order(self):
        path = os.path.join(self.tmp, "xdqr")
        p = subprocess.run([DLTRACE, "record", "-o", path, "--", *mpirun(), "./xdqr"], cwd=SCALAPACK_TESTS,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr)
        self.assertIn("tests completed and passed", p.stdout)
        j = self.schedule(path)
        self.assertEqual(j["forced"]["count"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
