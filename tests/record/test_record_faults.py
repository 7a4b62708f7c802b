#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The recorder when its file system fails, under real mpirun: a full disk
(a 24 KB tmpfs), the trace directory removed while recording, and a burst of
10 million calls against a file system that stalls (an ext4 image frozen
with fsfreeze). The program runs on with its output unchanged, the first
failure is said once per rank, and every event is either in the file or
counted as dropped. Needs root (mount); skipped otherwise."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mpi_record import DLTRACE, MPIRUN, dump, info, prog  # noqa: E402

# Enough events that every rank's trace outgrows its share of the 24 KiB disk
# (about 3 events a step; version-2 chunks hold one in about 30 bytes).
TRAIN = ["--steps", "1000"]


def footers(path):
    rc, recs, err = dump(path)
    return {r["rank"]: r for r in recs if r["type"] == "footer"}, recs


def counts(path):
    """(events in the file, events dropped) of rank 0, from dltrace info
    (dump's JSON lines are too slow for 10 million events)."""
    rc, j, err = info(path)
    r = j["ranks"][0]
    return r["ops"], r["events_dropped"]


def run(argv, timeout=300, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


@unittest.skipUnless(os.geteuid() == 0, "needs root to mount file systems")
class RecorderFaultsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dltrace-faults-")
        self.mounts = []

    def tearDown(self):
        for m in reversed(self.mounts):
            subprocess.run(["fsfreeze", "-u", m], capture_output=True)
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def mount_tmpfs(self, size):
        d = os.path.join(self.tmp, "small")
        os.mkdir(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", d], check=True)
        self.mounts.append(d)
        return d

    def mount_freezable_ext4(self, size):
        """An ext4 file system of SIZE on a loop device (fsfreeze can stop
        it); skips the test where the tools or loop devices are missing."""
        if not shutil.which("fsfreeze") or not shutil.which("mkfs.ext4"):
            self.skipTest("fsfreeze or mkfs.ext4 missing")
        img, mnt = os.path.join(self.tmp, "img"), os.path.join(self.tmp, "ext4")
        os.mkdir(mnt)
        subprocess.run(["truncate", "-s", size, img], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
        if subprocess.run(["mount", "-o", "loop", img, mnt]).returncode != 0:
            self.skipTest("no loop devices")
        self.mounts.append(mnt)
        return mnt

    def recorded_events(self, argv, np):
        """Events per rank of the same run recorded on a disk with room (the
        reference the counts of a failed recording must add up to)."""
        out = os.path.join(self.tmp, "reference")
        p = run([DLTRACE, "record", "-o", out, "--"] + MPIRUN + ["-np", str(np)] + argv)
        self.assertEqual(p.returncode, 0, p.stderr)
        f, _ = footers(out)
        self.assertEqual({r: x["events_dropped"] for r, x in f.items()}, {r: 0 for r in range(np)})
        return p.stdout, {r: x["events_written"] for r, x in f.items()}

    def test_full_disk_stops_recording_and_counts_what_was_not_written(self):
        argv = [prog("dltrace-mpi-train")] + TRAIN
        plain_stdout, reference = self.recorded_events(argv, 4)
        out = os.path.join(self.mount_tmpfs("24k"), "t")
        p = run([DLTRACE, "record", "-o", out, "--"] + MPIRUN + ["-np", "4"] + argv)
        # The program: unharmed, same output, same status.
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, plain_stdout)
        # The first failure, once per rank, with the errno text and the file.
        for rank in range(4):
            lines = [l for l in p.stderr.splitlines() if l.startswith(f"dltrace: rank {rank}: ")
                     and "write failed" in l]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn(f"rank{rank}.dltrace: write failed: No space left on device", lines[0])
        # Every file reads back whole, with a footer that counts the rest.
        f, recs = footers(out)
        self.assertEqual(sorted(f), [0, 1, 2, 3], p.stderr)
        for rank in range(4):
            ops = [r for r in recs if r["type"] == "op" and r["rank"] == rank]
            kept, lost = f[rank]["events_written"], f[rank]["events_dropped"]
            print(f"rank {rank}: {kept} events kept, {lost} lost, {kept + lost} recorded on a "
                  f"disk with room: {reference[rank]}")
            self.assertEqual(len(ops), kept)
            self.assertGreater(lost, 0)
            self.assertEqual(kept + lost, reference[rank])
            self.assertIn("No space left on device", f[rank]["write_error"])
        # The summary names the ranks and the cause; info calls it incomplete.
        self.assertRegex(p.stderr, r"recording stopped early on ranks 0-3: write failed: No space "
                                   r"left on device \(\d+ events not written\)")
        total_lost = sum(x["events_dropped"] for x in f.values())
        self.assertIn(f"({total_lost} dropped)", p.stderr)
        rc, j, err = info(out)
        self.assertEqual(rc, 3, err)
        self.assertIn("stopped recording early", err)
        self.assertTrue(all("No space left" in r["write_error"] for r in j["ranks"]), j["ranks"])

    def test_removed_directory_is_reported_once_per_rank(self):
        argv = [prog("dltrace-mpi-train"), "--steps", "400", "--sleep-ms", "10"]
        plain = run(MPIRUN + ["-np", "2"] + argv)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        out = os.path.join(self.tmp, "gone")
        proc = subprocess.Popen([DLTRACE, "record", "-o", out, "--flush-ms", "50", "--"] + MPIRUN +
                                ["-np", "2"] + argv, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while time.time() < deadline and not all(
                os.path.exists(os.path.join(out, f"rank{r}.dltrace")) for r in range(2)):
            time.sleep(0.05)
        time.sleep(0.5)
        shutil.rmtree(out)
        stdout, stderr = proc.communicate(timeout=300)
        self.assertEqual(proc.returncode, 0, stderr)
        self.assertEqual(stdout, plain.stdout)
        for rank in range(2):
            lines = [l for l in stderr.splitlines() if l.startswith(f"dltrace: rank {rank}: ")
                     and "removed while recording" in l]
            print(f"rank {rank}: {lines}")
            self.assertEqual(len(lines), 1, stderr)
            self.assertIn("No such file or directory", lines[0])

    def test_burst_against_a_stalled_disk_stays_within_the_buffer(self):
        """10 million MPI calls in a tight loop while the trace's file system
        is frozen for 20 s: the program is held up at most once (the 2 s
        wait for the flusher), not until the disk comes back; memory stays
        within the configured buffer; kept + dropped equals the calls made."""
        mnt = self.mount_freezable_ext4("512M")
        calls, buffer_events, freeze_s = 10_000_000, 100_000, 20
        argv = [prog("dltrace-mpi-overhead"), str(calls), "0", "0"]
        base = run(MPIRUN + ["-np", "1"] + argv)
        self.assertEqual(base.returncode, 0, base.stderr)
        figures = lambda text: {k: float(v) for k, v in re.findall(r"^(\w+) ([\d.]+)$", text, re.M)}
        base_rss = figures(base.stdout)["max_rss_kb"]
        # Events a full recording holds (no stall, nothing dropped).
        ref = os.path.join(mnt, "ref")
        p = run([DLTRACE, "record", "-o", ref, "--"] + MPIRUN + ["-np", "1"] + argv)
        self.assertEqual(p.returncode, 0, p.stderr)
        ref_loop_s = figures(p.stdout)["allreduce_8B_ns"] * calls * 1e-9
        expected, none = counts(ref)
        self.assertEqual(none, 0)
        self.assertGreaterEqual(expected, calls)

        out = os.path.join(mnt, "t")
        env = dict(os.environ, DLTRACE_BUFFER_EVENTS=str(buffer_events))
        proc = subprocess.Popen([DLTRACE, "record", "-o", out, "--"] + MPIRUN + ["-np", "1"] + argv,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        trace = os.path.join(out, "rank0.dltrace")
        deadline = time.time() + 60
        while time.time() < deadline and not (os.path.exists(trace) and
                                              os.path.getsize(trace) > 0):
            time.sleep(0.005)
        subprocess.run(["fsfreeze", "-f", mnt], check=True)
        thaw = threading.Timer(freeze_s, lambda: subprocess.run(["fsfreeze", "-u", mnt]))
        thaw.start()
        try:
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            thaw.cancel()
            subprocess.run(["fsfreeze", "-u", mnt], capture_output=True)
        self.assertEqual(proc.returncode, 0, stderr)
        got = figures(stdout)
        loop_s = got["allreduce_8B_ns"] * calls * 1e-9
        kept, dropped = counts(out)
        # Two thread buffers of compact 80-byte events (rounded up to the
        # vector's power-of-two capacity), one chunk of expanded events in
        # the flusher, its FlatBuffer, and slack for the allocator.
        cap = 1 << (buffer_events - 1).bit_length()
        bound_kb = base_rss + (2 * cap * 80 + 65536 * 256 + 32 * 2**20) / 1024
        print(f"{calls} calls, file system frozen {freeze_s} s: loop {loop_s:.1f} s "
              f"(recorded without a stall {ref_loop_s:.1f} s), {kept} events kept, {dropped} dropped, "
              f"{kept + dropped} of {expected}; peak RSS {got['max_rss_kb'] / 1024:.1f} MB "
              f"(unrecorded {base_rss / 1024:.1f} MB, bound {bound_kb / 1024:.1f} MB)")
        self.assertEqual(kept + dropped, expected)
        self.assertGreater(dropped, 0)
        self.assertLess(got["max_rss_kb"], bound_kb)
        if os.environ.get("DLTRACE_TIMING_TESTS") == "1":  # ctest -L timing
            # Held up once (about 2 s), not for the whole stall.
            self.assertLess(loop_s, ref_loop_s + freeze_s / 2)

    def test_a_waiting_thread_lends_the_flusher_its_cpu_and_takes_it_back(self):
        """A thread whose buffer is full waits for the flusher (here stuck on
        a frozen file system) with the flusher moved onto the waiting
        thread's CPU; once the wait gives up (2 s) the flusher has its own
        CPUs again. Read from /proc: the Cpus_allowed_list of the thread
        named dltrace-flush, sampled while the file system is frozen."""
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("one CPU: a loan would not show")
        mnt = self.mount_freezable_ext4("64M")
        out = os.path.join(mnt, "t")
        tag = "DLTRACE_TEST_LOAN=" + self.tmp
        env = dict(os.environ, DLTRACE_BUFFER_EVENTS="100000", DLTRACE_TEST_LOAN=self.tmp)
        argv = [prog("dltrace-mpi-overhead"), "10000000", "0", "0"]
        proc = subprocess.Popen([DLTRACE, "record", "-o", out, "--"] + MPIRUN + ["-np", "1"] + argv,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def flusher():
            """(pid, the flusher's tid) of the recorded program, once both exist."""
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if tag.encode() not in f.read().split(b"\0"):
                            continue
                    for tid in os.listdir(f"/proc/{pid}/task"):
                        with open(f"/proc/{pid}/task/{tid}/comm") as f:
                            if f.read().strip() == "dltrace-flush":
                                return pid, tid
                except OSError:
                    continue
            return None

        def cpus(pid, tid):
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    for line in f:
                        if line.startswith("Cpus_allowed_list:"):
                            return line.split(":", 1)[1].strip()
            except OSError:
                return None

        found = None
        deadline = time.time() + 60
        while time.time() < deadline and not found and proc.poll() is None:
            found = flusher()
            time.sleep(0.002)
        self.assertIsNotNone(found, "no thread named dltrace-flush in the recorded program")
        pid, tid = found
        own = cpus(pid, pid)  # the main thread's: what the flusher started with
        subprocess.run(["fsfreeze", "-f", mnt], check=True)
        freeze_s = 8
        thaw = threading.Timer(freeze_s, lambda: subprocess.run(["fsfreeze", "-u", mnt]))
        thaw.start()
        samples = []
        try:
            t0 = time.time()
            while time.time() - t0 < freeze_s - 0.5:
                samples.append((time.time() - t0, cpus(pid, tid)))
                time.sleep(0.002)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            thaw.cancel()
            subprocess.run(["fsfreeze", "-u", mnt], capture_output=True)
        self.assertEqual(proc.returncode, 0, stderr)
        lent = [c for _, c in samples if c is not None and c != own]
        late = [c for t, c in samples if t > freeze_s - 2.5]
        print(f"flusher's CPUs: {own} at start; while frozen {sorted(set(c for _, c in samples if c))} "
              f"({len(lent)} of {len(samples)} samples lent); the last 2 s: {sorted(set(late))}")
        # Lent: one CPU (the waiting thread's), for part of the wait.
        self.assertTrue(lent, "the flusher never ran on the waiting thread's CPU")
        self.assertTrue(all("," not in c and "-" not in c for c in lent), lent)
        # Given back once the 2 s wait gave up (the program drops since).
        self.assertEqual(set(late), {own})


if __name__ == "__main__":
    unittest.main(verbosity=2)
