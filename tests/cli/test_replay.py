#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace replay` over loopback TCP: every algorithm moves every scheduled
byte and writes complete results; channels and iteration cuts; the explicit
--rank/--hosts form; ranks under mpirun (or any launcher's environment)
finding each other through a coordinator; same-host steps timed at the
model's local-link rate; the token and handshake checks; a rank killed
mid-replay, or stopped, makes the others stop with an error naming it;
NCCL traces replay with --algo nccl by default and get no host arithmetic."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import views_fixtures

DLTRACE = os.environ.get("DLTRACE", "dltrace")
# Wall-clock bounds (how soon ranks start together or stop after a fault,
# how close to the model a replay lands) are checked only in the `timing`
# run: ctest -L timing sets DLTRACE_TIMING_TESTS=1.
TIMING = os.environ.get("DLTRACE_TIMING_TESTS") == "1"
ALGORITHMS = ["recorded", "ring", "tree", "hd", "ps", "stepwise", "gossip", "pairwise"]


def run(*args, timeout=60, env=None):
    return views_fixtures.run(*args, timeout=timeout, env=env)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class ReplayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-replay-")
        synth = views_fixtures.synth_resnet50
        # ResNet-50 in bf16 (51 MB of gradients per iteration), one rank per host.
        cls.set = synth(os.path.join(cls.tmp, "set"), 4, 1, 2, "--dtype", "bf16", "--compute-ms", "20")
        cls.pair = synth(os.path.join(cls.tmp, "pair"), 2, 1, 1, "--dtype", "bf16", "--compute-ms", "5")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def check_results(self, out, iterations):
        files = sorted(glob.glob(os.path.join(out, "rank*.results.json")))
        self.assertTrue(files, out)
        self.assertEqual(glob.glob(os.path.join(out, "*.tmp*")), [])
        endpoints = None
        for path in files:
            with open(path) as f:
                r = json.load(f)
            self.assertEqual(r["format"], "dltrace-results")
            self.assertEqual(r["source"], "replay")
            self.assertTrue(r["complete"], path + ": " + r["error"])
            self.assertEqual(r["bytes_received"], r["bytes_scheduled_recv"], path)
            self.assertEqual(r["bytes_sent"], r["bytes_scheduled_send"], path)
            self.assertEqual(sorted({it["iteration"] for it in r["iterations"]}), list(range(iterations)))
            for op in r["ops"]:
                self.assertLessEqual(op["start_ns"], op["end_ns"])
                self.assertIn(op["kind"], ("ncclAllReduce",))
            endpoints = r["endpoints"]
        self.assertEqual(len(files), endpoints)
        return files

    def test_every_algorithm_receives_every_scheduled_byte(self):
        for algo in ALGORITHMS:
            with self.subTest(algo=algo):
                out = self.out("algo-" + algo)
                p = run("replay", self.set, "--local", "--algo", algo, "-o", out)
                self.assertEqual(p.returncode, 0, p.stderr)
                files = self.check_results(out, 2)
                self.assertEqual(len(files), 5 if algo == "ps" else 4)
                self.assertIn("(all received)", p.stdout)
                self.assertRegex(p.stdout, r"ncclAllReduce\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[-+][\d.]+")
                self.assertRegex(p.stdout, r"(?m)^1\s+[\d.]+\s+[\d.]+")

    def test_channels_and_iteration_cut(self):
        out = self.out("channels")
        p = run("replay", self.set, "--local", "--algo", "ring", "--channels", "3",
                "--iterations", "1", "--time-scale", "0", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_results(out, 1)

    def test_results_are_never_overwritten(self):
        out = self.out("twice")
        self.assertEqual(run("replay", self.pair, "--local", "-o", out).returncode, 0)
        p = run("replay", self.pair, "--local", "-o", out)
        self.assertEqual(p.returncode, 1)
        self.assertIn("never overwritten", p.stderr)

    def test_nccl_reductions_get_no_host_arithmetic(self):
        # No --algo: an NCCL trace replays as NCCL would run it. NCCL reduces
        # on the GPU, so no receive is added up on the host, whatever lowers
        # it; --no-reduce says so too (MPI reductions: tests/replay/socket_test.cc).
        p = run("replay", self.pair, "--local", "--no-progress", "-o", self.out("nccl-default"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^# replay of .*: algorithm nccl,")
        self.assertRegex(p.stdout, r"(?m)^reduced: 0 bytes of reduce receives added")
        p = run("replay", self.pair, "--local", "--no-progress", "--algo", "ring", "--no-reduce",
                "-o", self.out("nccl-ring-noreduce"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^# replay of .*: algorithm ring,")
        self.assertRegex(p.stdout, r"(?m)^reduced: 0 bytes \(--no-reduce")
        self.check_results(self.out("nccl-ring-noreduce"), 1)

    def start_ranks(self, out, tokens=(None, None), extra=()):
        ports = free_ports(2)
        hosts = ",".join("127.0.0.1:%d" % p for p in ports)
        procs = []
        for rank in range(2):
            env = dict(os.environ)
            env.pop("DLTRACE_REPLAY_TOKEN", None)
            if tokens[rank] is not None:
                env["DLTRACE_REPLAY_TOKEN"] = tokens[rank]
            procs.append(subprocess.Popen(
                [DLTRACE, "replay", self.pair, "--rank", str(rank), "--hosts", hosts,
                 "--algo", "ring", "-o", out, *extra],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        return [(p.wait(timeout=60), *p.communicate()) for p in procs]

    def test_explicit_rank_and_hosts(self):
        out = self.out("explicit")
        results = self.start_ranks(out, tokens=("s3cret", "s3cret"))
        for rc, stdout, stderr in results:
            self.assertEqual(rc, 0, stderr)
            self.assertIn("(all received)", stdout)
        self.check_results(out, 1)

    def origins(self, out):
        origins = []
        for path in sorted(glob.glob(os.path.join(out, "rank*.results.json"))):
            with open(path) as f:
                origins.append(json.load(f)["clock_origin_ns"])
        return origins

    def test_start_barrier_holds_every_rank_until_the_last_is_connected(self):
        # Ring: rank 2 talks only to ranks 1 and 3, so rank 0's own
        # connections are up long before rank 2 exists. No rank may start
        # (its clock origin is when its engine started, on this host's
        # CLOCK_MONOTONIC, as Python's) before rank 2 was even launched.
        out = self.out("barrier")
        hosts = ",".join("127.0.0.1:%d" % p for p in free_ports(4))
        cmd = [DLTRACE, "replay", self.set, "--hosts", hosts, "--algo", "ring", "--no-progress",
               "--iterations", "1", "-o", out]
        procs = [subprocess.Popen(cmd + ["--rank", str(r)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for r in (0, 1, 3)]
        time.sleep(2)
        late = time.monotonic_ns()
        procs.append(subprocess.Popen(cmd + ["--rank", "2"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, stderr = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, stderr)
        origins = self.origins(out)
        self.assertEqual(len(origins), 4)
        for rank, origin in enumerate(origins):
            self.assertGreater(origin, late, "rank %d started before rank 2 was launched" % rank)
        if TIMING:
            # Once all are up they learn it within a few message delays.
            self.assertLess(max(origins) - min(origins), 250e6, origins)

    def test_start_barrier_in_the_local_form(self):
        out = self.out("barrier-local")
        p = run("replay", self.set, "--local", "--algo", "ring", "--iterations", "1", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        origins = self.origins(out)
        self.assertEqual(len(origins), 4)
        if TIMING:
            self.assertLess(max(origins) - min(origins), 250e6, origins)

    def test_peer_without_the_token_is_refused(self):
        results = self.start_ranks(self.out("token"), tokens=("s3cret", None),
                                   extra=("--connect-timeout", "3"))
        self.assertNotEqual(results[0][0], 0)
        self.assertNotEqual(results[1][0], 0)
        self.assertIn("refused the connection: DLTRACE_REPLAY_TOKEN does not match", results[0][2])

    def test_unknown_congestion_control_lists_the_available_ones(self):
        p = run("replay", self.pair, "--local", "--cc", "no-such-cc", "-o", self.out("cc"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("no-such-cc", p.stderr)
        self.assertIn("tcp_available_congestion_control", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)

    def test_usage_errors(self):
        self.assertEqual(run("replay", self.pair).returncode, 2)
        self.assertEqual(run("replay", self.pair, "--rank", "0").returncode, 2)
        self.assertEqual(run("replay", self.pair, "--local", "--algo", "nope").returncode, 2)
        self.assertEqual(run("replay", self.out("missing"), "--local").returncode, 1)

    def test_launcher_ranks_find_each_other_through_the_coordinator(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("mpirun not installed (apt-get install openmpi-bin): launcher form not tested")
        out = self.out("mpirun")
        port = free_ports(1)[0]
        cmd = [mpirun, "--oversubscribe", "-np", "4"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        env = dict(os.environ)
        env.pop("DLTRACE_COORDINATOR", None)
        for var in ("DLTRACE_RANK", "RANK", "DLTRACE_WORLD_SIZE", "WORLD_SIZE"):
            env.pop(var, None)
        p = subprocess.run(cmd + [DLTRACE, "replay", self.set, "--coordinator", "127.0.0.1:%d" % port,
                                  "--algo", "ring", "--no-progress", "-o", out],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count("(all received)"), 4, p.stdout)
        self.check_results(out, 2)

    def launch_with_env(self, cwd, ranks, coordinator, extra=(), timeout=60):
        """Ranks started the way srun/torchrun start them: rank and world size
        in the environment, the coordinator in DLTRACE_COORDINATOR."""
        procs = []
        for rank in ranks:
            env = dict(os.environ, DLTRACE_RANK=str(rank), DLTRACE_WORLD_SIZE="2",
                       DLTRACE_COORDINATOR=coordinator)
            procs.append(subprocess.Popen(
                [DLTRACE, "replay", self.pair, "--algo", "ring", "--no-progress", *extra],
                cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        return [(p.wait(timeout=timeout), *p.communicate()) for p in procs]

    def test_environment_rank_and_coordinator_share_one_results_directory(self):
        cwd = self.out("env-launch")
        os.makedirs(cwd)
        results = self.launch_with_env(cwd, [1, 0], "127.0.0.1:%d" % free_ports(1)[0],
                                       extra=("--listen", "127.0.0.1"))
        for rc, stdout, stderr in results:
            self.assertEqual(rc, 0, stderr)
            self.assertIn("(all received)", stdout)
        dirs = glob.glob(os.path.join(cwd, "dltrace-replay-*"))
        self.assertEqual(len(dirs), 1, dirs)  # rank 0 named it for both
        self.check_results(dirs[0], 1)

    def test_unreachable_coordinator_is_one_error_naming_it(self):
        port = free_ports(1)[0]
        started = time.time()
        [(rc, _, stderr)] = self.launch_with_env(self.tmp, [1], "127.0.0.1:%d" % port,
                                                 extra=("--connect-timeout", "1"))
        self.assertEqual(rc, 1)
        if TIMING:
            self.assertLess(time.time() - started, 10)
        self.assertIn("cannot reach the coordinator 127.0.0.1:%d" % port, stderr)
        self.assertEqual(stderr.count("\n"), 1, stderr)

    def test_same_host_steps_take_the_model_time_of_the_local_link(self):
        # Two ranks on one host: every step is local. At 4 Gbit/s the model is
        # far slower than loopback TCP, so network timing would show as too fast.
        shared = self.out("same-host-set")
        p = run("synth", "--model", "resnet50", "--ranks", "2", "--ranks-per-host", "2",
                "--iterations", "1", "--dtype", "bf16", "--compute-ms", "1", "-o", shared)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("schedule", shared, "--algo", "ring", "--local-gbps", "4", "--no-steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        estimate = sum(float(m) for m in re.findall(r"(?m)^\d+\s+\d+\s+ncclAllReduce\s.*\s([\d.]+)$", p.stdout))
        self.assertGreater(estimate, 50)  # ms: 51 MB of bf16 gradients at 0.5 GB/s
        out = self.out("same-host")
        p = run("replay", shared, "--local", "--algo", "ring", "--local-gbps", "4", "--no-progress", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_results(out, 1)
        replayed = float(re.search(r"(?m)^ncclAllReduce\s+\d+\s+\d+\s+[\d.]+\s+([\d.]+)", p.stdout).group(1))
        # The model's delay is a floor on any machine; how far above it a busy machine lands is timing.
        self.assertGreaterEqual(replayed, estimate * 0.99, p.stdout)
        if TIMING:
            self.assertLess(replayed, estimate * 1.5 + 50, p.stdout)
        self.assertRegex(p.stdout, r"same-host: \d+ of those bytes timed on the model's local link \(4 Gbit/s")
        for path in glob.glob(os.path.join(out, "rank*.results.json")):
            with open(path) as f:
                r = json.load(f)
            self.assertEqual(r["bytes_local_received"], r["bytes_scheduled_recv"], path)

    def long_set(self):
        long_set = self.out("long-set")
        if not os.path.isdir(long_set):
            p = run("synth", "--model", "resnet50", "--ranks", "4", "--ranks-per-host", "1",
                    "--iterations", "50", "--dtype", "bf16", "--compute-ms", "100", "-o", long_set)
            self.assertEqual(p.returncode, 0, p.stderr)
        return long_set

    def test_stopped_rank_stops_the_others_within_the_peer_timeout(self):
        out = self.out("stopped")
        hosts = ",".join("127.0.0.1:%d" % p for p in free_ports(4))
        procs = [subprocess.Popen([DLTRACE, "replay", self.long_set(), "--rank", str(rank), "--hosts", hosts,
                                   "--algo", "ring", "--no-progress", "--peer-timeout", "2", "-o", out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for rank in range(4)]
        try:
            time.sleep(1.0)  # mid-replay: connections are up, data is flowing
            os.kill(procs[2].pid, signal.SIGSTOP)
            stopped_at = time.time()
            others = [(r, procs[r].wait(timeout=60), procs[r].communicate()[1]) for r in (0, 1, 3)]
            if TIMING:
                self.assertLess(time.time() - stopped_at, 8, "the others did not stop in time")
        finally:
            os.kill(procs[2].pid, signal.SIGKILL)
            os.kill(procs[2].pid, signal.SIGCONT)
            procs[2].communicate(timeout=10)
        for rank, rc, stderr in others:
            self.assertEqual(rc, 1, stderr)
            self.assertEqual(stderr.count("\n"), 1, stderr)
        stderr = "".join(e for _, _, e in others)
        self.assertRegex(stderr, r"endpoint [013]: nothing came from peer 2 \(127\.0\.0\.1:\d+\) for 2 s")
        for rank in (0, 1, 3):
            with open(os.path.join(out, "rank%d.results.json" % rank)) as f:
                self.assertFalse(json.load(f)["complete"], rank)

    def test_killed_rank_stops_the_others_with_an_error_naming_it(self):
        long_set = self.long_set()
        out = self.out("killed")
        proc = subprocess.Popen([DLTRACE, "replay", long_set, "--local", "--algo", "ring",
                                 "--no-progress", "-o", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        children = []
        deadline = time.time() + 10
        while len(children) < 4 and time.time() < deadline:
            time.sleep(0.05)
            with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
                children = [int(c) for c in f.read().split()]
        self.assertEqual(len(children), 4)
        time.sleep(0.7)  # mid-replay: connections are up, data is flowing
        os.kill(children[2], signal.SIGKILL)
        killed_at = time.time()
        stdout, stderr = proc.communicate(timeout=30)
        if TIMING:
            self.assertLess(time.time() - killed_at, 15, "the others did not stop in time")
        self.assertEqual(proc.returncode, 1, stderr)
        self.assertIn("endpoint 2 was killed by signal 9", stderr)
        self.assertRegex(stderr, r"endpoint [013]: peer 2 \(127\.0\.0\.1:\d+\)")
        for path in glob.glob(os.path.join(out, "rank*.results.json")):
            with open(path) as f:
                self.assertFalse(json.load(f)["complete"], path)


if __name__ == "__main__":
    unittest.main(verbosity=2)
