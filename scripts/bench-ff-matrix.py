#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""ns-3 RDMA packet by packet against --fast-forward on the RDMA scenarios of
the flow-vs-ns-3 matrix (tests/flow/flow_vs_ns3.py: 8 hosts at 10 Gbit/s,
ring, tree, hd and ps on a star, two leaf-spines, a fat-tree, and two jobs on
a dumbbell; the "all-reduce" and "mixed" traces, 3 iterations, compute gaps
off). Prints per scenario: the full run's job time, the largest difference
of a job's time, the message-completion p50 and p99 differences, PFC pause
frames of both, the share of simulated time skipped, the holds of steady
sets (their summed length over the simulated time) and the CPU-time ratio,
one row per variant run.

usage: scripts/bench-ff-matrix.py [build_dir] [--cc CC] [--traces all-reduce,mixed] [--only "SUBSTR;..."]
                                  [--args "more options for every run"] [--variants "OPTIONS;..."]
--variants: the runs set against packet level, one row each (default
--fast-forward). A perturbation of packet level alone (--cc-param
Eta=0.95000001, a change of 1e-8) shows how far so small a change moves a
scenario: the floor under any fast-forward's error there.
Asserts nothing beyond every run succeeding."""
import argparse
import csv
import os
import re
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "flow"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_ff_runs import diff, pct  # noqa: E402


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(dltrace, args, out, extra, env=None):
    before = child_cpu()
    command = [dltrace, "simulate", "--engine", "ns3", "--time-scale", "0", "--util-ms", "1", "-o", out] + extra + args
    p = subprocess.run(command, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench-ff-matrix: simulate %s failed: %s" % (" ".join(extra + args), p.stderr.strip()[-400:]))
    cpu = child_cpu() - before
    jobs = [float(m) for m in re.findall(r"job time ([\d.]+) ms", p.stdout)]
    pauses = int(re.search(r"rdma: (\d+) PFC pause frames", p.stdout).group(1))
    m = re.search(r"fast-forward: \d+ skips, .* \(([\d.]+)%\)", p.stdout)
    h = re.search(r"s of ([\d.]+) s simulated .* (\d+) holds of a steady set \(([\d.]+) s held", p.stdout)
    done = []
    for path in [os.path.join(out, "messages.csv")] + [os.path.join(out, d, "messages.csv")
                                                      for d in sorted(os.listdir(out))
                                                      if os.path.isdir(os.path.join(out, d))]:
        if os.path.exists(path):
            with open(path) as f:
                done += [float(r["completion_s"]) for r in csv.DictReader(f)]
    held = 100 * float(h.group(3)) / float(h.group(1)) if h and float(h.group(1)) > 0 else 0.0
    return dict(cpu=cpu, jobs=jobs, pauses=pauses, skipped=float(m.group(1)) if m else 0.0, held=held,
                done=sorted(done))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.environ.get("DLTRACE_BUILD_DIR", "build"))
    ap.add_argument("--cc", default="hpcc")
    ap.add_argument("--traces", default="all-reduce,mixed")
    ap.add_argument("--only", default="", help="substrings of scenario names, separated by ;")
    ap.add_argument("--args", default="", help="more simulate options for every run")
    ap.add_argument("--variants", default="--fast-forward",
                    help="runs to set against packet level, separated by ;, each its own simulate options "
                         "(default --fast-forward), optionally after NAME=VALUE environment settings")
    o = ap.parse_args()
    dltrace = os.path.join(o.build, "cli", "dltrace")
    os.environ["DLTRACE_SAMPLE_TRACE"] = os.path.join(o.build, "tests", "dltrace-sample-trace")
    import flow_vs_ns3 as m
    only = [s for s in o.only.split(";") if s]
    extra = ["--transport", "rdma", "--cc", o.cc] + o.args.split()
    print("bench-ff-matrix: --cc %s %s; load %s" % (o.cc, o.args, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("%-10s %-28s %10s %8s %8s %8s %11s %6s %6s %6s %s" % ("trace", "scenario", "job_ms", "job_%", "p50_%",
                                                              "p99_%", "pauses", "skip%", "held%", "cpu_x", "variant"))
    with tempfile.TemporaryDirectory() as tmp:
        for kind in o.traces.split(","):
            trace = m.make_trace(tmp, kind)
            for i, sc in enumerate(m.scenarios()):
                if only and not any(s in sc.name for s in only):
                    continue
                args = sc.args(trace)
                a = run(dltrace, args, os.path.join(tmp, "full-%s-%d" % (kind, i)), extra)
                for v, variant in enumerate(o.variants.split(";")):
                    words = variant.split()
                    env = dict(os.environ)
                    while words and "=" in words[0] and not words[0].startswith("-"):
                        name, value = words.pop(0).split("=", 1)
                        env[name] = value
                    b = run(dltrace, args, os.path.join(tmp, "v%d-%s-%d" % (v, kind, i)), extra + words, env)
                    job = max((diff(x, y) for x, y in zip(a["jobs"], b["jobs"])), key=abs)
                    print("%-10s %-28s %10.3f %+8.3f %+8.3f %+8.3f %5d/%-5d %6.0f %6.0f %5.1fx %s" % (
                        kind, sc.name, max(a["jobs"]), job, diff(pct(a["done"], 0.5), pct(b["done"], 0.5)),
                        diff(pct(a["done"], 0.99), pct(b["done"], 0.99)), a["pauses"], b["pauses"], b["skipped"], b["held"],
                        a["cpu"] / max(b["cpu"], 1e-9), variant), flush=True)
    print("job_ms: the full run's longest job time; job_%: largest difference of a job's time; "
          "p50_%, p99_%: message completion times; pauses: PFC frames full/variant; skip%: simulated time skipped; "
          "held%: holds of steady sets (--fast-forward-sets), their summed length over the simulated time; "
          "cpu_x: CPU time of full over the variant")


if __name__ == "__main__":
    main()
