#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The NCCL recorder end to end against the test double of libnccl/libcuda
(tests/nccl/): 4 processes started the way torchrun starts them call every
wrapped function; every recorded field is checked against what the program
says it did, GPU times against the double's simulated GPU time, the rank
files against each other (merge), and processes that never make a
communicator (the launcher, a Python process) leave no trace."""
import ctypes
import json
import os
import subprocess
import sys
import unittest

from record_fixtures import (DLTRACE, LAUNCH, ScratchTestCase, dump, expected_lines, rank_files,
                             record_launched)

LIB = os.environ["DLTRACE_RECORD_LIB"]
BIN = os.environ["DLTRACE_NCCL_TEST_BIN"]  # build/tests/nccl
PROGRAM = os.path.join(BIN, "dltrace-nccl-all-calls")
OP_NS = 20_000_000   # simulated GPU time of one NCCL operation (FAKE_NCCL_OP_NS)
SLACK_NS = 15_000_000  # host scheduling on a busy 2-core machine
# The simulated kernels take exactly their time, so lower bounds hold on any
# machine; upper bounds (host scheduling delays) are checked only in the
# `timing` run: ctest -L timing sets DLTRACE_TIMING_TESTS=1.
TIMING = os.environ.get("DLTRACE_TIMING_TESTS") == "1"
CALIBRATION_NS = 50_000


def nccl_hash(data):
    """NCCL's getHash over a unique id: DJB2a, chars sign-extended."""
    h = 5381
    for b in data:
        c = b - 256 if b > 127 else b
        h = (((h << 5) + h) ^ (c & 0xFFFFFFFFFFFFFFFF)) & 0xFFFFFFFFFFFFFFFF
    return h


def read_expected(out, rank):
    lines = expected_lines(out, rank)
    return [l for l in lines if "name" in l], [l for l in lines if "kind" in l]


def record(out, extra_env=None, timeout=300):
    env = dict(os.environ, FAKE_NCCL_OP_NS=str(OP_NS))
    env.update(extra_env or {})
    return record_launched(out, PROGRAM, env=env, timeout=timeout)


