#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Permutation traffic on a 64-host leaf-spine (8 leaves x 8 hosts, 100 Gbit/s,
# 1 us per link), at 1:1 (8 spines) and 4:1 (2 spines): every host sends one
# message to one other host under a random permutation. Single-path ECMP over
# several seeds (the seed salts the switches' hash and picks the permutation)
# against spraying and adaptive routing, in ns-3 (--transport rdma; spraying
# and adaptive routing with --rdma-ooo) and in the flow simulator (--solver
# incremental; ECMP, spraying), and in ns-3's Ultra Ethernet transport
# (--transport uet --cc nscc, no PFC: one entropy value per connection, a
# single path, against 64, sprayed; engine "uet"). GBN=1 adds adaptive
# routing with go-back-N receivers for the first seed, stopped at GBN_STOP
# simulated seconds: its resends take it far beyond the others (docs:
# Results, "Load balancing").
# Prints per case the max, p99 and median flow completion time over the
# ideal (bytes at line rate plus four links' delay), the messages that
# finished and the packets resent, and writes OUT/lb-permutation.csv.
# HTSIM=PATH/htsim_uec adds the same permutations in uet-htsim (the Ultra
# Ethernet transport's reference; NSCC, 4 KB MTU, its defaults): one entropy
# value (-paths 1, single path) against 64 (sprayed), with -seed SEED.
# Usage: scripts/lb-permutation.sh [OUT_DIR]
#   env: DLTRACE (build/cli/dltrace), SAMPLE_TRACE (build/tests/dltrace-sample-trace),
#        SEEDS ("1 2 3 4"), BYTES (2000000), CC (none: line rate, PFC alone), ENGINES ("ns3 uet flow"), JOBS (1),
#        GBN (0), GBN_STOP (0.01), HTSIM (unset)
set -euo pipefail
OUT=${1:-lb-permutation}
DLTRACE=${DLTRACE:-build/cli/dltrace}
SAMPLE_TRACE=${SAMPLE_TRACE:-build/tests/dltrace-sample-trace}
SEEDS=${SEEDS:-1 2 3 4}
BYTES=${BYTES:-2000000}
CC=${CC:-none}
ENGINES=${ENGINES:-ns3 uet flow}
JOBS=${JOBS:-1}
GBN=${GBN:-0}
GBN_STOP=${GBN_STOP:-0.01}
if [ -e "$OUT" ]; then echo "lb-permutation: $OUT exists (never overwritten)" >&2; exit 1; fi
mkdir -p "$OUT"
declare -A FABRIC=(
  [1to1]="leaf-spine:leaves=8,hosts-per-leaf=8,spines=8,oversub=1,rate=100Gbps,delay=1us"
  [4to1]="leaf-spine:leaves=8,hosts-per-leaf=8,spines=2,oversub=4,rate=100Gbps,delay=1us"
)
for seed in $SEEDS; do
  "$SAMPLE_TRACE" -o "$OUT/perm$seed" --ranks 64 --hosts 64 --iterations 1 --permutation "$BYTES" \
    --permutation-seed "$seed" >/dev/null
done
failed=0
simulate() {  # NAME SEED ARGS...
  local name=$1 seed=$2
  shift 2
  # A stopped run (GBN) exits 1 with its results written.
  "$DLTRACE" simulate "$OUT/perm$seed" "$@" -o "$OUT/$name" >"$OUT/$name.log" 2>&1 ||
    [ -e "$OUT/$name/flows.csv" ] || { echo "lb-permutation: $name failed, see $OUT/$name.log" >&2; return 1; }
}
CASES=()
for fabric in 1to1 4to1; do
  topo=${FABRIC[$fabric]}
  for seed in $SEEDS; do
    for engine in $ENGINES; do
      if [ "$engine" = ns3 ]; then
        CASES+=("ns3-$fabric-ecmp-$seed|$seed|--transport rdma --no-flowmon --cc $CC --topo $topo,seed=$seed")
        CASES+=("ns3-$fabric-spray-$seed|$seed|--transport rdma --no-flowmon --cc $CC --rdma-ooo --topo $topo,lb=spray,seed=$seed")
        CASES+=("ns3-$fabric-ar-$seed|$seed|--transport rdma --no-flowmon --cc $CC --rdma-ooo --topo $topo,lb=ar,seed=$seed")
        if [ "$GBN" = 1 ] && [ "$seed" = "${SEEDS%% *}" ]; then
          CASES+=("ns3-$fabric-ar_gbn-$seed|$seed|--transport rdma --no-flowmon --cc $CC --stop $GBN_STOP --topo $topo,lb=ar,seed=$seed")
        fi
      elif [ "$engine" = uet ]; then
        CASES+=("uet-$fabric-single-$seed|$seed|--transport uet --no-flowmon --cc nscc --cc-param entropies=1 --topo $topo,seed=$seed")
        CASES+=("uet-$fabric-spray-$seed|$seed|--transport uet --no-flowmon --cc nscc --cc-param entropies=64 --topo $topo,seed=$seed")
      else
        CASES+=("flow-$fabric-ecmp-$seed|$seed|--engine flow --solver incremental --topo $topo,seed=$seed")
        CASES+=("flow-$fabric-spray-$seed|$seed|--engine flow --solver incremental --topo $topo,lb=spray,seed=$seed")
      fi
    done
  done
