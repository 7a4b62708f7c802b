#!/usr/bin/env python3
"""The flow-level engine against the ns-3 module on the same traces: a matrix
of algorithms (ring, tree, hd, ps), topologies (star, leaf-spine at
oversubscription 1 and 4, fat-tree) and one or two jobs on a shared
bottleneck. Per scenario both engines simulate the same trace with compute
gaps off (so the iteration time is the network's). Two traces: "all-reduce"
(bandwidth-bound: NCCL all-reduce buckets only) and "mixed" (the buckets
overlapped with an MPI broadcast, ring sends and a barrier). The test asserts,
on the all-reduce trace, the flow engine's mean steady-state iteration time
within TOLERANCE of ns-3's; on both, that every endpoint received the bytes its
schedule says in both engines and that both engines carried the same bytes on
every link (they share one ECMP rule, models::FlowHash). Run as a script it
prints the tables the README shows (--quick: fewer scenarios)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
SAMPLE = os.environ.get("DLTRACE_SAMPLE_TRACE", "dltrace-sample-trace")
TOLERANCE = 0.05
# Scenarios where the two models are known to part by more (README "Validation
# against ns-3"): SimGrid weights each flow's share by its route (a flow over
# the oversubscribed spine gets a third of a leaf-local flow's share of a
# shared link) where ns-3's TCP shares about equally, and the tree's and the
# parameter server's critical paths run through those flows. Bounded here so
# that a change that widens the gap still fails.
KNOWN_GAPS = {"tree, leaf-spine 4:1": 0.15, "ps, leaf-spine 4:1": 0.12, "tree, fat-tree k=4": 0.10}
RATE = "10Gbps"

ALGOS = ["ring", "tree", "hd", "ps"]
TOPOLOGIES = [
    ("star", "star:rate=%s" % RATE),
    ("leaf-spine 1:1", "leaf-spine:hosts-per-leaf=4,rate=%s" % RATE),
    ("leaf-spine 4:1", "leaf-spine:hosts-per-leaf=4,oversub=4,rate=%s" % RATE),
    ("fat-tree k=4", "fat-tree:k=4,rate=%s" % RATE),
]


QUICK = {("leaf-spine 4:1", "ring"), ("leaf-spine 4:1", "tree"), ("leaf-spine 4:1", "hd"), ("star", "ps"),
         ("fat-tree k=4", "hd")}


def scenarios(quick=False):
    """(name, simulate arguments after the engine) per scenario."""
    out = []
    for label, topo in TOPOLOGIES:
        for algo in ALGOS:
            # Quick: each algorithm where paths or sharing decide most, and the ring everywhere else.
            if quick and (label, algo) not in QUICK:
                continue
            out.append(("%s, %s" % (algo, label), lambda t, topo=topo, algo=algo: [t, "--topo", topo, "--algo", algo]))
    # Two jobs, each with half its ranks on either side of a dumbbell's 10G bottleneck.
    out.append(("ring, 2 jobs on a dumbbell", lambda t: [
        "--job", t + ":hosts=0-3,8-11", "--job", t + ":hosts=4-7,12-15",
        "--topo", "dumbbell:hosts=16,rate=%s,bottleneck=%s" % (RATE, RATE), "--algo", "ring"]))
    return out


def simulate(engine, args, out):
    start = time.time()
    p = subprocess.run([DLTRACE, "simulate", "--engine", engine, "--time-scale", "0", "--util-ms", "1", "-o", out]
                       + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("%s: dltrace simulate %s failed (%d): %s" % (engine, " ".join(args), p.returncode,
                                                                        p.stderr.strip()[-500:]))
    return time.time() - start, p.stdout


def results_dirs(out):
    jobs = sorted(d for d in os.listdir(out) if d.startswith("job"))
    return [os.path.join(out, d) for d in jobs] or [out]


# A message that took longer than this in ns-3 (where a 4 MB message needs
# under 10 ms at 10 Gbit/s) is a stalled connection, not a network effect.
STALL_NS = 1e9


def ns3_stalls(out):
    """Messages of an ns-3 run that took longer than STALL_NS."""
    with open(os.path.join(out, "flows.csv")) as f:
        next(f)
        return sum(1 for line in f if float(line.rsplit(",", 1)[1]) > STALL_NS)


def check_bytes(testcase, out):
    for d in results_dirs(out):
        for name in os.listdir(d):
            if name.endswith(".results.json"):
                with open(os.path.join(d, name)) as f:
                    r = json.load(f)
                testcase.assertTrue(r["complete"], (d, name, r["error"]))
                testcase.assertEqual(r["bytes_received"], r["bytes_scheduled_recv"], (d, name))
                testcase.assertEqual(r["bytes_sent"], r["bytes_scheduled_send"], (d, name))


def mean_iteration(ns3_dir, flow_dir):
    """Mean steady-state iteration time (ms) of each engine, per job, as dltrace compare computes it."""
    pairs = []
    for a, b in zip(results_dirs(ns3_dir), results_dirs(flow_dir)):
        p = subprocess.run([DLTRACE, "compare", a, b, "--json"], capture_output=True, text=True)
        if p.returncode not in (0, 3):
            raise AssertionError("compare %s %s: %s" % (a, b, p.stderr))
        runs = json.loads(p.stdout)["runs"]
        pairs.append((runs[0]["mean_iteration_ms"], runs[1]["mean_iteration_ms"]))
    return pairs


def link_bytes(out):
    """Bytes each directed link carried over the run (links.csv)."""
    total = {}
    with open(os.path.join(out, "links.csv")) as f:
        next(f)
        for line in f:
            _, link, b, _ = line.split(",")
            total[link] = total.get(link, 0) + float(b)
    return total


# Links that carried less than this are left out of the per-link comparison.
# The counts differ by convention within a few percent (ns-3 counts headers
# and ACKs on the wire, the flow engine payload over its bandwidth factor,
# and ns-3's last partial sample period); a connection on another path moves
# a whole message's bytes (tens of percent).
LINK_MIN_BYTES = 1e6
LINK_TOLERANCE = 0.10
# Scenarios where the two models are known to part by more (README "Validation
# against ns-3"): SimGrid weights each flow's share by its route (a flow over
# the oversubscribed spine gets a third of a leaf-local flow's share of a
# shared link) where ns-3's TCP shares about equally, and the tree's and the
# parameter server's critical paths run through those flows. Bounded here so
# that a change that widens the gap still fails.
KNOWN_GAPS = {"tree, leaf-spine 4:1": 0.15, "ps, leaf-spine 4:1": 0.12, "tree, fat-tree k=4": 0.10}


def check_links(testcase, name, ns3_dir, flow_dir):
    a, b = link_bytes(ns3_dir), link_bytes(flow_dir)
    for link in sorted(set(a) | set(b)):
        x, y = a.get(link, 0), b.get(link, 0)
        if max(x, y) < LINK_MIN_BYTES:
            continue
        testcase.assertLess(abs(x - y) / max(x, y), LINK_TOLERANCE,
                            "%s: link %s carried %.0f bytes in ns-3, %.0f in the flow engine" % (name, link, x, y))


TRACES = ["all-reduce", "mixed"]


def make_trace(tmp, kind):
    # 8 ranks, one per host: all-reduce buckets (with --nccl-only), or the
    # buckets with an MPI broadcast, ring sends and a barrier.
    trace = os.path.join(tmp, "trace-" + kind)
    subprocess.run([SAMPLE, "-o", trace, "--ranks", "8", "--hosts", "8", "--iterations", "3", "--buckets", "2",
                    "--bucket-bytes", "4000000"] + (["--nccl-only"] if kind == "all-reduce" else []),
                   check=True, capture_output=True)
    return trace


def run_matrix(tmp, quick, kind, testcase=None):
    trace = make_trace(tmp, kind)
    rows = []
    for i, (name, args) in enumerate(scenarios(quick)):
        ns3_dir, flow_dir = (os.path.join(tmp, "%s-%s-%d" % (engine, kind, i)) for engine in ("ns3", "flow"))
        ns3_wall, _ = simulate("ns3", args(trace), ns3_dir)
        flow_wall, _ = simulate("flow", args(trace), flow_dir)
        if testcase:
            check_bytes(testcase, ns3_dir)
            check_bytes(testcase, flow_dir)
            check_links(testcase, name, ns3_dir, flow_dir)
        stalls = ns3_stalls(ns3_dir)
        for j, (ns3_ms, flow_ms) in enumerate(mean_iteration(ns3_dir, flow_dir)):
            rows.append((name + ("" if j == 0 and "2 jobs" not in name else " (job %d)" % j), ns3_ms, flow_ms,
                         (flow_ms - ns3_ms) / ns3_ms, ns3_wall, flow_wall, stalls))
    return rows


def print_table(rows):
    print("| scenario | ns-3 ms | flow ms | error | ns-3 wall s | flow wall s |")
    print("|---|---|---|---|---|---|")
    for name, a, b, err, wa, wb, stalls in rows:
        note = " (ns-3: %d stalled messages)" % stalls if stalls else ""
        print("| %s | %.3f | %.3f | %+.1f%%%s | %.1f | %.2f |" % (name, a, b, err * 100, note, wa, wb))


class FlowAgainstNs3(unittest.TestCase):
    def run_kind(self, kind):
        with tempfile.TemporaryDirectory() as tmp:
            rows = run_matrix(tmp, os.environ.get("DLTRACE_FLOW_MATRIX", "quick") != "full", kind, testcase=self)
            print("\n%s trace:" % kind)
            print_table(rows)
            return rows

    def test_bandwidth_bound_iteration_times_within_tolerance_of_ns3(self):
        for name, a, b, err, _, _, stalls in self.run_kind("all-reduce"):
            self.assertEqual(stalls, 0, name + ": ns-3 stalled")
            bound = KNOWN_GAPS.get(name, TOLERANCE)
            self.assertLess(abs(err), bound, "%s: flow %.3f ms, ns-3 %.3f ms (%+.1f%%, bound %.0f%%)"
                            % (name, b, a, err * 100, bound * 100))

    def test_mixed_traffic_same_bytes_and_paths(self):
        if os.environ.get("DLTRACE_FLOW_MATRIX", "quick") != "full":
            self.skipTest("the mixed trace runs in flow_vs_ns3_matrix (label long)")
        # Iteration times are printed, not asserted: where flows of different
        # ops join a busy link, TCP's transients decide (README).
        self.run_kind("mixed")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--table", "--quick"):
        for kind in TRACES:
            with tempfile.TemporaryDirectory() as tmp:
                print("\n%s trace:" % kind)
                print_table(run_matrix(tmp, sys.argv[1] == "--quick", kind))
    else:
        unittest.main(verbosity=2)
