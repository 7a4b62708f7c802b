#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The two simulators side by side: one ResNet-50 iteration on 8 hosts of a
# 100 Gbit/s leaf-spine (ring all-reduce) in ns-3 and in the flow-level
# engine (wall time, ratio, difference in iteration time), then the flow
# engine alone on a large data-parallel job (ResNet-50, ring and tree, fat-tree;
# wall time, messages per wall second, peak RSS).
#
# With a second build named by DLTRACE_BENCH_NS3_VS, the ns-3 case also runs
# on that build's ns-3, and the two wall times are compared: e.g. build/ on a
# release-profile ns-3 tree (DLTRACE_NS3_TREE) against build-debian/ on
# Debian's libns3-dev (-DDLTRACE_NS3_TREE=OFF); the simulated iteration
# times must agree (same sources, same scenario).
#
# usage: scripts/bench-sim.sh [build_dir]          (default build/, or $DLTRACE_BUILD_DIR)
# env:   DLTRACE_BENCH_RANKS   ranks of the large job        (default 1024)
#        DLTRACE_BENCH_TOPO    topology of the large job     (default fat-tree:k=16)
#        DLTRACE_BENCH_ALGOS   algorithms of the large job   (default "ring tree")
#        DLTRACE_BENCH_NS3     0 skips the ns-3 comparison   (default 1)
#        DLTRACE_BENCH_NS3_VS  a second build dir for the ns-3 case (default none)
#        DLTRACE_BENCH_LARGE   0 skips the large flow-level job (default 1)
#        DLTRACE_BENCH_SCALE   rank counts for the scale table, e.g. "1024 4096 16384" (default none):
#                              then only that table runs (README "Scale"): per count, ResNet-50 data
#                              parallel and GPT-3 175B hybrid (TP8, PP8 at 1,024 ranks else PP16, DP the
#                              rest), 8 ranks per host, one iteration on a fat-tree sized to the job;
#                              synth + simulate wall time, peak memory, simulated s per wall s
#        DLTRACE_BENCH_SCALE_MODELS  which of them (default "resnet50 gpt3-175b")
#        DLTRACE_BENCH_SCALE_R50_ALGO / _GPT_ALGO  their algorithms (default tree / ring)
#        DLTRACE_BENCH_SCALE_TOPO  the scale table's --topo (default fat-tree, sized to the job); e.g.
#                              spectrum-x with DLTRACE_BENCH_SCALE_HOSTS=fabric: 8-GPU hosts, one NIC per GPU
#        DLTRACE_BENCH_SCALE_HOSTS  trace: a synth host's 8 ranks on one topology host (--job TRACE:hosts=trace,
#                              the default); endpoint: one topology host per rank
#        DLTRACE_BENCH_SCALE_GIB  a run whose resident memory passes this is stopped (default 18)
#        DLTRACE_BENCH_SCALE_SOLVER  the flow simulator's --solver for the scale table: simgrid or incremental
#                              (default simgrid)
#        DLTRACE_BENCH_KEEP    a directory to keep each run's log and progress lines in (default none)
# Prints figures from one run of each; it asserts nothing beyond every run succeeding.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-${DLTRACE_BUILD_DIR:-build}}
dltrace=$build/cli/dltrace
ranks=${DLTRACE_BENCH_RANKS:-1024}
topo=${DLTRACE_BENCH_TOPO:-fat-tree:k=16}
algos=${DLTRACE_BENCH_ALGOS:-"ring tree"}
[[ -x $dltrace ]] || { echo "bench-sim: $dltrace not found; build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

keep=${DLTRACE_BENCH_KEEP:-}
[[ -z $keep ]] || mkdir -p "$keep"

# capped NAME LIMIT_KB COMMAND...: runs COMMAND under /usr/bin/time -v (log in
# $work/NAME.log, time's report in $work/NAME.time), stopping it once its
# resident memory passes LIMIT_KB; returns its status (137 when stopped).
capped() {
  local name=$1 limit_kb=$2
  shift 2
  /usr/bin/time -v -o "$work/$name.time" "$@" >"$work/$name.log" 2>&1 &
  local timer=$! child rss status=0
  while kill -0 "$timer" 2>/dev/null; do
    child=$(pgrep -P "$timer" | head -1 || true)
    rss=$([[ -n $child ]] && awk '/^VmRSS:/ {print $2}' "/proc/$child/status" 2>/dev/null || true)
    if [[ -n $rss && $rss -gt $limit_kb ]]; then
      echo "bench-sim: $name passed $((limit_kb / 1048576)) GiB resident; stopped" >>"$work/$name.log"
      kill "$child" 2>/dev/null || true
    fi
    sleep 2
  done
  wait "$timer" || status=$?
  [[ -z $keep ]] || cp "$work/$name.log" "$work/$name.time" "$keep/" 2>/dev/null || true
  return $status
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; ++i) s = s * 60 + $i; printf "%.1f", s }'; }  # [h:]m:ss.cc
field() { sed -nE "s/^[[:space:]]*$2: (.*)/\1/p" "$work/$1.time"; }  # a line of time -v's report

