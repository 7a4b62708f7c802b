#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""For scripts/gpu-check.sh: checks a trace recorded on a real GPU.

  check_gpu_trace.py --dltrace BIN world1 DIR       the one-rank program
  check_gpu_trace.py --dltrace BIN ddp DIR --steps N  DDP ResNet-50 training

Both: every NCCL operation has GPU start/end times, in order, inside the
recording's host time span. world1: every collective and send/recv was
recorded. ddp: the float32 all-reduce bytes split into N steps that each sum
to ResNet-50's gradient (25,557,032 parameters, 102,228,128 bytes); after the
first step (DDP rebuilds its buckets then: PyTorch 2.11 all-reduced the whole
gradient at once in step 0 on the GPU machine) each bucket is at most DDP's
25 MiB cap plus one parameter, since DDP closes a bucket with the parameter
that takes it over the cap. Prints what it found; exits 1 on a failure."""
import argparse
import json
import subprocess
import sys

RESNET50_GRADIENT_BYTES = 25_557_032 * 4
WORLD1_KINDS = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather",
                "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
                "ncclRecv"}
# DDP's bucket_cap_mb default, and ResNet-50's largest parameter (a layer4
# 3x3 convolution, 512 x 512 x 3 x 3 floats).
DDP_BUCKET_CAP = 25 * 1024 * 1024
RESNET50_LARGEST_PARAMETER_BYTES = 512 * 512 * 3 * 3 * 4
CLOCK_SLACK_NS = 1_000_000  # reference-event error is microseconds; be generous


def load(dltrace, path):
    p = subprocess.run([dltrace, "dump", path], capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"check: dltrace dump {path} failed: {p.stderr.strip()}")
    ranks = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        ranks.setdefault(r["rank"], []).append(r)
    return ranks


def check_gpu_times(ranks, failures):
    for rank, recs in sorted(ranks.items()):
        header = next(r for r in recs if r["type"] == "header")
        footer = next((r for r in recs if r["type"] == "footer"), None)
        end = footer["end_monotonic_ns"] if footer else None
        ops = [r for r in recs if r["type"] == "op" and r["kind"].startswith("nccl")]
        timed = [o for o in ops if "gpu_start_ns" in o]
        print(f"rank {rank}: {len(ops)} NCCL ops, {len(timed)} with GPU times, "
              f"GPU {header.get('gpu_device')} {header.get('gpu_bus_id')}, NCCL {header['nccl_version']}")
        for o in ops:
            if o.get("captured_in_graph"):
                continue
            where = f"rank {rank} {o['kind']} seq {o['seq']}"
            if "gpu_start_ns" not in o:
                failures.append(where + ": no GPU times")
                continue
            s, e = o["gpu_start_ns"], o["gpu_end_ns"]
            if e < s:
                failures.append(where + ": GPU end before start")
            if s < header["start_monotonic_ns"] - CLOCK_SLACK_NS or s < o["enter_ns"] - CLOCK_SLACK_NS:
                failures.append(where + ": GPU start before the host call")
            if end is not None and e > end + CLOCK_SLACK_NS:
                failures.append(where + ": GPU end after the recording ended")
        if end is None:
            failures.append(f"rank {rank}: no footer (the recording did not close cleanly)")


def check_world1(ranks, failures):
    kinds = {r["kind"] for r in ranks.get(0, []) if r["type"] == "op"}
    missing = WORLD1_KINDS - kinds
    print("world1: recorded kinds " + ", ".join(sorted(kinds)))
    if missing:
        failures.append("world1: not recorded: " + ", ".join(sorted(missing)))


def check_ddp(ranks, steps, failures):
    for rank, recs in sorted(ranks.items()):
        ar = [r for r in recs if r["type"] == "op" and r["kind"] == "ncclAllReduce"
              and r["datatype"] == "float32"]
        ar.sort(key=lambda r: r["enter_ns"])
        sizes = [r["bytes"] for r in ar]
        total = sum(sizes)
        print(f"rank {rank}: {len(ar)} float32 all-reduces, {total} bytes "
              f"({total / RESNET50_GRADIENT_BYTES:.3f} x ResNet-50's gradient)")
        # Cut the sequence into steps at every multiple of the gradient size.
        step_sizes, acc, buckets = [], 0, []
        for b in sizes:
            acc += b
            buckets.append(b)
            if acc == RESNET50_GRADIENT_BYTES:
                step_sizes.append(buckets)
                acc, buckets = 0, []
        for i, bs in enumerate(step_sizes):
            print(f"  step {i}: {len(bs)} buckets, MB " + " ".join(f"{b / 1e6:.1f}" for b in bs))
        if len(step_sizes) != steps or acc != 0:
            failures.append(f"rank {rank}: all-reduce bytes do not split into {steps} steps of "
                            f"{RESNET50_GRADIENT_BYTES} bytes ({len(step_sizes)} found, {acc} left)")
        limit = DDP_BUCKET_CAP + RESNET50_LARGEST_PARAMETER_BYTES
        if any(b > limit for bs in step_sizes[1:] for b in bs):
            failures.append(f"rank {rank}: a bucket after step 0 above {limit} bytes (DDP's 25 MiB "
                            "cap plus ResNet-50's largest parameter)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dltrace", required=True)
    ap.add_argument("what", choices=["world1", "ddp"])
    ap.add_argument("path")
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    ranks = load(a.dltrace, a.path)
    if not ranks:
        sys.exit(f"check: no ranks in {a.path}")
    failures = []
    check_gpu_times(ranks, failures)
    if a.what == "world1":
        check_world1(ranks, failures)
    else:
        check_ddp(ranks, a.steps, failures)
    for f in failures[:20]:
        print("FAIL " + f)
    if failures:
        sys.exit(1)
    print(f"check {a.what}: ok")


if __name__ == "__main__":
    main()
