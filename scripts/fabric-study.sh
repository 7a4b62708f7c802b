#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One training job on AI-cluster fabrics in the flow simulator: rail-optimized
# against not (dcn), single against dual plane (hpn), each under three ECMP
# hash seeds, and rail-optimized again with 4 queue pairs per connection
# (qps=4: each its own ECMP hash). Prints per fabric and seed the iteration time, the bytes through
# spines and the NIC and rail imbalance (max/mean), writes OUT/fabric-study.csv
# and plots OUT/fabric-study.png (needs python3-matplotlib).
# The job: Llama-3 8B, TP8 PP2 DP4 (64 GPUs on 8 hosts of 8), 8 channels;
# segments of 2 hosts with 2:1 oversubscribed leaves, so data- and
# pipeline-parallel traffic between segments crosses the spines.
# Usage: scripts/fabric-study.sh [OUT_DIR]
#   env: DLTRACE (build/cli/dltrace), SEEDS ("1 2 3"), JOBS (1: simulations at once)
set -euo pipefail
OUT=${1:-fabric-study}
DLTRACE=${DLTRACE:-build/cli/dltrace}
SEEDS=${SEEDS:-1 2 3}
JOBS=${JOBS:-1}
if [ -e "$OUT" ]; then echo "fabric-study: $OUT exists (never overwritten)" >&2; exit 1; fi
mkdir -p "$OUT"
"$DLTRACE" synth --model llama3-8b --tp 8 --pp 2 --dp 4 --ranks-per-host 8 --seq-len 2048 --iterations 1 \
  -o "$OUT/job" >/dev/null
SHAPE="hosts=8,hosts-per-leaf=2,oversub=2"
declare -A FABRICS=(  # TOPO, then |JOB KEYS where the job differs
  [rail-optimized]="spectrum-x:$SHAPE"
  [rail-opt-4qps]="spectrum-x:$SHAPE|:qps=4"
  [dcn]="dcn:$SHAPE,rate=400G"
  [hpn-1plane]="hpn:$SHAPE"
  [hpn-2planes]="hpn:$SHAPE,planes=2"
)
ORDER="rail-optimized rail-opt-4qps dcn hpn-1plane hpn-2planes"
failed=0
simulate() {  # NAME TOPO [JOB KEYS]
  "$DLTRACE" simulate --job "$OUT/job:channels=8$3" --engine flow --solver incremental --topo "$2" --util-ms 1 \
    -o "$OUT/$1" >"$OUT/$1.log" 2>&1 || { echo "fabric-study: $1 failed, see $OUT/$1.log" >&2; return 1; }
}
for fabric in $ORDER; do
  for seed in $SEEDS; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
    spec=${FABRICS[$fabric]}
    simulate "$fabric-seed$seed" "${spec%%|*},seed=$seed" "$([[ $spec == *"|"* ]] && echo "${spec#*|}")" &
  done
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
if [ "$failed" -ne 0 ]; then exit 1; fi
# Debian's python3 has python3-matplotlib; another python3 first on PATH may not.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
"$PYTHON" - "$OUT" "$ORDER" "$SEEDS" <<'PY'
import csv, os, re, sys
out, order, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
rows = []
print("%-16s %5s %10s %12s %8s %8s" % ("fabric", "seed", "iter_ms", "spine_GB", "nic_imb", "rail_imb"))
for fabric in order:
    for seed in seeds:
        name = "%s-seed%s" % (fabric, seed)
        log = open(os.path.join(out, name + ".log")).read()
        iter_ms = float(re.search(r"job time ([0-9.]+) ms", log).group(1))
        nic = float(re.search(r"NIC imbalance \(max/mean\) ([0-9.]+)", log).group(1))
        rail = re.search(r"per rail GB sent:.*imbalance ([0-9.]+)", log)
        spine = 0.0
        with open(os.path.join(out, name, "links.csv")) as f:
            for r in csv.DictReader(f):
                if "spine" in r["link"]:
                    spine += float(r["bytes"])
        rows.append((fabric, seed, iter_ms, spine / 2e9, nic, float(rail.group(1)) if rail else 0.0))
        print("%-16s %5s %10.3f %12.3f %8.3f %8.3f" % rows[-1])
with open(os.path.join(out, "fabric-study.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["fabric", "seed", "iteration_ms", "spine_gb", "nic_imbalance", "rail_imbalance"])
    w.writerows(rows)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("fabric-study: no matplotlib, no plot (apt-get install python3-matplotlib)")
    sys.exit(0)
fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
for i, fabric in enumerate(order):
    mine = [r for r in rows if r[0] == fabric]
    a.scatter([i] * len(mine), [r[2] for r in mine], label=fabric)
    b.scatter([i] * len(mine), [r[3] for r in mine])
for ax, title in ((a, "iteration time (ms)"), (b, "bytes through spines (GB, each way)")):
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=20)
    ax.set_title(title)
    ax.grid(alpha=0.3)
b.set_ylim(bottom=0)  # the same bytes on every fabric: no offset axis of rounding differences
b.ticklabel_format(axis="y", useOffset=False, style="plain")
fig.suptitle("Llama-3 8B TP8 PP2 DP4 on 8 hosts x 8 GPUs, ECMP seeds " + ", ".join(seeds))
fig.tight_layout()
fig.savefig(os.path.join(out, "fabric-study.png"), dpi=120)
print("fabric-study: wrote %s" % os.path.join(out, "fabric-study.png"))
PY
