#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Two data-parallel jobs sharing a 2:1 oversubscribed leaf-spine, four ways:
# baseline (both start at 0), CASSINI offsets (dltrace place), MLTCP, both.
# Prints mean and p99 iteration time per job and the ECN marks of each run.
# Usage: scripts/shared-jobs-study.sh [OUT_DIR]
#   env: DLTRACE, ITERATIONS, ENGINE (ns3 or flow), ENGINE_CC, MLTCP_CC (ns-3 only)
set -euo pipefail
OUT=${1:-shared-jobs-study}
DLTRACE=${DLTRACE:-build/cli/dltrace}
ITERATIONS=${ITERATIONS:-6}
ENGINE=${ENGINE:-ns3}
CC=${ENGINE_CC:-dctcp}          # baseline congestion control (DCTCP: ECN marks mean something)
MLTCP=${MLTCP_CC:-mltcp-dctcp}  # its MLTCP variant
if [ "$ENGINE" = flow ]; then   # flow level: max-min sharing, or shares weighted by MLTCP's F
  CC=""
  MLTCP=mltcp
elif [ "$ENGINE" != ns3 ]; then
  echo "shared-jobs-study: ENGINE=$ENGINE (ns3 or flow)" >&2
  exit 2
fi
TOPO="leaf-spine:leaves=2,spines=1,hosts-per-leaf=4,oversub=2,rate=10Gbps"
if [ -e "$OUT" ]; then echo "shared-jobs-study: $OUT exists (never overwritten)" >&2; exit 1; fi
mkdir -p "$OUT"
# ResNet-50-like and BERT-large-like jobs, 4 ranks each, one per host, bf16 gradients.
"$DLTRACE" synth --model resnet50 --ranks 4 --ranks-per-host 1 --iterations "$ITERATIONS" --dtype bf16 \
  --compute-ms 60 --link-gbps 10 -o "$OUT/resnet50" >/dev/null
"$DLTRACE" synth --model bert-large --ranks 4 --ranks-per-host 1 --iterations "$ITERATIONS" --dtype bf16 \
  --compute-ms 400 --link-gbps 10 -o "$OUT/bert-large" >/dev/null
# Each job has two hosts under each leaf, alternating: every hop of its ring
# crosses the 2:1 oversubscribed uplinks (two rings per direction, 40 Gbit/s
# of demand on 20 Gbit/s when both communicate).
JOBS=(--job "$OUT/resnet50:hosts=0,4,1,5" --job "$OUT/bert-large:hosts=2,6,3,7")
"$DLTRACE" place "${JOBS[@]}" --topo "$TOPO" --algo ring -o "$OUT/plan.json" | tee "$OUT/place.txt"
run() {  # NAME CC [simulate options...]
  local name=$1 cc=$2; shift 2
  local engine=(--engine "$ENGINE")
  if [ "$ENGINE" = ns3 ]; then engine+=(--no-flowmon); fi
  if [ -n "$cc" ]; then engine+=(--cc "$cc"); fi
  "$DLTRACE" simulate --topo "$TOPO" --algo ring "${engine[@]}" --util-ms 0 "$@" -o "$OUT/$name" \
    >"$OUT/$name.log" 2>&1 || { echo "shared-jobs-study: $name failed, see $OUT/$name.log" >&2; exit 1; }
}
run baseline "$CC" "${JOBS[@]}"
run cassini "$CC" --plan "$OUT/plan.json"
run mltcp "$MLTCP" "${JOBS[@]}"
run both "$MLTCP" --plan "$OUT/plan.json"
python3 - "$OUT" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
print("%-9s %-11s %10s %10s %10s" % ("run", "job", "mean_ms", "p99_ms", "ecn_marks"))
for run in ("baseline", "cassini", "mltcp", "both"):
    marks = re.search(r"(\d+) ECN marks", open(os.path.join(out, run + ".log")).read())
    for job, name in ((0, "resnet50"), (1, "bert-large")):
        t = []
        for path in glob.glob(os.path.join(out, run, "job%d" % job, "rank*.results.json")):
            res = json.load(open(path))
            t += [(i["end_ns"] - i["start_ns"]) / 1e6 for i in res["iterations"] if i["iteration"] >= 1]
        t.sort()
        p99 = t[min(len(t) - 1, int(0.99 * len(t)))] if t else float("nan")
        print("%-9s %-11s %10.2f %10.2f %10s" % (run, name, sum(t) / max(len(t), 1), p99,
                                                 marks.group(1) if marks else "-"))
PY
