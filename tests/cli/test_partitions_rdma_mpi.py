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

Every endpoint moves exactly the bytes it moved sequentially, op by op; the PFC
frames the partitions sent add up to the sequential run's (and in the second
case there are some, received by the hosts' partition), and so does the
merged summary's count. The RDMA files partition 0 writes hold the whole
run: messages.csv every message, completed (one to another partition by its
receiver's delivery) within the iteration times' bound of its sequential
times, qps.csv every QP with the bytes it had acknowledged, pfc.csv every
port's frames. Iteration times: ns-3's
conservative algorithms run every event at its sequential time, but a frame
from another partition enters the event queue when its MPI message is
handled, so among events of the SAME nanosecond its order can differ from
one process's (null messages: as messages happen to arrive; barrier: at the
end of each lookahead window). Where no such tie matters the times are
equal to the nanosecond, and the test prints whether they were; it asserts
the TCP test's bound, one lookahead per message crossing the cut in the
iteration (measured: null messages equal in both cases, barrier equal in
the PFC case and at most 1.6 us apart in 98.6 ms in the DCQCN case; see
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
# Every link of both topologies has this delay, the lookahead of either cut.
LOOKAHEAD_NS = 1000


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
    """Bytes exactly, times within the bound; returns the largest time difference seen (ns)."""
    worst = 0
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
            # Ring all-reduce on 4 endpoints: each op's 2(n-1) = 6 steps per endpoint may all cross.
            ops = sum(1 for op in a["ops"] if op["iteration"] == ia["iteration"]
                      and (op["sent_bytes"] or op["received_bytes"]))
            diff = abs((ib["end_ns"] - ib["start_ns"]) - (ia["end_ns"] - ia["start_ns"]))
            worst = max(worst, diff, abs(ib["end_ns"] - ia["end_ns"]))
            if diff > LOOKAHEAD_NS * 6 * ops:
                failures.append("%s iteration %d: %d..%d ns sequential, %d..%d ns partitioned (bound %d ns)"
                                % (where, ia["iteration"], ia["start_ns"], ia["end_ns"], ib["start_ns"], ib["end_ns"],
                                   LOOKAHEAD_NS * 6 * ops))
    return worst


def rows(out, name):
    with open(os.path.join(out, name)) as f:
        return list(csv.DictReader(f))


def compare_files(name, seq, out, bound_ns, failures):
    """The RDMA files of partition 0 against the sequential run's (message times within BOUND_NS)."""
    shape = ("job", "src", "dst", "channel", "priority", "bytes")
    a, b = rows(seq, "messages.csv"), rows(out, "messages.csv")
    if sorted(tuple(r[k] for k in shape) for r in a) != sorted(tuple(r[k] for k in shape) for r in b):
        failures.append("%s: messages.csv has %d messages partitioned, %d sequential (or others)"
                        % (name, len(b), len(a)))
    undone = [r for r in b if not r["completion_s"]]
    if undone:
        failures.append("%s: messages.csv: %d of %d messages without a completion, first %r"
                        % (name, len(undone), len(b), undone[0]))
    # Each route's messages in the order posted: posted and completed within BOUND of the sequential times.
    def by_route(rs):
        routes = {}
        for r in rs:
            routes.setdefault(tuple(r[k] for k in shape[:4]), []).append(r)
        return {k: sorted(v, key=lambda r: float(r["posted_s"])) for k, v in routes.items()}
    worst = 0
    routes_b = by_route(b)
    for route, ms in by_route(a).items():
        for x, y in zip(ms, routes_b.get(route, [])):
            if y["completion_s"]:
                worst = max(worst, abs(float(x["posted_s"]) - float(y["posted_s"])),
                            abs(float(x["posted_s"]) + float(x["completion_s"])
                                - float(y["posted_s"]) - float(y["completion_s"])))
    if worst * 1e9 > bound_ns:
        failures.append("%s: messages.csv: a message posted or completed %.0f ns from its sequential time (bound %d)"
                        % (name, worst * 1e9, bound_ns))
    same = sorted(map(sorted, (r.items() for r in a))) == sorted(map(sorted, (r.items() for r in b)))
    print("%s: messages.csv %s" % (name, "rows equal to the sequential run's" if same else
                                   "times at most %.0f ns from the sequential ones" % (worst * 1e9)))
    acked = ("job", "src", "dst", "channel", "priority", "bytes_acked")
    a, b = rows(seq, "qps.csv"), rows(out, "qps.csv")
    if sorted(tuple(r[k] for k in acked) for r in a) != sorted(tuple(r[k] for k in acked) for r in b):
        failures.append("%s: qps.csv: %d QPs partitioned, %d sequential, or other bytes acknowledged"
                        % (name, len(b), len(a)))
    sent = [sum(int(r["pauses_sent"]) for r in rows(d, "pfc.csv")) for d in (seq, out)]
    if sent[0] != sent[1]:
        failures.append("%s: pfc.csv: %d pause frames sent partitioned, %d sequential" % (name, sent[1], sent[0]))


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
            worst = compare(where, seq, out, failures)
            print("%s: iteration times %s" % (where, "equal to the nanosecond" if worst == 0 else
                                             "at most %d ns from the sequential ones" % worst))
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
            # Times: the iteration bound over the whole run (4 ops of 6 steps each).
            compare_files(where, seq, out, LOOKAHEAD_NS * 6 * 4, failures)
            if name == "pfc-across-cut" and parts[0][1] == 0:
                failures.append(where + ": the hosts' partition received no PFC pause frame")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
