#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A torchrun-like launcher for tests without PyTorch: starts N copies of a
command with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT and TORCHELASTIC_RUN_ID set as torchrun sets them (plus
FAKE_CUDA_DEVICE = LOCAL_RANK for the test double), waits for all, and exits
non-zero if any failed. Like torchrun's agent it never calls NCCL itself.

usage: launch.py --nproc N [--per-node K] -- CMD ARGS..."""
import os
import subprocess
import sys


def main(argv):
    nproc, per_node = 1, None
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--nproc":
            nproc = int(argv[i + 1])
            i += 2
        elif argv[i] == "--per-node":
            per_node = int(argv[i + 1])
            i += 2
        else:
            sys.exit("launch.py: unknown option " + argv[i])
    cmd = argv[i + 1:]
    if not cmd:
        sys.exit(__doc__)
    per_node = per_node or nproc
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank % per_node),
                   WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(per_node),
                   GROUP_RANK=str(rank // per_node), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT="29500", TORCHELASTIC_RUN_ID="fake-run-42",
                   FAKE_CUDA_DEVICE=str(rank % per_node))
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    bad = [c for c in codes if c != 0]
    return bad[0] if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
