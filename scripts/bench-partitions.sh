#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Partitioned ns-3 against one process (README "Scale", "Partitioned ns-3"):
# the 16-host case, a ResNet-50 data-parallel job of 16 ranks, one per host,
# ring all-reduce, on a leaf-spine of 2 leaves x 8 hosts and 2 spines
# (10 Gbit/s, 1 us links), run by `dltrace simulate --engine ns3` in one
# process and in 2 partitions (by leaf; lookahead 1 us) with each PDES
# algorithm, over TCP and over the RDMA fabric (RoCEv2 with PFC, its default
# congestion control). Prints per transport and run: wall s, CPU s of all
# processes, simulated s, packets, packets per wall s, speedup over one
# process and parallel efficiency (speedup / partitions), checks that every
# run of a transport moved the same bytes per endpoint, and prints how far
# each partitioned run's endpoint durations are from one process's. Figures
# from one run of each; it asserts nothing beyond every run succeeding with
# the same bytes.
#
# usage: scripts/bench-partitions.sh [build_dir]   (default build/, or $DLTRACE_BUILD_DIR)
#        The build must be against an ns-3 tree with MPI (`dltrace --version`
#        says "with MPI"): NS3_MPI=1 NS3_LIBS_ONLY=1 scripts/ns3-contrib-build.sh,
#        then ./scripts/build.sh.
# env:   DLTRACE_BENCH_HOSTS       hosts (= ranks), split over 2 leaves      (default 16)
#        DLTRACE_BENCH_ITERATIONS  training iterations                       (default 1)
#        DLTRACE_BENCH_PARTITIONS  partition counts to run besides 1         (default 2)
#        DLTRACE_BENCH_PDES        algorithms                                (default "null-message barrier")
#        DLTRACE_BENCH_TRANSPORTS  transports                                (default "tcp rdma")
#        DLTRACE_BENCH_RATE        every link's rate                         (default 10Gbps)
#        DLTRACE_BENCH_PER_CPU     1: also time the one-process run pinned to each CPU
#                                  (taskset) and print the speedup those CPUs allow: a
#                                  virtual machine's CPUs can differ in speed, and a
#                                  partitioned run waits for its slowest   (default 0)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-${DLTRACE_BUILD_DIR:-$ROOT/build}}" && pwd)"
DLTRACE="$BUILD/cli/dltrace"
HOSTS="${DLTRACE_BENCH_HOSTS:-16}"
ITERATIONS="${DLTRACE_BENCH_ITERATIONS:-1}"
PARTS="${DLTRACE_BENCH_PARTITIONS:-2}"
PDES="${DLTRACE_BENCH_PDES:-null-message barrier}"
TRANSPORTS="${DLTRACE_BENCH_TRANSPORTS:-tcp rdma}"
RATE="${DLTRACE_BENCH_RATE:-10Gbps}"
die() { echo "bench-partitions: error: $*" >&2; exit 1; }

[ -x "$DLTRACE" ] || die "no dltrace at $DLTRACE (build first)"
"$DLTRACE" --version | grep -q '^ns-3 simulator:.*with MPI' ||
  die "$DLTRACE's ns-3 has no MPI: build the tree with NS3_MPI=1 NS3_LIBS_ONLY=1 scripts/ns3-contrib-build.sh, then ./scripts/build.sh"
[ $((HOSTS % 2)) -eq 0 ] || die "DLTRACE_BENCH_HOSTS must be even (two leaves)"

work="$(mktemp -d /tmp/dltrace-bench-partitions-XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$DLTRACE" synth --model resnet50 --ranks "$HOSTS" --ranks-per-host 1 --iterations "$ITERATIONS" \
  -o "$work/trace" >/dev/null
ARGS=("$work/trace" --engine ns3 --algo ring --time-scale 0 --no-flowmon
  --topo "leaf-spine:leaves=2,hosts-per-leaf=$((HOSTS / 2)),spines=2,rate=$RATE,delay=1us")

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scenario: ResNet-50 DP, $HOSTS ranks on $HOSTS hosts, $ITERATIONS iteration(s), ring, ${ARGS[*]:5}"

