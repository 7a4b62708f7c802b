#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
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
every link (they share one ECMP rule, models::FlowHash).

The RDMA column: the same scenarios on ns-3's RoCEv2 fabric with HPCC and
PFC (`--transport rdma --cc hpcc`) against the flow engine, once at its
default bandwidth factor (TCP's payload share) and once at RoCEv2 + HPCC's
payload share (rdma_bandwidth_factor: like with like). The long matrix
asserts the latter within TOLERANCE on the bandwidth-bound scenarios
(bandwidth_bound: the alpha-beta estimate's bandwidth term dominates); the
default run checks only that one HPCC run completes with every endpoint's
bytes equal to the all-reduce's closed form. Run as a script it prints the
tables the README shows (--quick: fewer scenarios; --rdma: the RDMA column
only, without the TCP runs)."""
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
RATE = "10Gbps"

ALGOS = ["ring", "tree", "hd", "ps"]
# (label, --topo, switches on the topology's longest host-to-host path: the
# RDMA column's INT overhead, see rdma_bandwidth_factor).
TOPOLOGIES = [
    ("star", "star:rate=%s" % RATE, 1),
    ("leaf-spine 1:1", "leaf-spine:hosts-per-leaf=4,rate=%s" % RATE, 3),
    ("leaf-spine 4:1", "leaf-spine:hosts-per-leaf=4,oversub=4,rate=%s" % RATE, 3),
    ("fat-tree k=4", "fat-tree:k=4,rate=%s" % RATE, 5),
]


QUICK = {("leaf-spine 4:1", "ring"), ("leaf-spine 4:1", "tree"), ("leaf-spine 4:1", "hd"), ("star", "ps"),
         ("fat-tree k=4", "hd")}


class Scenario:
    def __init__(self, name, algo, switches, args):
        self.name, self.algo, self.switches, self.args = name, algo, switches, args


def scenarios(quick=False):
    """The matrix's scenarios; args(trace) gives the simulate arguments after the engine."""
    out = []
    for label, topo, switches in TOPOLOGIES:
        for algo in ALGOS:
            # Quick: each algorithm where paths or sharing decide most, and the ring everywhere else.
            if quick and (label, algo) not in QUICK:
                continue
            out.append(Scenario("%s, %s" % (algo, label), algo, switches,
                                lambda t, topo=topo, algo=algo: [t, "--topo", topo, "--algo", algo]))
    # Two jobs, each with half its ranks on either side of a dumbbell's 10G bottleneck.
    out.append(Scenario("ring, 2 jobs on a dumbbell", "ring", 2, lambda t: [
        "--job", t + ":hosts=0-3,8-11", "--job", t + ":hosts=4-7,12-15",
        "--topo", "dumbbell:hosts=16,rate=%s,bottleneck=%s" % (RATE, RATE), "--algo", "ring"]))
    return out


# The RDMA column: ns-3's RoCEv2 fabric, HPCC, PFC on (the default).
RDMA = ["--transport", "rdma", "--cc", "hpcc"]
# RoCEv2 + HPCC on the wire, from the README ("RDMA transport") and the HPCC
# paper: per MTU of payload a data frame of MTU + 62 bytes, and per data
# packet a 64-byte ACK (AckInterval 1); INT adds 2 + 16 bytes per switch to
# both; HPCC paces each link to ETA of its rate counting all of these. A
# ring or halving-doubling step sends and receives on every host link at
# once, so the ACKs of the incoming data share the link with the outgoing
# data; a tree's or a parameter server's phases load a link one way.
MTU, ROCE_OVERHEAD, ACK_FRAME, HPCC_ETA = 1024, 62, 64, 0.95
ACKS_SHARE_THE_LINK = {"ring", "hd"}
# Where HPCC and the flow engine at that factor part by more than TOLERANCE
# (README "RDMA transport", against the flow engine), bounded so that a
# wider gap fails: HPCC's window starts each ring or halving-doubling step
# below eta (star -6.6%); HPCC's sharing behind the 4:1 leaf-spine's
# uplinks; INT counted for the longest path where most of a ring's hops
# stay in a leaf or pod (halving-doubling on the fat-tree). Set to the
# figures of 2026-11-29 plus two or three points (docs: results/rdma.md):
# the ns-3 RDMA fabric had changed since the bounds were set, and the
# flow engine had moved to equal shares and a send buffer (its RDMA runs
# take --send-buffer 0).
RDMA_KNOWN_GAPS = {
    # hd on both leaf-spines and the fat-tree is among the rows where packet level itself is chaotic
    # (docs/results/rdma.md, fast-forward): the canonical scheduler's tie order moved ns-3 by -2.2% (1:1),
    # +3.2% (4:1) and -4.0% (fat-tree) on 2026-11-29; their bounds are those figures plus 2-3 points.
    ("all-reduce", "ring, star"): 0.09, ("all-reduce", "hd, star"): 0.09, ("all-reduce", "hd, leaf-spine 1:1"): 0.10,
    ("all-reduce", "hd, leaf-spine 4:1"): 0.09,
    ("all-reduce", "ring, leaf-spine 4:1"): 0.16, ("all-reduce", "ps, leaf-spine 4:1"): 0.23,
    ("all-reduce", "ring, fat-tree k=4"): 0.07, ("all-reduce", "hd, fat-tree k=4"): 0.31,
    ("all-reduce", "ps, fat-tree k=4"): 0.09, ("all-reduce", "ring, 2 jobs on a dumbbell (job 0)"): 0.15,
    ("mixed", "hd, star"): 0.08, ("mixed", "ring, leaf-spine 4:1"): 0.16, ("mixed", "ps, leaf-spine 4:1"): 0.19,
    ("mixed", "ring, fat-tree k=4"): 0.07, ("mixed", "hd, fat-tree k=4"): 0.18, ("mixed", "ps, fat-tree k=4"): 0.09,
    # The canonical scheduler's tie order (2026-11-29) moved these chaotic mixed rows most: ns-3 HPCC's hd on
    # the 4:1 leaf-spine 46.0 -> 56.8 ms (a message starved longer: max slowdown 1.8e3 -> 3.7e3, no drop,
    # PFC or extra CNP), the dumbbell's job 0 25.0 -> 21.6 ms, hd on the fat-tree 31.3 -> 29.9 ms.
    ("mixed", "hd, leaf-spine 4:1"): 0.18,
    # HPCC shares the dumbbell's bottleneck unequally between the two jobs (21.6 and 27.2 ms, canonical scheduler).
    ("mixed", "ring, 2 jobs on a dumbbell (job 0)"): 0.32,
}


def rdma_bandwidth_factor(algo, switches):
    """Payload share of a link HPCC holds at eta, for ALGO's flows crossing SWITCHES switches."""
    int_bytes = 2 + 16 * switches
    wire = MTU + ROCE_OVERHEAD + int_bytes
    if algo in ACKS_SHARE_THE_LINK:
        wire += ACK_FRAME + int_bytes
    return HPCC_ETA * MTU / wire


def simulate(engine, args, out, extra=()):
    start = time.time()
    p = subprocess.run([DLTRACE, "simulate", "--engine", engine, "--time-scale", "0", "--util-ms", "1", "-o", out]
                       + list(extra) + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("%s: dltrace simulate %s failed (%d): %s" % (engine, " ".join(args), p.returncode,
                                                                        p.stderr.strip()[-500:]))
    return time.time() - start, p.stdout


# Bandwidth-bound: the schedule's alpha-beta estimate (dltrace schedule) at
# the matrix's link rate spends at least BANDWIDTH_SHARE of its network time
# in the bandwidth term (bytes / rate) and the rest in the latency term
# (LATENCY_US per transfer: a fat-tree's longest path is 6 links of 1 us
# plus a store-and-forward frame per switch). The estimate includes the
# trace's compute gaps, which the matrix turns off: each term is the
# estimate with it less the estimate without either, so only the part of
# each term on the critical path counts.
BANDWIDTH_SHARE = 0.9
LATENCY_US = 10
NO_TIME = 1e9  # Gbit/s: a bandwidth term of ~0


def estimate_ms(trace, algo, gbps, latency_us):
    p = subprocess.run([DLTRACE, "schedule", trace, "--algo", algo, "--json", "--link-gbps", str(gbps),
                        "--latency-us", str(latency_us)], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("schedule %s --algo %s failed: %s" % (trace, algo, p.stderr.strip()[-500:]))
    return json.loads(p.stdout)["estimate_total_ms"]


def bandwidth_share(trace, algo):
    """Share of the alpha-beta estimate's network time in its bandwidth term."""
    gbps = float(RATE[:-len("Gbps")])
    base = estimate_ms(trace, algo, NO_TIME, 0)
    bandwidth = estimate_ms(trace, algo, gbps, 0) - base
    latency = estimate_ms(trace, algo, NO_TIME, LATENCY_US) - base
    return bandwidth / (bandwidth + latency)


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


def mean_iteration(dirs):
    """Per job, the mean steady-state iteration time (ms) of each run in DIRS, as dltrace compare computes it."""
    means = []
    for per_job in zip(*(results_dirs(d) for d in dirs)):
        p = subprocess.run([DLTRACE, "compare"] + list(per_job) + ["--json"], capture_output=True, text=True)
        if p.returncode not in (0, 3):
            raise AssertionError("compare %s: %s" % (" ".join(per_job), p.stderr))
        means.append([r["mean_iteration_ms"] for r in json.loads(p.stdout)["runs"]])
    return means


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
# and ACKs on the wire, the flow engine payload);
# a connection on another path moves
# a whole message's bytes (tens of percent).
LINK_MIN_BYTES = 1e6
# The incremental solver against SimGrid with full updates: rounding only.
# (SimGrid's default lazy updates sometimes leave a flow at its rate when
# another flow joins its link, e.g. tree on the 1:1 leaf-spine, where two
# mirror-image cross-leaf flows end 0.59 ms apart: up to 1.5% of the mean
# iteration on this matrix; README "Flow-level simulation".)
INCREMENTAL_TOLERANCE = 1e-6
LINK_TOLERANCE = 0.10
# Scenarios where the two models are known to part by more (docs:
# results/flow-vs-ns3): the parameter server behind the 4:1 leaf-spine's
# uplinks (+5.3% on 2026-11-29). Bounded here so that a change that widens
# the gap still fails. (Until the flow simulator shared links equally, the
# tree on the 4:1 leaf-spine and on the fat-tree were here too: SimGrid's
# route weighting gave a flow over the spine a third of a leaf-local flow's
# share, where ns-3's TCP shares about equally.)
KNOWN_GAPS = {"ps, leaf-spine 4:1": 0.08}


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


def run_matrix(tmp, quick, kind, testcase=None, tcp=True, rdma=False):
    """One row per scenario and job: the flow engine against ns-3 over TCP (TCP) and RDMA with HPCC (RDMA)."""
    trace = make_trace(tmp, kind)
    rows = []
    for i, sc in enumerate(scenarios(quick)):
        d = {engine: os.path.join(tmp, "%s-%s-%d" % (engine, kind, i))
             for engine in ("tcp", "rdma", "flow", "flow-rdma", "flow-incremental", "flow-full")}
        args = sc.args(trace)
        wall = {"flow": simulate("flow", args, d["flow"])[0]}
        runs = []
        if tcp:
            wall["tcp"] = simulate("ns3", args, d["tcp"])[0]
            runs.append("tcp")
        if rdma:
            factor = rdma_bandwidth_factor(sc.algo, sc.switches)
            wall["rdma"] = simulate("ns3", args, d["rdma"], RDMA)[0]
            # An RDMA send is done when its receiver acknowledges it, not when a socket buffer takes it.
            simulate("flow", args, d["flow-rdma"], ["--cfg", "network/bandwidth-factor:%.4f" % factor,
                                                    "--send-buffer", "0"])
            runs += ["rdma", "flow-rdma"]
            share = bandwidth_share(trace, sc.algo)
        if testcase:
            check_bytes(testcase, d["flow"])
            for r in runs:
                check_bytes(testcase, d[r])
            # Link bytes from the incremental solver, which counts what
            # crossed each link as rates change (SimGrid's link-load plugin
            # counts a link's load at its own flows' starts and ends only:
            # README "Flow-level simulation"). Its iteration times must be
            # those of SimGrid re-solving every flow at every event
            # (network/optim:Full), the same sharing solved another way.
            simulate("flow", args, d["flow-incremental"], ["--solver", "incremental"])
            simulate("flow", args, d["flow-full"], ["--cfg", "network/optim:Full"])
            check_bytes(testcase, d["flow-incremental"])
            for full, incremental in zip(mean_iteration([d["flow-full"]]), mean_iteration([d["flow-incremental"]])):
                testcase.assertLessEqual(abs(full[0] - incremental[0]), INCREMENTAL_TOLERANCE * full[0], sc.name)
            if tcp:
                check_links(testcase, sc.name, d["tcp"], d["flow-incremental"])
        stalls = ns3_stalls(d["tcp"]) if tcp else 0
        for j, means in enumerate(mean_iteration([d["flow"]] + [d[r] for r in runs])):
            row = {"name": sc.name + ("" if "2 jobs" not in sc.name else " (job %d)" % j),
                   "flow": means[0], "flow_wall": wall["flow"]}
            row.update((r, means[1 + k]) for k, r in enumerate(runs))
            if tcp:
                row.update(tcp_err=(row["flow"] - row["tcp"]) / row["tcp"], tcp_wall=wall["tcp"], stalls=stalls)
            if rdma:
                row.update(rdma_err_tcp_factor=(row["flow"] - row["rdma"]) / row["rdma"],
                           rdma_err=(row["flow-rdma"] - row["rdma"]) / row["rdma"], rdma_wall=wall["rdma"],
                           factor=factor, bandwidth_share=share)
            rows.append(row)
    return rows


def print_table(rows):
    print("| scenario | ns-3 ms | flow ms | error | ns-3 wall s | flow wall s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        note = " (ns-3: %d stalled messages)" % r["stalls"] if r["stalls"] else ""
        print("| %s | %.3f | %.3f | %+.1f%%%s | %.1f | %.2f |" % (r["name"], r["tcp"], r["flow"], r["tcp_err"] * 100,
                                                                 note, r["tcp_wall"], r["flow_wall"]))


def print_rdma_table(rows):
    print("| scenario | bandwidth term | ns-3 RDMA HPCC ms | flow ms | error | flow ms, RoCE factor | factor | error "
          "| ns-3 wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.1f%% | %.3f | %.3f | %+.1f%% | %.3f | %.3f | %+.1f%% | %.1f |" % (
            r["name"], r["bandwidth_share"] * 100, r["rdma"], r["flow"], r["rdma_err_tcp_factor"] * 100,
            r["flow-rdma"], r["factor"], r["rdma_err"] * 100, r["rdma_wall"]))


def full_matrix():
    return os.environ.get("DLTRACE_FLOW_MATRIX", "quick") == "full"


class FlowAgainstNs3(unittest.TestCase):
    def run_kind(self, kind, **engines):
        with tempfile.TemporaryDirectory() as tmp:
            rows = run_matrix(tmp, not full_matrix(), kind, testcase=self, **engines)
            print("\n%s trace:" % kind)
            if engines.get("tcp", True):
                print_table(rows)
            if engines.get("rdma"):
                print_rdma_table(rows)
            return rows

    def test_bandwidth_bound_iteration_times_within_tolerance_of_ns3(self):
        for r in self.run_kind("all-reduce"):
            self.assertEqual(r["stalls"], 0, r["name"] + ": ns-3 stalled")
            bound = KNOWN_GAPS.get(r["name"], TOLERANCE)
            self.assertLess(abs(r["tcp_err"]), bound, "%s: flow %.3f ms, ns-3 %.3f ms (%+.1f%%, bound %.0f%%)"
                            % (r["name"], r["flow"], r["tcp"], r["tcp_err"] * 100, bound * 100))

    def test_mixed_traffic_same_bytes_and_paths(self):
        if not full_matrix():
            self.skipTest("the mixed trace runs in flow_vs_ns3_matrix (label long)")
        # Iteration times are printed, not asserted: where flows of different
        # ops join a busy link, TCP's transients decide (README).
        self.run_kind("mixed")

    def test_rdma_hpcc_delivers_the_all_reduce_closed_form_bytes(self):
        # Default run: the 4:1 leaf-spine ring over RDMA with HPCC and PFC
        # completes, and every endpoint sends and receives what a ring
        # all-reduce moves: 2 (n - 1) / n of each bucket, per bucket and
        # iteration (the trace's 2 buckets of 4,000,000 bytes, 3 iterations).
        ranks, buckets, bucket_bytes, iterations = 8, 2, 4000000, 3
        expected = 2 * (ranks - 1) * (bucket_bytes // ranks) * buckets * iterations
        sc = [s for s in scenarios() if s.name == "ring, leaf-spine 4:1"][0]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rdma")
            _, stdout = simulate("ns3", sc.args(make_trace(tmp, "all-reduce")), out, RDMA)
            self.assertIn("congestion control hpcc", stdout)
            results = [n for n in os.listdir(out) if n.endswith(".results.json")]
            self.assertEqual(len(results), ranks)
            for name in results:
                with open(os.path.join(out, name)) as f:
                    r = json.load(f)
                self.assertTrue(r["complete"], (name, r["error"]))
                self.assertEqual(r["bytes_sent"], expected, name)
                self.assertEqual(r["bytes_received"], expected, name)

    def test_rdma_hpcc_within_tolerance_of_flow_on_bandwidth_bound_scenarios(self):
        if not full_matrix():
            self.skipTest("accuracy bounds run in flow_vs_ns3_matrix (label long)")
        for kind in TRACES:
            for r in self.run_kind(kind, tcp=False, rdma=True):
                if r["bandwidth_share"] < BANDWIDTH_SHARE:
                    continue
                bound = RDMA_KNOWN_GAPS.get((kind, r["name"]), TOLERANCE)
                self.assertLess(abs(r["rdma_err"]), bound,
                                "%s (%s trace): flow %.3f ms at factor %.3f, RDMA HPCC %.3f ms (%+.1f%%, bound %.0f%%)"
                                % (r["name"], kind, r["flow-rdma"], r["factor"], r["rdma"], r["rdma_err"] * 100,
                                   bound * 100))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--table", "--quick", "--rdma"):
        quick = "--quick" in sys.argv
        rdma = "--rdma" in sys.argv
        for kind in TRACES:
            with tempfile.TemporaryDirectory() as tmp:
                rows = run_matrix(tmp, quick, kind, tcp=not rdma, rdma=rdma)
                print("\n%s trace:" % kind)
                (print_rdma_table if rdma else print_table)(rows)
    else:
        unittest.main(verbosity=2)
