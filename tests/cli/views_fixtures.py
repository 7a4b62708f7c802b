# SPDX-License-Identifier: GPL-2.0-only
"""Trace sets and helpers the CLI tests share: a synthetic one from
`dltrace synth`, and a real one recorded from the MPI training program under
mpirun (when MPI and the recorder were built: DLTRACE_MPI_TRAIN names it)."""
import csv
import json
import os
import subprocess

DLTRACE = os.environ.get("DLTRACE", "dltrace")
MPI_TRAIN = os.environ.get("DLTRACE_MPI_TRAIN", "")
MPI_ALL_CALLS = os.environ.get("DLTRACE_MPI_ALL_CALLS", "")
SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")


def mpirun():
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run(*args, timeout=300, **kw):
    return subprocess.run([DLTRACE, *args], capture_output=True, text=True, timeout=timeout, **kw)


def ns3_built_with_mpi():
    """Whether `dltrace --version` says its ns-3 simulator has MPI (partitioned runs)."""
    out = run("--version").stdout
    return any(l.startswith("ns-3 simulator:") and "with MPI" in l for l in out.splitlines())


def say_skip_without_mpi():
    """True, with the SKIP line printed, where this dltrace's ns-3 has no MPI
    (the partitioned tests then return ctest's skip code)."""
    if ns3_built_with_mpi():
        return False
    print("SKIP: this dltrace's ns-3 has no MPI (build the tree with NS3_MPI=1 "
          "scripts/ns3-contrib-build.sh, then ./scripts/build.sh)")
    return True


def synth_with(out, *flags):
    """`dltrace synth FLAGS -o OUT`, asserted to succeed; returns OUT."""
    p = run("synth", *flags, "-o", out)
    assert p.returncode == 0, p.stderr
    return out


def synth_resnet50(out, ranks, per_host, iterations, *extra):
    """`dltrace synth` of ResNet-50 data-parallel training with the model's own
    compute times (RANKS ranks, PER_HOST to a host, ITERATIONS) and EXTRA flags."""
    return synth_with(out, "--model", "resnet50", "--ranks", str(ranks), "--ranks-per-host", str(per_host),
                      "--iterations", str(iterations), *extra)


def link_totals(out):
    """Bytes each link direction carried over a simulation (OUT/links.csv's
    samples added up)."""
    totals = {}
    with open(os.path.join(out, "links.csv")) as f:
        for row in csv.DictReader(f):
            totals[row["link"]] = totals.get(row["link"], 0.0) + float(row["bytes"])
    return totals


def sample_trace(out, ranks=4, iterations=1, buckets=2, bucket_bytes=4000000, hosts=None):
    """A small NCCL-only trace set from dltrace-sample-trace, one rank per host
    unless HOSTS says how many: BUCKETS all-reduces of BUCKET_BYTES per
    iteration. Packet-level runs of it take seconds where a synthetic
    ResNet-50 (102 MB per iteration) takes minutes."""
    p = subprocess.run([SAMPLE, "-o", out, "--ranks", str(ranks), "--hosts", str(hosts or ranks), "--iterations",
                        str(iterations), "--buckets", str(buckets), "--bucket-bytes", str(bucket_bytes),
                        "--nccl-only"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def synth(out, ranks=4, per_host=2, iterations=2, model="resnet50", extra=()):
    return synth_with(out, "--model", model, "--ranks", str(ranks), "--ranks-per-host", str(per_host),
                      "--iterations", str(iterations), "--dtype", "bf16", "--compute-ms", "10", *extra)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def check_op_bytes(where, sequential, partitioned, failures):
    """Two rank*.results.json of one endpoint: the same ops, each with the same bytes sent and received."""
    a, b = ([(op["op"], op["sent_bytes"], op["received_bytes"]) for op in r["ops"]] for r in (sequential, partitioned))
    if a != b:
        failures.append("%s: ops (op, sent, received) %r sequential, %r partitioned" % (where, a[:4], b[:4]))


def info_json(path):
    p = run("info", path, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def record_training(out, ranks=4, steps=20):
    """Records the MPI training program; returns (path, None) or (None, why not)."""
    if not MPI_TRAIN or not os.path.exists(MPI_TRAIN):
        return None, "the MPI training program was not built (no MPI or recorder)"
    p = run("record", "-o", out, "--sample-ms", "20", "--", *mpirun(), "-np", str(ranks), MPI_TRAIN,
            "--steps", str(steps))
    if p.returncode != 0:
        raise AssertionError("recording the MPI training run failed: " + p.stderr[-2000:])
    return out, None


def record_all_calls(out, scratch):
    """Records the program making every MPI call (point-to-point, scan, v-forms)."""
    if not MPI_ALL_CALLS or not os.path.exists(MPI_ALL_CALLS):
        return None, "the MPI all-calls program was not built (no MPI or recorder)"
    os.makedirs(scratch, exist_ok=True)
    p = run("record", "-o", out, "--", *mpirun(), "-np", "4", MPI_ALL_CALLS, scratch)
    if p.returncode != 0:
        raise AssertionError("recording the MPI all-calls run failed: " + p.stderr[-2000:])
    return out, None


def op_count(path):
    return info_json(path)["events"]