class NcclRecorderTest(ScratchTestCase):
    def check_run(self, out, gpu_timing):
        files = rank_files(out)
        # The launcher (torchrun's agent) is preloaded too but leaves no file.
        self.assertEqual(files, [f"rank{r}.dltrace" for r in range(4)])
        hashes = {}  # (communicator label, split color) -> hash on each rank
        for rank in range(4):
            comms_expected, ops_expected = read_expected(out, rank)
            rc, recs, err = dump(out, rank)
            self.assertEqual(rc, 0, err)
            header = [r for r in recs if r["type"] == "header"][0]
            device = rank % 2
            self.assertEqual(header["rank"], rank)
            self.assertEqual(header["world_size"], 4)
            self.assertEqual(header["local_rank"], device)
            self.assertEqual(header["nccl_version"], "2.28.9")
            self.assertEqual(header["gpu_device"], device)
            self.assertEqual(header["gpu_bus_id"], "0000:%02X:00.0" % (0x1A + device))
            self.assertEqual(header["job_id"], "fake-run-42")  # TORCHELASTIC_RUN_ID
            self.assertEqual(header["rank_env"]["RANK"], str(rank))
            self.assertEqual(header["rank_env"]["LOCAL_RANK"], str(device))

            # Communicators, in creation order.
            comms = [r for r in recs if r["type"] == "comm"]
            self.assertEqual(len(comms), len(comms_expected), f"rank {rank} communicators")
            label_of = {}
            for c, e in zip(comms, comms_expected):
                where = f"rank {rank} communicator {e['comm']}"
                label_of[c["id"]] = e["comm"]
                self.assertEqual(c["api"], "NCCL", where)
                self.assertEqual(c["name"], e["name"], where)
                self.assertEqual(c["size"], e["size"], where)
                self.assertEqual(c["comm_rank"], e["comm_rank"], where)
                self.assertEqual(c["color"], e["color"], where)
                self.assertEqual(c["key"], e["key"], where)
                self.assertEqual(c["cuda_device"], e["device"], where)
                self.assertEqual(c["bus_id"], "0000:%02X:00.0" % (0x1A + e["device"]), where)
                parent = label_of.get(c["parent"]) if c["parent"] >= 0 else None
                self.assertEqual(parent, e["parent"], where + " parent")
                if e["id_file"]:
                    with open(os.path.join(out, e["id_file"] + ".id"), "rb") as f:
                        self.assertEqual(c["nccl_unique_id_hash"], nccl_hash(f.read()), where)
                self.assertNotEqual(c["nccl_unique_id_hash"], 0, where)
                if e["comm"] != "alone":  # ncclCommInitAll: one process, its own identity
                    hashes.setdefault((e["comm"], e["color"]), set()).add(c["nccl_unique_id_hash"])

            # Operations, in call order.
            ops = sorted((r for r in recs if r["type"] == "op"), key=lambda r: r["enter_ns"])
            self.assertEqual([o["kind"] for o in ops], [e["kind"] for e in ops_expected],
                             f"rank {rank}: call sequence")
            groups = {}
            for i, (o, e) in enumerate(zip(ops, ops_expected)):
                where = f"rank {rank} op {i} {e['kind']} on {e['comm']}"
                self.assertEqual(label_of[o["comm"]], e["comm"], where)
                for field in ("count", "datatype", "bytes", "red_op", "peer", "stream", "seq"):
                    self.assertEqual(o[field], e[field], where + " " + field)
                self.assertEqual(o["tag"], -1, where)
                self.assertEqual(o["thread"], ops[0]["thread"], where)
                # Group ids: 0 outside groups, one id per outermost group.
                if e["group"] == 0:
                    self.assertEqual(o["group"], 0, where + " group")
                else:
                    self.assertNotEqual(o["group"], 0, where + " group")
                    self.assertEqual(groups.setdefault(e["group"], o["group"]), o["group"], where)
                self.assertEqual(o.get("captured_in_graph", False),
                                 e["captured"] and gpu_timing, where + " captured")
                if not gpu_timing or e["gpu_units"] < 0:
                    self.assertNotIn("gpu_start_ns", o, where)
                    continue
                # GPU times come from the events: the simulated kernels take
                # gpu_units * OP_NS, far longer than the host call.
                start, end = o["gpu_start_ns"], o["gpu_end_ns"]
                want = e["gpu_units"] * OP_NS
                self.assertGreaterEqual(end - start, want - CALIBRATION_NS, where)
                if TIMING:
                    self.assertLessEqual(end - start, want + SLACK_NS, where)
                self.assertGreaterEqual(start, o["enter_ns"] - CALIBRATION_NS, where)
                self.assertGreaterEqual(end, o["exit_ns"] - CALIBRATION_NS, where)
                if e["group"] == 0 and TIMING:
                    self.assertLess(o["exit_ns"] - o["enter_ns"], want, where + " host time")
            self.assertEqual(len(set(groups.values())), len(groups), f"rank {rank} group ids")

            # The compute kernel before the second all-reduce on s1: a gap on
            # the GPU timeline that the host timeline does not show.
            on_s1 = [o for o in ops if o["stream"] == ops[0]["stream"] and o["comm"] == ops[0]["comm"]
                     and o["group"] == 0 and "gpu_start_ns" in o]
            if gpu_timing:
                avg = [k for k, o in enumerate(on_s1) if o["red_op"] == "Avg"][0]
                gap = on_s1[avg]["gpu_start_ns"] - on_s1[avg - 1]["gpu_end_ns"]
                self.assertGreaterEqual(gap, 50_000_000 - CALIBRATION_NS, f"rank {rank} gap")
                if TIMING:
                    self.assertLessEqual(gap, 50_000_000 + SLACK_NS, f"rank {rank} gap")

            footer = [r for r in recs if r["type"] == "footer"][0]
            self.assertEqual(footer["reason"], "exit")
            self.assertEqual(footer["events_dropped"], 0)
            self.assertEqual(footer["events_written"], len(ops))

        # Ranks of one communicator agree on its identity; communicators differ.
        for label, values in hashes.items():
            self.assertEqual(len(values), 1, f"{label}: ranks disagree on the hash {values}")
        all_hashes = [next(iter(v)) for v in hashes.values()]
        self.assertEqual(len(set(all_hashes)), len(all_hashes))

        # The four files merge into consistent communicators: every collective
        # seen on all members, every send matched with its receive.
        p = subprocess.run([DLTRACE, "schedule", out, "--algo", "recorded", "--no-steps"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        for bad in ("no matching", "not recorded on rank", "no rank file records",
                    "says it has", "is world rank"):
            self.assertNotIn(bad, p.stderr)

        # `dltrace info` puts the members of each NCCL communicator together
        # from the files (each names only its own place).
        p = subprocess.run([DLTRACE, "info", out, "--json"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        members = {c["name"]: c["members"] for c in json.loads(p.stdout)["communicators"]
                   if c["size"] == 4}
        self.assertEqual(members["init"], [0, 1, 2, 3])
        shrunk = [c["members"] for c in json.loads(p.stdout)["communicators"]
                  if c["name"] == "shrink"]
        self.assertEqual(shrunk, [[0, 2, 3]])

    def test_every_wrapped_call_is_recorded_exactly_with_gpu_times(self):
        out = os.path.join(self.tmp, "run")
        p = record(out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("ranks 4 of 4", p.stderr)
        self.check_run(out, gpu_timing=True)
        with open(os.path.join(out, "dltrace-settings.txt")) as f:
            self.assertIn("DLTRACE_GPU_TIMING=1", f.read())

    def test_gpu_timing_off_records_host_times_only(self):
        out = os.path.join(self.tmp, "run")
        p = record(out, {"DLTRACE_GPU_TIMING": "0"})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.check_run(out, gpu_timing=False)

    def test_ranks_agree_on_a_directory_without_dltrace_record(self):
        # Plain LD_PRELOAD, no DLTRACE_OUTPUT: ranks write into
        # dltrace-nccl-<hash of their first communicator's id>.
        run = os.path.join(self.tmp, "ids")
        os.mkdir(run)
        env = dict(os.environ, LD_PRELOAD=LIB, DLTRACE_QUIET="1", FAKE_NCCL_OP_NS="0")
        env.pop("DLTRACE_OUTPUT", None)
        p = subprocess.run(LAUNCH + ["--nproc", "4", "--", PROGRAM, run], cwd=self.tmp, env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(run, "world.id"), "rb") as f:
            want = "dltrace-nccl-%016x" % nccl_hash(f.read())
        dirs = [d for d in os.listdir(self.tmp) if d.startswith("dltrace-")]
        self.assertEqual(dirs, [want])
        self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, want))),
                         ["dltrace-settings.txt"] + [f"rank{r}.dltrace" for r in range(4)])

    def test_processes_without_a_communicator_leave_no_trace(self):
        out = os.path.join(self.tmp, "none")
        # A Python process, a shell, and one that loads libnccl and makes a
        # unique id (as a launcher might) but no communicator.
        nccl = os.path.join(BIN, "lib", "libnccl.so.2")
        script = ("import ctypes; n = ctypes.CDLL(%r); b = ctypes.create_string_buffer(128); "
                  "assert n.ncclGetUniqueId(b) == 0; print('id made')" % nccl)
        for cmd in ([sys.executable, "-c", script], ["sh", "-c", "true"]):
            p = subprocess.run([DLTRACE, "record", "-o", out, "--"] + cmd, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no traces were written", p.stderr)
            self.assertEqual(rank_files(out), [])
        self.assertIn("id made", subprocess.run(
            [sys.executable, "-c", script], env=dict(os.environ, LD_PRELOAD=LIB),
            capture_output=True, text=True, timeout=60).stdout)

    def test_disabled_recorder_forwards_every_call(self):
        out = os.path.join(self.tmp, "off")
        os.mkdir(out)
        env = dict(os.environ, LD_PRELOAD=LIB, DLTRACE_ENABLE="0", DLTRACE_OUTPUT=out)
        p = subprocess.run(LAUNCH + ["--nproc", "4", "--", PROGRAM, out], env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)  # the program checked its results
        self.assertEqual(rank_files(out), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