done
for c in "${CASES[@]}"; do
  IFS='|' read -r name seed args <<<"$c"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
  # shellcheck disable=SC2086  # ARGS are words
  simulate "$name" "$seed" $args &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
if [ "$failed" -ne 0 ]; then exit 1; fi
if [ -n "${HTSIM:-}" ]; then
  HTSIM=$(realpath "$HTSIM")
  # uet-htsim's leaf-spine files (tier 0: leaves, 8 hosts each; tier 1: spines).
  for fabric in 1to1 4to1; do
    up=$([ $fabric = 1to1 ] && echo 8 || echo 2)
    os=$([ $fabric = 1to1 ] && echo "" || echo "Oversubscribed 4")
    printf 'Nodes 64\nTiers 2\nPodsize 64\n\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\nRadix_Up %s\nDownlink_Latency_ns 1000\n%s\nSwitch_Latency_ns 0\n\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 8\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\n' \
      "$up" "$os" >"$OUT/htsim-$fabric.topo"
  done
  for seed in $SEEDS; do
    # The permutation as a connection matrix: the pairs a run of this seed sent.
    flows=$(ls "$OUT"/*-1to1-*-"$seed"/flows.csv | head -1)
    awk -F, -v size="$BYTES" 'NR > 1 && $6 == size { n++; line[n] = $3 "->" $4 " id " n " start 0 size " size }
      END { print "Nodes 64"; print "Connections " n; for (i = 1; i <= n; i++) print line[i] }' "$flows" \
      >"$OUT/htsim-perm$seed.cm"
    for fabric in 1to1 4to1; do
      for paths in 1 64; do
        lb=$([ $paths = 1 ] && echo single || echo spray)
        # In OUT: uet-htsim writes logout.dat and idmap.txt where it runs.
        (cd "$OUT" && "$HTSIM" -topo "htsim-$fabric.topo" -tm "htsim-perm$seed.cm" -linkspeed 100000 -end 20000 \
          -paths $paths -seed "$seed" >"htsim-$fabric-$lb-$seed.log" 2>&1) ||
          { echo "lb-permutation: uet-htsim failed, see $OUT/htsim-$fabric-$lb-$seed.log" >&2; exit 1; }
        CASES+=("htsim-$fabric-$lb-$seed")
      done
    done
  done
fi
/usr/bin/python3 - "$OUT" "$BYTES" "${CASES[@]}" <<'PY'
import csv, os, re, sys
out, size = sys.argv[1], int(sys.argv[2])
ideal_ns = size * 8 / 100e9 * 1e9 + 4 * 1000  # line rate, four links of 1 us
rows = []
for case in sys.argv[3:]:
    name = case.split("|")[0]
    engine, fabric, lb, seed = name.split("-")
    log = open(os.path.join(out, name + ".log")).read()
    if engine == "htsim":  # flows start at 0: "finished at" (us) is the FCT
        fcts = sorted(float(t) * 1e3 for t in re.findall(r"finished at ([0-9.]+)", log))
        resent = re.search(r"Rtx: ([0-9]+)", log)
    else:
        fcts = sorted(int(r["fct_ns"]) for r in csv.DictReader(open(os.path.join(out, name, "flows.csv")))
                      if int(r["bytes"]) == size)
        resent = re.search(r"([0-9]+) packets resent", log)
    if not fcts:
        fcts = [float("nan")]
    rows.append(dict(engine=engine, fabric=fabric, lb=lb, seed=seed, finished=len(fcts) if fcts[0] == fcts[0] else 0,
                     max=fcts[-1] / ideal_ns, p99=fcts[int(0.99 * (len(fcts) - 1))] / ideal_ns,
                     median=fcts[len(fcts) // 2] / ideal_ns, resent=resent.group(1) if resent else ""))
with open(os.path.join(out, "lb-permutation.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print("ideal FCT %.1f us (%d bytes at 100 Gbit/s + 4 us)" % (ideal_ns / 1e3, size))
print("%-6s %-6s %-8s %5s %9s %8s %8s %8s %10s" % ("engine", "fabric", "lb", "seed", "finished", "max", "p99",
                                                  "median", "resent"))
for r in rows:
    print("%-6s %-6s %-8s %5s %9d %8.2f %8.2f %8.2f %10s" % (r["engine"], r["fabric"], r["lb"], r["seed"],
                                                            r["finished"], r["max"], r["p99"], r["median"],
                                                            r["resent"]))
PY
