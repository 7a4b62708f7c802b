#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A training job on a 4:1 oversubscribed leaf-spine, alone and beside a
# smaller second job (equal priority, then the smaller job in a higher
# traffic class), under TCP (NewReno), DCTCP, RDMA with DCQCN and RDMA with
# HPCC. Prints per setting and job the mean iteration time, PFC pause
# frames, peak switch queue and message-completion slowdown p50/p99 (RDMA
# runs), and plots the iteration times into OUT/rdma-study.png (needs
# python3-matplotlib). DCTCP has no small-first run: TCP priorities need
# strict-priority FIFO bands at the switches, DCTCP needs RED-ECN queues.
# Usage: scripts/rdma-study.sh [OUT_DIR]
#   env: DLTRACE (build/cli/dltrace), ITERATIONS (3), CCS ("tcp dctcp dcqcn hpcc"),
#        JOBS (1: how many simulations run at once; each is one process),
#        ARGS (more simulate options for the RDMA runs, e.g. --fast-forward)
set -euo pipefail
OUT=${1:-rdma-study}
DLTRACE=${DLTRACE:-build/cli/dltrace}
ITERATIONS=${ITERATIONS:-3}
JOBS=${JOBS:-1}
CCS=${CCS:-tcp dctcp dcqcn hpcc}
read -r -a RDMA_ARGS <<<"${ARGS:-}"
TOPO="leaf-spine:leaves=2,spines=1,hosts-per-leaf=4,oversub=4,rate=25Gbps"
if [ -e "$OUT" ]; then echo "rdma-study: $OUT exists (never overwritten)" >&2; exit 1; fi
mkdir -p "$OUT"
# The big job: ResNet-50, 4 ranks, bf16 gradients; the small one: 2 ranks.
"$DLTRACE" synth --model resnet50 --ranks 4 --ranks-per-host 1 --iterations "$ITERATIONS" --dtype bf16 \
  --compute-ms 20 --link-gbps 25 -o "$OUT/big" >/dev/null
"$DLTRACE" synth --model resnet50 --ranks 2 --ranks-per-host 1 --iterations "$ITERATIONS" --dtype bf16 \
  --compute-ms 20 --link-gbps 25 -o "$OUT/small" >/dev/null
# Every ring hop of both jobs crosses the leaves' 4:1 uplinks.
BIG="$OUT/big:hosts=0,4,1,5"
SMALL="$OUT/small:hosts=2,6"
simulate() {  # NAME CC [simulate options...]
  local name=$1 cc=$2; shift 2
  local transport
  case $cc in
    tcp) transport=(--cc TcpNewReno --no-flowmon) ;;
    dctcp) transport=(--cc TcpDctcp --no-flowmon) ;;
    *) transport=(--transport rdma --cc "$cc" ${RDMA_ARGS[@]+"${RDMA_ARGS[@]}"}) ;;
  esac
  "$DLTRACE" simulate --topo "$TOPO" --algo ring "${transport[@]}" --util-ms 1 "$@" -o "$OUT/$name" \
    >"$OUT/$name.log" 2>&1 || { echo "rdma-study: $name failed, see $OUT/$name.log" >&2; return 1; }
}
failed=0
run() {  # as simulate, at most JOBS at once
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
  simulate "$@" &
}
for cc in $CCS; do
  run "$cc-alone" "$cc" --job "$BIG"
  run "$cc-shared" "$cc" --job "$BIG" --job "$SMALL"
  # Over TCP a priority is a DSCP class served by strict-priority FIFO bands.
  if [ "$cc" != dctcp ]; then run "$cc-small-first" "$cc" --job "$BIG" --job "$SMALL:priority=1"; fi
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
if [ "$failed" -ne 0 ]; then exit 1; fi
python3 - "$OUT" "$CCS" <<'PY'
import csv, glob, json, os, re, sys
out, ccs = sys.argv[1], sys.argv[2].split()
rows = []
print("%-26s %-6s %10s %8s %12s %9s %9s" % ("setting", "job", "iter_ms", "pauses", "peak_queue_B", "slow_p50", "slow_p99"))
for cc in ccs:
    for case in ("alone", "shared", "small-first"):
        name = "%s-%s" % (cc, case)
        if not os.path.exists(os.path.join(out, name + ".log")):
            continue  # dctcp-small-first: not run (above)
        log = open(os.path.join(out, name + ".log")).read()
        pauses = re.search(r"rdma: (\d+) PFC pause frames", log)
        peak = re.search(r"peak switch queue (\d+) B", log)
        jobs = ["big"] if case == "alone" else ["big", "small"]
        slow = {}
        mpath = os.path.join(out, name, "messages.csv")
        if os.path.exists(mpath):
            for m in csv.DictReader(open(mpath)):
                if m["slowdown"]:
                    slow.setdefault(int(m["job"]), []).append(float(m["slowdown"]))
        for j, job in enumerate(jobs):
            d = os.path.join(out, name) if len(jobs) == 1 else os.path.join(out, name, "job%d" % j)
            t = []
            for path in glob.glob(os.path.join(d, "rank*.results.json")):
                res = json.load(open(path))
                t += [(i["end_ns"] - i["start_ns"]) / 1e6 for i in res["iterations"] if i["iteration"] >= 1]
            mean = sum(t) / len(t) if t else float("nan")
            s = sorted(slow.get(j, []))
            pct = lambda f: "%.2f" % s[min(len(s) - 1, int(f * len(s)))] if s else "-"
            print("%-26s %-6s %10.2f %8s %12s %9s %9s" % (name, job, mean, pauses.group(1) if pauses else "-",
                                                       peak.group(1) if peak else "-", pct(0.5), pct(0.99)))
            rows.append((name, job, mean))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    labels = ["%s\n%s" % (n.replace("-", " ", 1), j) for n, j, _ in rows]
    ax.bar(range(len(rows)), [m for _, _, m in rows], color=["C0" if j == "big" else "C1" for _, j, _ in rows])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=6, rotation=60, ha="right")
    ax.set_ylabel("mean iteration time (ms)")
    ax.set_title("ResNet-50 jobs on a 4:1 leaf-spine: TCP, DCTCP, RDMA (DCQCN, HPCC)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rdma-study.png"), dpi=150)
    print("plot: %s" % os.path.join(out, "rdma-study.png"))
except ImportError:
    print("plot: skipped (no matplotlib)")
PY