if [[ -n ${DLTRACE_BENCH_SCALE:-} ]]; then
  limit_kb=$(( ${DLTRACE_BENCH_SCALE_GIB:-18} * 1048576 ))
  place=${DLTRACE_BENCH_SCALE_HOSTS:-trace}
  [[ $place == trace || $place == endpoint || $place == fabric ]] ||
    { echo "bench-sim: DLTRACE_BENCH_SCALE_HOSTS is trace, endpoint or fabric" >&2; exit 1; }
  scale_topo=${DLTRACE_BENCH_SCALE_TOPO:-fat-tree}
  echo "Flow simulator at scale: one iteration, 8 ranks per host ($place placement), $scale_topo sized to the job, --solver ${DLTRACE_BENCH_SCALE_SOLVER:-simgrid} (load average before: $(load))"
  printf "  %-7s %-22s %-5s %8s %8s %10s %9s %9s %12s %12s %10s\n" ranks model algo synth_s lower_s wall_s cpu_s \
    peak_MiB sim_s_per_s messages messages_per_s
  for n in $DLTRACE_BENCH_SCALE; do
    for model in ${DLTRACE_BENCH_SCALE_MODELS:-resnet50 gpt3-175b}; do
      if [[ $model == resnet50 ]]; then
        shape=(--ranks "$n"); label="resnet50 DP$n"; algo=${DLTRACE_BENCH_SCALE_R50_ALGO:-tree}
      else
        pp=$(( n <= 1024 ? 8 : 16 ))
        shape=(--tp 8 --pp "$pp" --dp $(( n / 8 / pp ))); label="gpt3 TP8 PP$pp DP$(( n / 8 / pp ))"
        algo=${DLTRACE_BENCH_SCALE_GPT_ALGO:-ring}
      fi
      name=scale-$model-$n
      rm -rf "$work/$name.trace" "$work/$name"
      capped "$name-synth" "$limit_kb" "$dltrace" synth --model "$model" "${shape[@]}" --ranks-per-host 8 \
        --iterations 1 -o "$work/$name.trace" || { echo "bench-sim: $name synth failed:" >&2; tail -3 "$work/$name-synth.log" >&2; continue; }
      synth_s=$(field "$name-synth" "Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)" | seconds)
      status=0
      job=$work/$name.trace
      [[ $place != trace ]] || job+=":hosts=trace"
      capped "$name" "$limit_kb" "$dltrace" simulate --job "$job" --engine flow --topo "$scale_topo" --algo "$algo" \
        --solver "${DLTRACE_BENCH_SCALE_SOLVER:-simgrid}" --util-ms 10 -o "$work/$name" || status=$?
      wall=$(field "$name" "Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)" | seconds)
      cpu=$(python3 -c "print('%.1f' % ($(field "$name" "User time \\(seconds\\)") + $(field "$name" "System time \\(seconds\\)")))")
      rss=$(field "$name" "Maximum resident set size \\(kbytes\\)")
      # Lowering ends where the first progress line of the run starts; the run's own speed line has the rest.
      lower=$(sed -nE 's/^dltrace simulate \(flow\): lowered [^;]* in ([0-9.]+) s;.*/\1/p' "$work/$name.log" | head -1)
      speed=$(grep '^speed:' "$work/$name.log" || true)
      if [[ $status != 0 || -z $speed ]]; then
        last=$(grep '^dltrace simulate (flow):' "$work/$name.log" | tail -1)
        printf "  %-7s %-22s %-5s %8s %8s %10s %9s %9.0f  did not finish (status %s): %s\n" "$n" "$label" "$algo" \
          "$synth_s" "${lower:--}" "$wall" "$cpu" "$(python3 -c "print($rss / 1024)")" "$status" \
          "${last:-$(tail -1 "$work/$name.log")}"
        continue
      fi
      sim=$(sed -E 's/^speed: ([0-9.e+-]+) simulated s.*/\1/' <<<"$speed")
      sim_wall=$(sed -E 's/^speed: [0-9.e+-]+ simulated s in ([0-9.e+-]+) wall s.*/\1/' <<<"$speed")
      messages=$(sed -E 's/.* ([0-9]+) messages,.*/\1/' <<<"$speed")
      printf "  %-7s %-22s %-5s %8s %8s %10s %9s %9.0f %12.3g %12s %10.0f\n" "$n" "$label" "$algo" "$synth_s" \
        "${lower:--}" "$wall" "$cpu" "$(python3 -c "print($rss / 1024)")" "$(python3 -c "print($sim / max($sim_wall, 1e-9))")" \
        "$messages" "$(python3 -c "print($messages / max($sim_wall, 1e-9))")"
      rm -rf "$work/$name.trace" "$work/$name"
    done
  done
  echo "  (wall_s, cpu_s: the whole simulate process; sim_s_per_s and messages_per_s: its simulation phase, per wall s)"
  echo "load average after: $(load)"
  exit 0
fi

vs=${DLTRACE_BENCH_NS3_VS:-}
if [[ -n $vs ]]; then
  [[ -x $vs/cli/dltrace ]] || { echo "bench-sim: $vs/cli/dltrace not found; build it first" >&2; exit 1; }
