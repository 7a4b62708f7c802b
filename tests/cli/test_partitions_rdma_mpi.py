#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate --engine ns3 --transport rdma --partitions 2` against the
same run in one process, with both PDES algorithms:

- by leaf, DCQCN: two jobs whose rings cross the cut on the leaf-spine
  links (data, ACKs and CNPs cross as frames);
- a map with every host in partition 0 and every switch in partition 1, no
  congestion control, a spine at a quarter of the hosts' rate and 1 MB of
  switch buffer: the leaves' PFC pause frames reach the hosts across the
  cut (about 1,500 in the sequential run).

Every endpoint moves exactly the bytes it moved sequentially, op by op, and
every iteration starts and ends at the sequential nanosecond; the PFC frames
the partitions sent add up to the sequential run's (and in the second case
there are some, received by the hosts' partition), and so does the merged
summary's count. The RDMA files partition 0 writes hold the whole run and
equal the sequential run's row for row (in any order): messages.csv (a
message to another partition completed by its receiver's delivery),
qps.csv, pfc.csv. Exact because the event queue
(DltraceCanonicalScheduler, `--scheduler canonical`, the default) runs the
frames arriving in one nanosecond by port, not in the order they were
queued: a frame from another partition is queued when its MPI message is
handled, and with ns-3's heap it could run in another place among its
nanosecond's events (before: barrier at most 1.6 us off in the DCQCN case;
docs/results/scale-partitioned.md).

Needs dltrace built against an ns-3 tree with MPI (NS3_MPI=1
scripts/ns3-contrib-build.sh): exits 77 (skipped) on any other build."""
import csv
import glob
import os
import re
import subprocess
import sys
import tempfile

from views_fixtures import check_op_bytes, load_json, sample_trace, say_skip_without_mpi

DLTRACE = os.environ.get("DLTRACE", "dltrace")
SKIP = 77


def run(*args, env=None, timeout=900):
    return subprocess.run([DLTRACE, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def sequential_pauses(stdout):
    m = re.search(r"rdma: (\d+) PFC pause frames", stdout)
    assert m, stdout
    return int(m.group(1))


def partition_pauses(stdout):
    """Per partition: (PFC pause frames sent, received) from its summary line."""
    return {int(p): (int(s), int(r)) for p, s, r in
            re.findall(r"partition (\d+):.*?, (\d+) PFC pause frames sent, (\d+) received", stdout)}


def compare(name, seq, out, failures):
    """Bytes and iteration times exactly."""
    for f in sorted(glob.glob(os.path.join(seq, "job*", "rank*.results.json"))):
        rel = os.path.relpath(f, seq)
        a = load_json(f)
        b = load_json(os.path.join(out, rel))
        where = "%s %s" % (name, rel)
        if not b["complete"]:
            failures.append(where + ": incomplete: " + b["error"])
        for key in ("bytes_sent", "bytes_received", "bytes_scheduled_send", "bytes_scheduled_recv"):
            if a[key] != b[key]:
                failures.append("%s: %s %d sequential, %d partitioned" % (where, key, a[key], b[key]))
        check_op_bytes(where, a, b, failures)
        if len(a["iterations"]) != len(b["iterations"]):
            failures.append("%s: %d iterations sequential, %d partitioned"
                            % (where, len(a["iterations"]), len(b["iterations"])))
        for ia, ib in zip(a["iterations"], b["iterations"]):
            if (ia["start_ns"], ia["end_ns"]) != (ib["start_ns"], ib["end_ns"]):
                failures.append("%s iteration %d: %d..%d ns sequential, %d..%d ns partitioned"
                                % (where, ia["iteration"], ia["start_ns"], ia["end_ns"], ib["start_ns"], ib["end_ns"]))


def rows(out, name):
    with open(os.path.join(out, name)) as f:
        return list(csv.DictReader(f))


def compare_files(name, seq, out, failures):
    """The RDMA files of partition 0 against the sequential run's: the same rows."""
    for f in ("messages.csv", "qps.csv", "pfc.csv"):
        a, b = (sorted(tuple(r.values()) for r in rows(d, f)) for d in (seq, out))
        if a != b:
            extra = [r for r in b if r not in a]
            failures.append("%s: %s: %d rows partitioned, %d sequential; first not sequential: %r"
                            % (name, f, len(b), len(a), extra[:1]))


def main():
    if say_skip_without_mpi():
        return SKIP
    tmp = tempfile.TemporaryDirectory()
    trace = sample_trace(os.path.join(tmp.name, "small4"), iterations=2, bucket_bytes=1000000)
    jobs = ["--job", trace + ":hosts=0,1,4,5", "--job", trace + ":hosts=2,3,6,7:start=100us"]
    map_file = os.path.join(tmp.name, "hosts-apart.map")
    with open(map_file, "w") as f:
        f.write("".join("h%d 0\n" % h for h in range(8)) + "leaf0 1\nleaf1 1\nspine0 1\n")
    cases = [
        ("by-leaf-dcqcn", ["--topo", "leaf-spine:leaves=2,hosts-per-leaf=4,spines=2,rate=10Gbps,delay=1us",
                           "--cc", "dcqcn"], [], {}),
        # mpirun's processes inherit the environment, so the attribute reaches both partitions.
        ("pfc-across-cut", ["--topo", "leaf-spine:leaves=2,hosts-per-leaf=4,spines=1,oversub=4,rate=10Gbps,delay=1us",
                            "--cc", "none"], ["--partition-map", map_file],
         {"NS_ATTRIBUTE_DEFAULT": "ns3::DltraceRdmaSwitchMmu::BufferSize=1000000"}),
    ]
    failures = []
    for name, scenario, partition_args, env in cases:
        common = ["--engine", "ns3", "--algo", "ring", "--transport", "rdma", "--no-flowmon", *scenario, *jobs]
        seq = os.path.join(tmp.name, name + "-seq")
        r = run("simulate", *common, "-o", seq, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        pauses = sequential_pauses(r.stdout)
        print("--- %s sequential: %d PFC pause frames" % (name, pauses))
        if name == "pfc-across-cut" and pauses == 0:
            failures.append(name + ": the sequential run has no PFC pause (the case tests nothing)")
        for pdes in ("null-message", "barrier"):
            out = os.path.join(tmp.name, "%s-%s" % (name, pdes))
            r = run("simulate", *common, "--partitions", "2", "--pdes", pdes, *partition_args, "-o", out, env=env)
            where = "%s %s" % (name, pdes)
            if r.returncode != 0:
                failures.append("%s: exit %d: %s" % (where, r.returncode, r.stderr[-2000:]))
                continue
            print("--- %s\n%s" % (where, r.stdout))
            compare(where, seq, out, failures)
            parts = partition_pauses(r.stdout)
            if sorted(parts) != [0, 1]:
                failures.append("%s: no PFC counts of both partitions in %r" % (where, r.stdout))
                continue
            sent = sum(s for s, _ in parts.values())
            if sent != pauses:
                failures.append("%s: %d PFC pause frames sent in all, %d sequential" % (where, sent, pauses))
            if sequential_pauses(r.stdout) != pauses:
                failures.append("%s: the summary says %d PFC pause frames, the sequential run %d"
                                % (where, sequential_pauses(r.stdout), pauses))
            compare_files(where, seq, out, failures)
            if name == "pfc-across-cut" and parts[0][1] == 0:
                failures.append(where + ": the hosts' partition received no PFC pause frame")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
