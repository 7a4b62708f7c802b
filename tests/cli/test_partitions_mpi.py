#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace simulate --engine ns3 --partitions 2` against the same run in one
process: a two-job leaf-spine scenario whose jobs share the leaves' uplinks
and cross the cut between the two partitions (one leaf each, by leaf), with
both PDES algorithms (null-message and barrier). Every endpoint moves
exactly the bytes it moved sequentially, and every iteration's time is
within BOUND_NS of the sequential one (see below and README "Partitioned
ns-3"); the merged layout (job<J>/rank<E>.results.json, flows.csv,
links.csv) is complete and links.csv's totals equal the sequential ones.

Needs dltrace built against an ns-3 tree with MPI (NS3_MPI=1
scripts/ns3-contrib-build.sh): exits 77 (skipped) on any other build."""
import glob
import os
import subprocess
import sys
import tempfile

from views_fixtures import check_op_bytes, link_totals, load_json, sample_trace, say_skip_without_mpi

DLTRACE = os.environ.get("DLTRACE", "dltrace")
SKIP = 77

# The topology's every link has this delay; by leaf, the leaf-spine links
# cross partitions, so it is the lookahead.
LOOKAHEAD_NS = 1000
# ns-3's conservative algorithms run every event at its sequential
# timestamp; what may differ is the order of events with EQUAL timestamps
# (one process breaks ties by insertion order, and a packet from another
# partition is inserted when its MPI message arrives). The test allows each
# iteration one lookahead per message that crosses the cut in it (a message
# crossing the cut waits at most one lookahead window for the tie it lost).
def bound_ns(cross_messages):
    return LOOKAHEAD_NS * cross_messages


def run(*args, timeout=900):
    return subprocess.run([DLTRACE, *args], capture_output=True, text=True, timeout=timeout)


def main():
    if say_skip_without_mpi():
        return SKIP
    tmp = tempfile.TemporaryDirectory()
    # Small enough for a loaded machine: 2 all-reduce buckets of 2 MB, 2 iterations.
    trace = sample_trace(os.path.join(tmp.name, "small4"), iterations=2, bucket_bytes=2000000)
    # Leaf 0 holds hosts 0-3, leaf 1 hosts 4-7: each job has two hosts under each leaf.
    common = ["--engine", "ns3", "--algo", "ring",
              "--topo", "leaf-spine:leaves=2,hosts-per-leaf=4,spines=2,rate=10Gbps,delay=1us",
              "--job", trace + ":hosts=0,1,4,5", "--job", trace + ":hosts=2,3,6,7:start=1ms"]
    seq = os.path.join(tmp.name, "seq")
    r = run("simulate", *common, "-o", seq)
    assert r.returncode == 0, r.stdout + r.stderr
    failures = []
    for pdes in ("null-message", "barrier"):
        out = os.path.join(tmp.name, pdes)
        r = run("simulate", *common, "--partitions", "2", "--pdes", pdes, "-o", out)
        if r.returncode != 0:
            failures.append("%s: exit %d: %s" % (pdes, r.returncode, r.stderr[-2000:]))
            continue
        print("--- %s\n%s" % (pdes, r.stdout))
        for name in ("flows.csv", "links.csv", "flowmon.p0.xml", "flowmon.p1.xml"):
            if not os.path.exists(os.path.join(out, name)):
                failures.append("%s: no %s" % (pdes, name))
        for job in (0, 1):
            files = sorted(glob.glob(os.path.join(seq, "job%d" % job, "rank*.results.json")))
            if len(files) != 4:
                failures.append("sequential job%d: %d results files" % (job, len(files)))
            for f in files:
                a = load_json(f)
                b = load_json(os.path.join(out, "job%d" % job, os.path.basename(f)))
                where = "%s job%d endpoint %d" % (pdes, job, a["endpoint"])
                if not b["complete"]:
                    failures.append(where + ": incomplete: " + b["error"])
                for key in ("bytes_sent", "bytes_received", "bytes_scheduled_send", "bytes_scheduled_recv"):
                    if a[key] != b[key]:
                        failures.append("%s: %s %d sequential, %d partitioned" % (where, key, a[key], b[key]))
                check_op_bytes(where, a, b, failures)
                for ia, ib in zip(a["iterations"], b["iterations"]):
                    da = ia["end_ns"] - ia["start_ns"]
                    db = ib["end_ns"] - ib["start_ns"]
                    # Ring all-reduce on 4 endpoints, 2 per leaf: of each op's
                    # 2(n-1) = 6 steps per endpoint, the ones to or from the
                    # other leaf cross (at most all of them): 6 per op.
                    ops = sum(1 for op in a["ops"] if op["iteration"] == ia["iteration"]
                              and (op["sent_bytes"] or op["received_bytes"]))
                    limit = bound_ns(6 * ops)
                    print("%s iteration %d: %d ns sequential, %d ns partitioned, diff %d ns, bound %d ns"
                          % (where, ia["iteration"], da, db, db - da, limit))
                    if abs(db - da) > limit:
                        failures.append("%s iteration %d: %d ns vs %d ns sequential (bound %d ns)"
                                        % (where, ia["iteration"], db, da, limit))
        # links.csv samples every millisecond and once more when the run
        # stops; the partitions stop together up to 2 ms after the last
        # endpoint, the sequential run at it, so every link carried at least
        # as much in the partitioned samples.
        ta, tb = link_totals(seq), link_totals(out)
        if set(ta) != set(tb):
            failures.append("%s links.csv: links %s sequential, %s partitioned" % (pdes, sorted(ta), sorted(tb)))
        for name, total in ta.items():
            if tb.get(name, 0) < total:
                failures.append("%s links.csv %s: %s bytes sequential, %s partitioned" % (pdes, name, total, tb.get(name)))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