fi

# run NAME ARGS...: times one dltrace simulate ($program, default $dltrace),
# prints "wall_s rss_mb" into $work/NAME.time.
run() {
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "${program:-$dltrace}" simulate "$@" -o "$work/$name" \
    >"$work/$name.log" 2>&1 || { echo "bench-sim: $name failed:" >&2; tail -3 "$work/$name.log" >&2; exit 1; }
}
iteration_ms() {  # mean iteration time (ms) of a results directory
  "$dltrace" compare "$1" "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["mean_iteration_ms"])'
}

if [[ ${DLTRACE_BENCH_NS3:-1} != 0 ]]; then
  "$dltrace" synth --model resnet50 --ranks 8 --ranks-per-host 1 --iterations 1 -o "$work/r50" >/dev/null
  echo "load average before: $(load)"
  run ns3 "$work/r50" --engine ns3 --topo leaf-spine --algo ring
  run flow "$work/r50" --engine flow --topo leaf-spine --algo ring
  read -r ns3_wall ns3_rss <"$work/ns3.time"
  read -r flow_wall flow_rss <"$work/flow.time"
  ns3_ms=$(iteration_ms "$work/ns3")
  flow_ms=$(iteration_ms "$work/flow")
  python3 - "$ns3_wall" "$flow_wall" "$ns3_ms" "$flow_ms" "$ns3_rss" "$flow_rss" <<'PY'
import sys
ns3_wall, flow_wall, ns3_ms, flow_ms, ns3_rss, flow_rss = map(float, sys.argv[1:])
print("ResNet-50, 8 hosts, leaf-spine 100 Gbit/s, ring, one iteration:")
print("  %-6s %10s %14s %10s" % ("engine", "wall_s", "iteration_ms", "rss_MB"))
print("  %-6s %10.2f %14.3f %10.0f" % ("ns3", ns3_wall, ns3_ms, ns3_rss / 1024))
print("  %-6s %10.2f %14.3f %10.0f" % ("flow", flow_wall, flow_ms, flow_rss / 1024))
print("  flow is %.0fx faster (whole processes); iteration time differs by %+.2f%%"
      % (ns3_wall / max(flow_wall, 1e-3), (flow_ms - ns3_ms) / ns3_ms * 100))
PY
  echo "  ns-3 simulator: $("$dltrace" --version | sed -n 's/^ns-3 simulator: //p')"
  if [[ -n $vs ]]; then
    program=$vs/cli/dltrace run ns3-vs "$work/r50" --engine ns3 --topo leaf-spine --algo ring
    read -r vs_wall vs_rss <"$work/ns3-vs.time"
    vs_ms=$(iteration_ms "$work/ns3-vs")
    echo "The ns-3 case on two builds of ns-3 ($build against $vs):"
    printf "  %-12s %10s %14s  %s\n" build wall_s iteration_ms ns-3
    printf "  %-12s %10.2f %14.3f  %s\n" "$build" "$ns3_wall" "$ns3_ms" \
      "$("$dltrace" --version | sed -n 's/^ns-3 simulator: //p')"
    printf "  %-12s %10.2f %14.3f  %s\n" "$vs" "$vs_wall" "$vs_ms" \
      "$("$vs/cli/dltrace" --version | sed -n 's/^ns-3 simulator: //p')"
    python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('  %s takes %.2fx the wall time of %s' % (sys.argv[3], a / b, sys.argv[4]))" \
      "$ns3_wall" "$vs_wall" "$build" "$vs"
    if [[ $ns3_ms == "$vs_ms" ]]; then
      echo "  same simulated iteration time"
    else
      echo "  the simulated iteration times differ ($ns3_ms vs $vs_ms ms)"
    fi
  fi
  echo "load average after: $(load)"
fi
[[ ${DLTRACE_BENCH_LARGE:-1} != 0 ]] || exit 0

"$dltrace" synth --model resnet50 --ranks "$ranks" --ranks-per-host 1 --iterations 1 -o "$work/big" >/dev/null
echo "ResNet-50 data parallel, $ranks ranks, $topo, one iteration, flow engine:"
printf "  %-6s %10s %10s %14s %16s %10s\n" algo wall_s sim_s messages messages_per_s rss_MB
for algo in $algos; do
  run "big-$algo" "$work/big" --engine flow --topo "$topo" --algo "$algo" --util-ms 10
  read -r wall rss <"$work/big-$algo.time"
  speed=$(grep '^speed:' "$work/big-$algo.log")
  sim=$(sed -E 's/^speed: ([0-9.e+-]+) simulated s.*/\1/' <<<"$speed")
  messages=$(sed -E 's/.* ([0-9]+) messages,.*/\1/' <<<"$speed")
  printf "  %-6s %10.1f %10.4f %14s %16.0f %10.0f\n" "$algo" "$wall" "$sim" "$messages" \
    "$(python3 -c "print($messages / max($wall, 1e-3))")" "$(python3 -c "print($rss / 1024)")"
done
