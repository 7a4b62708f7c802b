#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ns-3 RDMA at packet level against --fast-forward, side by side in one run:
# one synthetic data-parallel iteration (ring all-reduce) on a star of HOSTS
# hosts, for each congestion control; prints wall time and speedup, packets
# simulated, the CPU-time ratio, the iteration-time difference, the message-completion p50 and
# p99 differences, PFC pause frames of both, and whether the bytes per
# endpoint and message counts are equal.
#
# usage: scripts/bench-ff.sh [build_dir]      (default build/, or $DLTRACE_BUILD_DIR)
# env:   DLTRACE_BENCH_FF_MODEL   synth model                (default resnet152)
#        DLTRACE_BENCH_FF_HOSTS   hosts, one rank each        (default 16)
#        DLTRACE_BENCH_FF_BUCKET  DDP bucket cap in MiB       (default 1024: one all-reduce of the whole gradient)
#        DLTRACE_BENCH_FF_TOPO    --topo                      (default star:rate=100Gbps)
#        DLTRACE_BENCH_FF_CCS     congestion controls         (default "dcqcn hpcc")
#        DLTRACE_BENCH_FF_ARGS    more simulate options for both runs (default none)
#        DLTRACE_BENCH_FF_KEEP    a directory to keep each run's outputs and log in (default none)
#        DLTRACE_BENCH_PIN        the CPU every run is pinned to, or none (default the last CPU allowed)
# Prints figures from one run of each; it asserts nothing beyond every run succeeding.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_ff_simulate.sh

build=${1:-${DLTRACE_BUILD_DIR:-build}}
dltrace=$build/cli/dltrace
model=${DLTRACE_BENCH_FF_MODEL:-resnet152}
hosts=${DLTRACE_BENCH_FF_HOSTS:-16}
bucket=${DLTRACE_BENCH_FF_BUCKET:-1024}
topo=${DLTRACE_BENCH_FF_TOPO:-star:rate=100Gbps}
ccs=${DLTRACE_BENCH_FF_CCS:-dcqcn hpcc}
read -r -a extra <<<"${DLTRACE_BENCH_FF_ARGS:-}"
[[ -x $dltrace ]] || { echo "bench-ff: $dltrace not found; build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${DLTRACE_BENCH_FF_KEEP:-}
[[ -z $keep ]] || mkdir -p "$keep"

"$dltrace" synth --model "$model" --ranks "$hosts" --ranks-per-host 1 --iterations 1 --compute-ms 1 \
  --bucket-mb "$bucket" -o "$work/trace" >/dev/null
echo "bench-ff: $model, $hosts hosts, bucket $bucket MiB, ring, --topo $topo; $(ff_pinned); load $(cut -d' ' -f1-3 /proc/loadavg)"
for cc in $ccs; do
  for mode in full ff; do
    flags=()
    [[ $mode == full ]] || flags=(--fast-forward)
    ff_simulate "bench-ff: $cc $mode" "$cc-$mode" "$work/trace" --topo "$topo" --algo ring \
      --transport rdma --cc "$cc" ${extra[@]+"${extra[@]}"} "${flags[@]}"
    [[ -z $keep ]] || cp -r "$work/$cc-$mode" "$work/$cc-$mode.log" "$keep/"
  done
done
/usr/bin/python3 - "$work" $ccs <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from bench_ff_runs import diff, load, pct
work, ccs = sys.argv[1], sys.argv[2:]

def run(name):
    r = load(work, name)
    r["it"] = float(re.search(r"^0\s+\S+\s+(\S+)", r["log"], re.M).group(1))
    r["done"] = sorted(float(m["completion_s"]) for m in r["messages"])
    return r

print("%-6s %8s %8s %8s %8s %12s %12s %9s %8s %8s %11s %6s" % ("cc", "full_s", "ff_s", "speedup", "cpu_x",
      "pkts_full", "pkts_ff", "iter_%", "p50_%", "p99_%", "pauses", "same"))
for cc in ccs:
    a, b = run(cc + "-full"), run(cc + "-ff")
    same = len(a["done"]) == len(b["done"]) and a["endpoints"] == b["endpoints"]
    print("%-6s %8.1f %8.1f %7.1fx %7.1fx %12d %12d %+9.3f %+8.3f %+8.3f %5d/%-5d %6s" % (
        cc, a["wall"], b["wall"], a["wall"] / max(b["wall"], 1e-9), a["user"] / max(b["user"], 1e-9),
        a["simulated"], b["simulated"],
        diff(a["it"], b["it"]), diff(pct(a["done"], 0.5), pct(b["done"], 0.5)),
        diff(pct(a["done"], 0.99), pct(b["done"], 0.99)), a["pauses"], b["pauses"], "yes" if same else "NO"))
print("full_s, ff_s: wall seconds; cpu_x: user CPU time of full over ff; pkts: link transmissions simulated; iter_%, p50_%, p99_%: fast-forward's "
      "iteration time and message completion times against packet level; pauses: PFC frames full/ff; "
      "same: equal message count and bytes per endpoint")
PY
