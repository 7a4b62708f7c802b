#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One training job on an oversubscribed rail-optimized fabric in ns-3 under
# four transports: RoCE with DCQCN, RoCE with HPCC, RoCE with DCQCN over
# per-packet adaptive routing (lb=ar, out-of-order receivers: --rdma-ooo),
# and the Ultra Ethernet transport with NSCC (spraying over 64 entropy
# values, trimming, no PFC); beside them the flow simulator with ECMP and
# with spraying (its fluid limit, no transport) as references. Prints per
# case the iteration time, the per-message completion slowdown p50/p99
# (messages.csv: all messages, then those between hosts, over the NICs),
# PFC pause frames, packets trimmed and resent, packets simulated, the
# wall time and the spine uplinks' imbalance (the busiest uplink of each
# leaf as if all its uplinks carried that much, over the bytes they carried:
# 1 is even, 2 is every leaf's bytes on one of its 2 uplinks); writes
# OUT/transport-study.csv and plots OUT/transport-study.png (needs
# python3-matplotlib).
# The job: ResNet-50 data-parallel on 32 GPUs (4 hosts of 8, one NIC per
# GPU), bf16 gradients, COMPUTE_MS of compute, so the all-reduce decides
# the iteration. The fabric: segments of 2 hosts, one leaf per rail, 2
# spines, 2:1 oversubscribed (50 Gbit/s uplinks): ring edges between
# segments cross the spines, where per-flow ECMP can put two flows on one
# uplink.
# Usage: scripts/transport-study.sh [OUT_DIR]
#   env: DLTRACE (build/cli/dltrace), CASES ("dcqcn hpcc dcqcn-ar uet-nscc flow-ecmp flow-spray"),
#        SEED (1: salt of the switches' ECMP hash), COMPUTE_MS (5), JOBS (1: simulations at once)
set -euo pipefail
OUT=${1:-transport-study}
DLTRACE=${DLTRACE:-build/cli/dltrace}
CASES=${CASES:-dcqcn hpcc dcqcn-ar uet-nscc flow-ecmp flow-spray}
SEED=${SEED:-1}
COMPUTE_MS=${COMPUTE_MS:-5}
JOBS=${JOBS:-1}
declare -A ARGS=(
  [dcqcn]="--transport rdma --cc dcqcn"
  [hpcc]="--transport rdma --cc hpcc"
  [dcqcn-ar]="--transport rdma --cc dcqcn --rdma-ooo"
  [uet-nscc]="--transport uet --cc nscc"
  [flow-ecmp]="--engine flow --solver incremental"
  [flow-spray]="--engine flow --solver incremental"
)
declare -A LB=([dcqcn]=ecmp [hpcc]=ecmp [dcqcn-ar]=ar [uet-nscc]=ecmp [flow-ecmp]=ecmp [flow-spray]=spray)
for c in $CASES; do
  if [ -z "${ARGS[$c]:-}" ]; then
    echo "transport-study: unknown case '$c' (dcqcn, hpcc, dcqcn-ar, uet-nscc, flow-ecmp, flow-spray)" >&2
    exit 2
  fi
done
if [ -e "$OUT" ]; then echo "transport-study: $OUT exists (never overwritten)" >&2; exit 1; fi
mkdir -p "$OUT"
"$DLTRACE" synth --model resnet50 --ranks 32 --ranks-per-host 8 --iterations 1 --dtype bf16 \
  --compute-ms "$COMPUTE_MS" -o "$OUT/job" >/dev/null
TOPO="rail-optimized:hosts=4,gpus=8,hosts-per-segment=2,spines=2,oversub=2,rate=100Gbps,delay=1us,seed=$SEED"
failed=0
simulate() {  # CASE
  # shellcheck disable=SC2086  # ARGS are words
  "$DLTRACE" simulate --job "$OUT/job:hosts=trace" ${ARGS[$1]} --topo "$TOPO,lb=${LB[$1]}" -o "$OUT/$1" \
    >"$OUT/$1.log" 2>&1 || { echo "transport-study: $1 failed, see $OUT/$1.log" >&2; return 1; }
}
for c in $CASES; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
  simulate "$c" &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
