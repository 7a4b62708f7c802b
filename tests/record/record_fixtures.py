"""What the recorder's tests share: a recording read back with `dltrace
dump`, and the NCCL test double's programs recorded as torchrun starts them
(4 ranks, 2 per node, tests/nccl/launch.py)."""
import json
import os
import subprocess
import sys

DLTRACE = os.environ["DLTRACE"]
SRC = os.environ.get("PROJECT_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LAUNCH = [sys.executable, os.path.join(SRC, "tests", "nccl", "launch.py")]
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def dump(path, rank=None):
    """`dltrace dump PATH [--rank RANK]`: (exit status, the records, stderr)."""
    args = [DLTRACE, "dump", path] + (["--rank", str(rank)] if rank is not None else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines()], p.stderr


def expected_lines(out, rank):
    """What the NCCL test program wrote it did on RANK (OUT/expected.rankR.jsonl)."""
    with open(os.path.join(out, f"expected.rank{rank}.jsonl")) as f:
        return [json.loads(l) for l in f]


def record_launched(out, program, record_args=(), env=None, timeout=300):
    """`dltrace record RECORD_ARGS -o OUT --` over PROGRAM OUT on 4 ranks started as torchrun starts them."""
    return subprocess.run([DLTRACE, "record", *record_args, "-o", out, "--"] + LAUNCH +
                          ["--nproc", "4", "--per-node", "2", "--", program, out],
                          capture_output=True, text=True, timeout=timeout, env=env)
