#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Compares what the NCCL profiler plugin recorded with what NCCL itself
logged: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING makes rank 0 print, for every
collective it enqueues (src/enqueue.cc, NCCL 2.2x),
  "AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}".
The trace's operations of communicator rank 0 must show the same function,
algorithm and protocol in the same order, and channels Hi - Lo + 1. Give
each process its own log (NCCL_DEBUG_FILE=...%p): lines of processes that
share one stdout can interleave mid-line.

usage: check_nccl_choices.py --dltrace DLTRACE TRACE_DIR NCCL_LOG..."""
import argparse
import json
import re
import subprocess
import sys

LINE = re.compile(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dltrace", required=True)
    ap.add_argument("trace")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    logged = []
    for log in a.logs:  # only rank 0 of a communicator prints them
        with open(log, errors="replace") as f:
            for line in f:
                m = LINE.search(line)
                if m:
                    func, _, algo, proto, lo, hi = m.groups()
                    logged.append(("nccl" + func, algo.lower(), proto.lower(), int(hi) - int(lo) + 1))
    if not logged:
        sys.exit("no 'Bytes -> Algo' lines in %s (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING?)"
                 % " ".join(a.logs))
    p = subprocess.run([a.dltrace, "dump", a.trace], capture_output=True, text=True, check=True)
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    rank0 = {(r["rank"], r["id"]) for r in recs if r["type"] == "comm" and r["comm_rank"] == 0}
    ops = sorted((r for r in recs if r["type"] == "op" and (r["rank"], r["comm"]) in rank0
                  and "nccl_algorithm" in r), key=lambda r: r["enter_ns"])
    recorded = [(o["kind"], o["nccl_algorithm"].lower(), o["nccl_protocol"].lower(), o.get("nccl_channels", 0))
                for o in ops]
    differ = [(i, r, l) for i, (r, l) in enumerate(zip(recorded, logged)) if r != l]
    for i, r, l in differ[:20]:
        print("check_nccl_choices: op %d: recorded %s, NCCL logged %s" % (i, r, l))
    print("check_nccl_choices: %d operations recorded, %d logged by NCCL, %d of them agree"
          % (len(recorded), len(logged), min(len(recorded), len(logged)) - len(differ)))
    return 1 if differ or len(recorded) != len(logged) else 0


if __name__ == "__main__":
    sys.exit(main())