if [ "$failed" -ne 0 ]; then exit 1; fi
# Debian's python3 has python3-matplotlib; another python3 first on PATH may not.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
# shellcheck disable=SC2086  # CASES are words
"$PYTHON" - "$OUT" $CASES <<'PY'
import csv, os, re, sys
out, cases = sys.argv[1], sys.argv[2:]
def num(pattern, text, cast=int, default=0):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else default
rows = []
for c in cases:
    log = open(os.path.join(out, c + ".log")).read()
    # Messages between hosts (32 endpoints, 8 per host, in rank order) cross the NICs and the fabric.
    slow, net = [], []
    path = os.path.join(out, c, "messages.csv")  # ns-3 only
    for m in csv.DictReader(open(path)) if os.path.exists(path) else []:
        if m["slowdown"]:
            slow.append(float(m["slowdown"]))
            if int(m["src"]) // 8 != int(m["dst"]) // 8:
                net.append(float(m["slowdown"]))
    slow.sort()
    net.sort()
    pct = lambda s, f: s[min(len(s) - 1, int(f * len(s)))] if s else float("nan")
    up = {}  # leaf -> bytes per uplink (links.csv: time_s,link,bytes,...; leaf->spine as p0.s0.r1-p0.spine0)
    for l in csv.DictReader(open(os.path.join(out, c, "links.csv"))):
        a, _, b = l["link"].partition("-")
        if "spine" in b and "spine" not in a:
            up.setdefault(a, {}).setdefault(b, 0)
            up[a][b] += int(l["bytes"])
    total = sum(sum(v.values()) for v in up.values())
    imb = sum(max(v.values()) * len(v) for v in up.values()) / total if total else 1.0
    rows.append(dict(case=c, iter_ms=num(r"job time ([0-9.]+) ms", log, float, float("nan")),
                     slowdown_p50=pct(slow, 0.5), slowdown_p99=pct(slow, 0.99),
                     net_slowdown_p50=pct(net, 0.5), net_slowdown_p99=pct(net, 0.99),
                     pfc_pauses=num(r"rdma: ([0-9]+) PFC pause frames", log),
                     trimmed=num(r"uet: ([0-9]+) packets trimmed", log),
                     resent=num(r"([0-9]+) packets resent", log),
                     packets=num(r"wall s, ([0-9]+) packets", log),
                     wall_s=num(r"simulated s in ([0-9.]+) wall s", log, float, float("nan")), uplink_imb=imb))
with open(os.path.join(out, "transport-study.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print("%-10s %8s %9s %9s %9s %9s %7s %8s %7s %10s %7s %10s" % (
    "case", "iter_ms", "slow_p50", "slow_p99", "net_p50", "net_p99", "pauses", "trimmed", "resent", "packets", "wall_s",
    "uplink_imb"))
for r in rows:
    print("%-10s %8.2f %9.2f %9.2f %9.2f %9.2f %7d %8d %7d %10d %7.1f %10.2f" % tuple(r.values()))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    x = range(len(rows))
    names = [r["case"] for r in rows]
    a1.bar(x, [r["iter_ms"] for r in rows], color=["C%d" % i for i in x])
    a1.set_xticks(list(x))
    a1.set_xticklabels(names, fontsize=7, rotation=30, ha="right")
    a1.set_ylabel("iteration time (ms)")
    ns3 = [r for r in rows if r["net_slowdown_p99"] == r["net_slowdown_p99"]]  # the flow cases have none
    x2, w = range(len(ns3)), 0.4
    a2.bar([i - w / 2 for i in x2], [r["net_slowdown_p50"] for r in ns3], w, label="p50")
    a2.bar([i + w / 2 for i in x2], [r["net_slowdown_p99"] for r in ns3], w, label="p99")
    a2.set_yscale("log")
    a2.set_ylim(1, 10 * max([r["net_slowdown_p99"] for r in ns3] + [1]))
    a2.set_xticks(list(x2))
    a2.set_xticklabels([r["case"] for r in ns3], fontsize=7, rotation=30, ha="right")
    a2.set_ylabel("slowdown, messages between hosts")
    a2.legend(loc="upper left", ncol=2, fontsize=8)
    fig.suptitle("ResNet-50, 32 GPUs, rail-optimized 2:1: RoCE (DCQCN, HPCC, adaptive routing) and UET (NSCC)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "transport-study.png"), dpi=150)
    print("plot: %s" % os.path.join(out, "transport-study.png"))
except ImportError:
    print("plot: skipped (no matplotlib)")
PY