# run NAME PARTITIONS [simulate flags...]: prints one row (of transport $T); the summary's
# "speed:" line gives simulated s and packets; /usr/bin/time the wall and CPU
# seconds of all processes (mpirun's children are waited for).
base_wall=""
run() {
  local name="$1" parts="$2"; shift 2
  local out="$work/$name"
  /usr/bin/time -f "%e %U %S" -o "$work/$name.time" "$DLTRACE" simulate "${ARGS[@]}" --transport "$T" "$@" -o "$out" \
    >"$work/$name.log" 2>&1 || { tail -n 20 "$work/$name.log" >&2; die "$name failed"; }
  local wall user sys speed sim packets
  read -r wall user sys <"$work/$name.time"
  speed=$(grep '^speed:' "$work/$name.log")
  sim=$(echo "$speed" | sed -n 's/^speed: \([0-9.e+-]*\) simulated s.*/\1/p')
  packets=$(echo "$speed" | sed -n 's/.*per wall s, \([0-9]*\) packets,.*/\1/p')
  [ -n "$base_wall" ] || base_wall="$wall"
  awk -v t="$T" -v n="${name#"$T-"}" -v p="$parts" -v w="$wall" -v c="$user" -v cs="$sys" -v s="$sim" -v k="$packets" -v b="$base_wall" \
    'BEGIN { printf "| %s | %s | %s | %.2f | %.2f | %.6f | %d | %.0f | %.2f | %.2f |\n", t, n, p, w, c + cs, s, k, k / w, b / w, b / w / p }'
  # Bytes per endpoint, for the same-bytes check below.
  python3 - "$out" "$work/$name.ns" >"$work/$name.bytes" <<'EOF'
import glob, json, os, sys
with open(sys.argv[2], "w") as ns:
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "rank*.results.json"))):
        r = json.load(open(f))
        print(os.path.basename(f), r["bytes_sent"], r["bytes_received"], r["complete"])
        ns.write("%d\n" % r["duration_ns"])
EOF
}

echo
echo "| transport | run | processes | wall s | CPU s | simulated s | packets | packets per wall s | speedup | parallel efficiency |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for T in $TRANSPORTS; do
  base_wall=""
  run "$T-1-process" 1
  for p in $PARTS; do
    for a in $PDES; do
      run "$T-$p-partitions-$a" "$p" --partitions "$p" --pdes "$a"
      cmp -s "$work/$T-1-process.bytes" "$work/$T-$p-partitions-$a.bytes" ||
        die "$T, $p partitions ($a) moved other bytes than one process: $(diff "$work/$T-1-process.bytes" "$work/$T-$p-partitions-$a.bytes" | head -n 4)"
      # Each endpoint's simulated duration against one process's: the largest difference.
      paste "$work/$T-1-process.ns" "$work/$T-$p-partitions-$a.ns" |
        awk -v r="$T, $p partitions ($a)" '{ d = $2 - $1; if (d < 0) d = -d; if (d > m) m = d }
          END { printf "  %s: endpoints end within %d ns of one process%s\n", r, m, m == 0 ? " (identical)" : "" }' >>"$work/ends.txt"
    done
  done
done
# The one-process run pinned to each CPU in turn: 2 partitions can be at most
# (sum of the CPUs' speeds) / (the fastest's) faster than one process on the fastest.
if [ "${DLTRACE_BENCH_PER_CPU:-0}" = 1 ]; then
  cpus=$(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
    awk -F- '{ if (NF == 2) for (c = $1; c <= $2; ++c) print c; else print $1 }')
  for T in $TRANSPORTS; do
    line="" speeds=""
    for c in $cpus; do
      rm -rf "$work/$T-cpu$c"
      /usr/bin/time -f "%e" -o "$work/$T-cpu$c.time" taskset -c "$c" "$DLTRACE" simulate "${ARGS[@]}" \
        --transport "$T" -o "$work/$T-cpu$c" >"$work/$T-cpu$c.log" 2>&1 ||
        { tail -n 20 "$work/$T-cpu$c.log" >&2; die "$T pinned to CPU $c failed"; }
      line="$line, CPU $c $(cat "$work/$T-cpu$c.time") s"
      speeds="$speeds $(cat "$work/$T-cpu$c.time")"
    done
    echo "$speeds" | awk -v t="$T" -v l="${line#, }" -v p="${PARTS%% *}" '{ n = split($0, s, " ")
        for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
        for (i = 1; i <= p && i <= n; ++i) sum += s[1] / s[i]
        printf "%s, one process pinned: %s; %d partitions on the %d fastest of these CPUs: at most %.2fx one process on the fastest\n", t, l, p, p, sum }'
  done
  echo
fi
cat "$work/ends.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); every run moved the same bytes per endpoint"
