#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ns-3 RDMA at packet level against --fast-forward and --fast-forward-sets,
# side by side in one run, on two jobs that share a leaf-spine but no link:
# a steady one (one data-parallel iteration of MODEL, its gradient in one
# ring all-reduce, on the first leaf's hosts) beside a busy one (the same
# model with small buckets: many short all-reduces, on the second leaf's).
# The fabric as a whole is never steady while the busy job runs, so the
# whole-fabric fast-forward skips little; --fast-forward-sets holds the
# steady job's links apart. Prints per congestion control and mode: wall
# time and speedup over packet level, the CPU-time ratio, link transmissions
# simulated, each job's time difference, the message-completion p50 and p99
# differences, PFC pause frames, and whether the bytes per endpoint and
# message counts equal packet level's.
#
# usage: scripts/bench-ff-sets.sh [build_dir]      (default build/, or $DLTRACE_BUILD_DIR)
# env:   DLTRACE_BENCH_FF_MODEL   synth model                      (default resnet152)
#        DLTRACE_BENCH_FF_HOSTS   hosts per leaf (= ranks per job) (default 8)
#        DLTRACE_BENCH_FF_SMALL   the busy job's bucket cap in MiB (default 1)
#        DLTRACE_BENCH_FF_RATE    every link's rate                (default 100Gbps)
#        DLTRACE_BENCH_FF_CCS     congestion controls              (default "dcqcn hpcc")
#        DLTRACE_BENCH_PIN        the CPU every run is pinned to, or none (default the last CPU allowed)
# Prints figures from one run of each; it asserts nothing beyond every run succeeding.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_ff_simulate.sh

build=${1:-${DLTRACE_BUILD_DIR:-build}}
dltrace=$build/cli/dltrace
model=${DLTRACE_BENCH_FF_MODEL:-resnet152}
hosts=${DLTRACE_BENCH_FF_HOSTS:-8}
small=${DLTRACE_BENCH_FF_SMALL:-1}
rate=${DLTRACE_BENCH_FF_RATE:-100Gbps}
ccs=${DLTRACE_BENCH_FF_CCS:-dcqcn hpcc}
[[ -x $dltrace ]] || { echo "bench-ff-sets: $dltrace not found; build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for job in steady busy; do
  bucket=1024
  [[ $job == steady ]] || bucket=$small
  "$dltrace" synth --model "$model" --ranks "$hosts" --ranks-per-host 1 --iterations 1 --compute-ms 1 \
    --bucket-mb "$bucket" -o "$work/$job" >/dev/null
done
topo="leaf-spine:leaves=2,spines=2,hosts-per-leaf=$hosts,rate=$rate"
jobs=(--job "$work/steady:hosts=0-$((hosts - 1))" --job "$work/busy:hosts=$hosts-$((2 * hosts - 1))")
echo "bench-ff-sets: $model on hosts 0-$((hosts - 1)) (one bucket) beside $model with $small MiB buckets" \
  "on hosts $hosts-$((2 * hosts - 1)), ring, --topo $topo; $(ff_pinned); load $(cut -d' ' -f1-3 /proc/loadavg)"
for cc in $ccs; do
  for mode in full ff sets; do
    flags=()
    [[ $mode != ff ]] || flags=(--fast-forward)
    [[ $mode != sets ]] || flags=(--fast-forward-sets)
    ff_simulate "bench-ff-sets: $cc $mode" "$cc-$mode" "${jobs[@]}" --topo "$topo" --algo ring \
      --transport rdma --cc "$cc" "${flags[@]}"
  done
done
/usr/bin/python3 - "$work" $ccs <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from bench_ff_runs import diff, load, pct
work, ccs = sys.argv[1], sys.argv[2:]

def run(name):
    r = load(work, name)
    r["jobs"] = [float(x) for x in re.findall(r"job time ([\d.]+) ms", r["log"])]
    r["done"] = {j: sorted(float(m["completion_s"]) for m in r["messages"] if m["job"] == j) for j in ("0", "1")}
    return r

print("%-6s %-5s %7s %8s %7s %12s %9s %9s %14s %14s %11s %5s" % ("cc", "mode", "wall_s", "speedup", "cpu_x",
      "pkts", "steady_%", "busy_%", "p50_% (s, b)", "p99_% (s, b)", "pauses", "same"))
for cc in ccs:
    a = run(cc + "-full")
    for mode in ("full", "ff", "sets"):
        b = run(cc + "-" + mode)
        same = len(a["messages"]) == len(b["messages"]) and a["endpoints"] == b["endpoints"]
        print("%-6s %-5s %7.1f %7.1fx %6.1fx %12d %+9.3f %+9.3f %+6.2f %+6.2f %+6.2f %+6.2f %5d/%-5d %5s" % (
            cc, mode, b["wall"], a["wall"] / max(b["wall"], 1e-9), a["user"] / max(b["user"], 1e-9), b["simulated"],
            diff(a["jobs"][0], b["jobs"][0]), diff(a["jobs"][1], b["jobs"][1]),
            diff(pct(a["done"]["0"], 0.5), pct(b["done"]["0"], 0.5)), diff(pct(a["done"]["1"], 0.5), pct(b["done"]["1"], 0.5)),
            diff(pct(a["done"]["0"], 0.99), pct(b["done"]["0"], 0.99)), diff(pct(a["done"]["1"], 0.99), pct(b["done"]["1"], 0.99)),
            a["pauses"], b["pauses"], "yes" if same else "NO"))
print("mode: full packet level, ff --fast-forward, sets --fast-forward-sets; speedup, cpu_x: wall and user CPU of "
      "full over the mode; pkts: link transmissions simulated; steady_%, busy_%: each job's time against packet "
      "level; p50_%, p99_%: message completion times of the steady (s) and busy (b) job; pauses: PFC frames "
      "full/mode; same: equal message count and bytes per endpoint")
PY
