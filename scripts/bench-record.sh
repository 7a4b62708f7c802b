#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Measures what the recorder adds per MPI call: runs dltrace-mpi-overhead with
# and without libdltrace-record.so, alternating, and prints the medians: ns
# per call and % added, for an 8 B and a 1 MB MPI_Allreduce loop, each size
# in a run of its own (so that neither pays for the other's flushes), ranks
# under `mpirun --bind-to none`, the recorder writing a trace directory with
# its default settings (flusher on, samples at its flushes), once on each
# host clock (DLTRACE_CLOCK=tsc and monotonic), with 1 rank and with one
# rank per core (the ranks then leave no core free for the recorder). It
# also prints rank 0's CPU time per call in threads other than the calling
# one (the recorder's flusher): what recording takes from cores the ranks
# spin on, and the clock each recorded run used (its trace header: tsc,
# or monotonic where the TSC failed its check).
# The load average is
# printed before and after: on a shared machine it says how far to trust
# the figures.
#
# usage: scripts/bench-record.sh [build_dir]      (default build/, or $DLTRACE_BUILD_DIR)
# env:   DLTRACE_BENCH_RANKS        rank counts to run        (default "1 <cores>")
#        DLTRACE_BENCH_BIND         mpirun --bind-to          (default none; core pins)
#        DLTRACE_BENCH_REPS         repetitions of each side  (default 5)
#        DLTRACE_BENCH_SMALL_ITERS  8-byte allreduce calls    (default 200000)
#        DLTRACE_BENCH_LARGE_ITERS  1 MB allreduce calls      (default 200)
#        DLTRACE_BENCH_WARMUP       8-byte calls before the timed ones (default 1000).
#                                   A thread starts with four event blocks
#                                   (416 KiB each; 64 where encoding is deferred), touched before its first
#                                   call, and cycles through them while the
#                                   flusher keeps up; the flusher's own
#                                   buffers are fresh memory during its
#                                   first drains, so a longer warm-up times
#                                   more of the steady state
#        DLTRACE_BENCH_CLOCKS       the recorder's clocks     (default "tsc monotonic")
#        DLTRACE_BENCH_RAW          1: each clock also as a side CLOCK+raw with
#                                   DLTRACE_RAW=1, the recorder's default
#                                   (records in a raw file in /dev/shm, no
#                                   flush timer: encoded once a thread filled
#                                   two blocks, or where every core has a
#                                   rank its DLTRACE_DEFER window, and at
#                                   exit); the sides
#                                   without +raw set DLTRACE_RAW=0 (buffers
#                                   in memory, flushed every DLTRACE_FLUSH_MS
#                                   and at two filled blocks); 0: not (default 1)
#        DLTRACE_BENCH_EAGER        1: each clock also as a side CLOCK+raw+eager, the
#                                   raw file with DLTRACE_DEFER=0 (encoded every
#                                   two blocks even where every core has a
#                                   rank; CLOCK+raw has the default, auto,
#                                   which defers encoding there); 0: not
#                                   (default 1; needs DLTRACE_BENCH_RAW=1)
#        DLTRACE_BENCH_BASELINE     another libdltrace-record.so (an older build)
#                                   run as a further side (default clock),
#                                   alternating with the others: before/after
#                                   in the same conditions
#        DLTRACE_MPI_OVERHEAD       the benchmark program     (default <build>/tests/mpi/dltrace-mpi-overhead)
#        DLTRACE_BENCH_INSTRUCTIONS 1: instead of times, count the instructions
#                                   per 8 B call under valgrind's callgrind, one
#                                   rank without mpirun (a figure machine load
#                                   does not move; needs valgrind), split into
#                                   those in the call and those of the flusher,
#                                   and those of the wrapper alone (exact), on
#                                   each clock, and which path the calls took:
#                                   fast (FastMpiCall) or ordinary (MpiCall,
#                                   where the instructions of the wrapper's
#                                   OrdinaryMPI_Allreduce are counted)
# Both modes first name the machine: CPU model (/proc/cpuinfo), cores, the
# kernel's clocksource and the CPU's TSC flags (DLTRACE_CLOCK=auto reads the
# TSC where the clocksource is tsc or the CPU says constant_tsc, nonstop_tsc
# and tsc_known_freq).
# Prints figures; it asserts nothing beyond every run succeeding and every
# recorded run leaving one trace file per rank.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-${DLTRACE_BUILD_DIR:-build}}
ranks_list=${DLTRACE_BENCH_RANKS:-1 $(nproc)}
clocks=${DLTRACE_BENCH_CLOCKS:-tsc monotonic}
raw_sides=${DLTRACE_BENCH_RAW:-1}
eager_sides=${DLTRACE_BENCH_EAGER:-1}
bind=${DLTRACE_BENCH_BIND:-none}
reps=${DLTRACE_BENCH_REPS:-5}
baseline=${DLTRACE_BENCH_BASELINE:-}
small_iters=${DLTRACE_BENCH_SMALL_ITERS:-200000}
warmup=${DLTRACE_BENCH_WARMUP:-1000}
large_iters=${DLTRACE_BENCH_LARGE_ITERS:-200}
prog=${DLTRACE_MPI_OVERHEAD:-$build/tests/mpi/dltrace-mpi-overhead}
recorder=$build/record/libdltrace-record.so

for f in "$prog" "$recorder" ${baseline:+"$baseline"}; do
  if [[ ! -e $f ]]; then
    echo "bench-record: $f not found; build first (cmake --build $build), or set DLTRACE_MPI_OVERHEAD" >&2
    exit 1
  fi
done
prog=$(realpath "$prog")
recorder=$(realpath "$recorder")
if [[ -n $baseline ]]; then baseline=$(realpath "$baseline"); fi

# Open MPI refuses root without --allow-run-as-root; never pass it otherwise.
# Two ranks or more may exceed the cores here, hence --oversubscribe.
mpirun_flags=(--oversubscribe --bind-to "$bind")
if [[ $(id -u) -eq 0 ]]; then mpirun_flags+=(--allow-run-as-root); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dltrace-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/raw"

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
# The CPU's word on its TSC: DLTRACE_CLOCK=auto takes it where all three are set.
tsc_flags=$(awk '/^flags/ { for (i = 1; i <= NF; ++i) if ($i ~ /^(constant_tsc|nonstop_tsc|tsc_known_freq)$/) printf " %s", $i; exit }' /proc/cpuinfo 2>/dev/null)
echo "machine: ${cpu_model:-unknown CPU}, $(nproc) cores, clocksource ${clocksource:-unknown}," \
  "TSC flags:${tsc_flags:- none}"

if [[ ${DLTRACE_BENCH_INSTRUCTIONS:-0} == 1 ]]; then
  if ! command -v valgrind >/dev/null; then
    echo "bench-record: DLTRACE_BENCH_INSTRUCTIONS=1 needs valgrind (apt-get install valgrind)" >&2
    exit 1
  fi
  if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  # instructions <preload or ""> <calls> [clock]: "<all> <drain> <wrapper> <ordinary>": all the
  # process executed, every thread; of that what Recorder::DrainBuffers did
  # (the flusher's share: events turned into chunks and written); and what
  # the recorder's MPI_Allreduce executed itself (its own instructions, not
  # PMPI_Allreduce's: unlike the whole process's count, which MPI's polling
  # moves by a few instructions a call between runs, exact); and of those
  # what OrdinaryMPI_Allreduce ran (inclusive: 0 where every call took the
  # fast path, which hands anything unusual to it). No resource
  # samples and no flush timer, so that timers do not change the count:
  # the flusher drains every two filled blocks (8,192 calls) and at exit.
  instructions() {
    local out=$work/callgrind.out n drain wrapper ordinary
    n=$(env ${1:+LD_PRELOAD="$1"} DLTRACE_OUTPUT="$work/trace" DLTRACE_SAMPLE_MS=0 DLTRACE_QUIET=1 \
          DLTRACE_FLUSH_MS=3600000 ${3:+DLTRACE_CLOCK="$3"} DLTRACE_RAW="${4:-0}" \
          valgrind --tool=callgrind --callgrind-out-file="$out" "$prog" "$2" 0 0 2>&1 |
        awk '/Collected :/ { print $4 }')
    rm -rf "$work/trace"
    if [[ -z $n ]]; then
      echo "bench-record: $prog did not run under valgrind" >&2
      exit 1
    fi
    drain=$(callgrind_annotate --auto=no --inclusive=yes "$out" 2>/dev/null |
      awk '/Recorder::DrainBuffers/ { gsub(",", "", $1); print $1; exit }')
    # The wrapper's own instructions: where callgrind_annotate finds the
    # sources it lists a function once per file its inlined code came from.
    wrapper=$(callgrind_annotate --auto=no --inclusive=no "$out" 2>/dev/null |
      awk '$0 ~ /:MPI_Allreduce( |$)/ { gsub(",", "", $1); w += $1 } END { print w + 0 }')
    ordinary=$(callgrind_annotate --auto=no --inclusive=yes "$out" 2>/dev/null |
      awk '/OrdinaryMPI_Allreduce/ { gsub(",", "", $1); print $1; exit }')
    rm -f "$out"
    echo "$n ${drain:-0} ${wrapper:-0} ${ordinary:-0}"
  }
  # Per call: the difference between two call counts, so start-up cancels out.
  lo=20000 hi=60000
  echo "dltrace-mpi-overhead under callgrind, 1 rank: instructions per 8 B MPI_Allreduce ($lo and $hi calls)"
  read -r a _ <<<"$(instructions "" $lo)"
  read -r b _ <<<"$(instructions "" $hi)"
  report() {  # report <label> <preload> <clock> [raw]
    local c d dc dd wc wd oc od
    read -r c dc wc oc <<<"$(instructions "$2" $lo "$3" "${4:-}")"
    read -r d dd wd od <<<"$(instructions "$2" $hi "$3" "${4:-}")"
    awk -v l="$1" -v k="$3" -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v dc="$dc" -v dd="$dd" \
        -v wc="$wc" -v wd="$wd" -v oc="$oc" -v od="$od" -v n=$((hi - lo)) 'BEGIN {
      without = (b - a) / n; with = (d - c) / n; flusher = (dd - dc) / n
      # Every call through the ordinary wrapper runs it: tens of
      # instructions a call at least; a stray one (MPI_Init) is 0 a call.
      path = ((od - oc) / n > 1) ? "ordinary" : "fast"
      printf "%-10s %-10s %10.1f %10.1f %10.1f %12.1f %10.1f %10.1f  %s\n", l, k, without, with,
             with - without, with - without - flusher, flusher, (wd - wc) / n, path }'
  }
  echo "load average: $(loadavg) (callgrind counts do not depend on it)"
  printf "%-10s %-10s %10s %10s %10s %12s %10s %10s  %s\n" recorder clock without with added \
    "in the call" flusher wrapper path
  for clock in $clocks; do
    report this "$recorder" "$clock"
    if [[ $raw_sides == 1 ]]; then report this+raw "$recorder" "$clock" "$work/raw"; fi
    if [[ -n $baseline ]]; then report baseline "$baseline" "$clock"; fi
  done
  exit 0
fi

# run_once <ranks> <without|tsc|monotonic|CLOCK+raw|CLOCK+raw+eager|baseline> <8B|1MB>: prints "NS CPU
# CLOCK": ns per call, rank 0's CPU time per call in threads other than the calling one
# (process CPU time less the calling thread's, over the timed loop): with the
# recorder, mostly its flusher, i.e. what it takes from the cores the ranks
# spin on, and the clock its trace header names (- without the recorder or
# without the dltrace program).
# Each size runs alone: the 1 MB loop would otherwise pay for the flush of
# the 8 B loop's last events, and the 8 B one for nothing of the 1 MB's.
run_once() {
  local np=$1 side=$2 size=$3 out=$work/out.txt err=$work/err.txt clock=
  local -a env_flags=() args=()
  case $side in
    without) ;;
    baseline) env_flags=(-x LD_PRELOAD="$baseline" -x DLTRACE_OUTPUT="$work/trace") ;;
    *+raw+eager) env_flags=(-x LD_PRELOAD="$recorder" -x DLTRACE_OUTPUT="$work/trace"
                            -x DLTRACE_CLOCK="${side%+raw+eager}" -x DLTRACE_RAW=1 -x DLTRACE_DEFER=0) ;;
    *+raw) env_flags=(-x LD_PRELOAD="$recorder" -x DLTRACE_OUTPUT="$work/trace"
                      -x DLTRACE_CLOCK="${side%+raw}" -x DLTRACE_RAW=1) ;;
    *) env_flags=(-x LD_PRELOAD="$recorder" -x DLTRACE_OUTPUT="$work/trace" -x DLTRACE_CLOCK="$side"
                 -x DLTRACE_RAW=0) ;;
  esac
  if [[ $size == 8B ]]; then args=("$small_iters" 0 "$warmup"); else args=(0 "$large_iters" 100); fi
  rm -rf "$work/trace"
  if ! mpirun "${mpirun_flags[@]}" -np "$np" "${env_flags[@]}" "$prog" "${args[@]}" \
      >"$out" 2>"$err"; then
    echo "bench-record: $side recorder, $np ranks, $size: $prog failed:" >&2
    cat "$err" >&2
    exit 1
  fi
  if [[ $side != without ]]; then
    local n
    n=$(find "$work/trace" -name 'rank*.dltrace' 2>/dev/null | wc -l)
    if [[ $n -ne $np ]]; then
      echo "bench-record: recorded run with $np ranks left $n trace files in $work/trace" >&2
      cat "$err" >&2
      exit 1
    fi
    # The clock the run used (tsc, or monotonic where the TSC failed its
    # check), and whether it deferred encoding: its trace header says.
    if [[ -x $dltrace ]]; then
      clock=$("$dltrace" dump "$work/trace/rank0.dltrace" 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if r.get("type") == "header":
        a = r.get("attributes", {})
        print(a.get("dltrace.clock", "?") + ("+deferred" if a.get("dltrace.defer") == "1" else ""))
        break' 2>/dev/null || true)
    fi
    rm -rf "$work/trace"
  fi
  awk -v size="$size" -v clock="${clock:--}" '$1 == "allreduce_" size "_ns" { v = $2 }
      $1 == "allreduce_" size "_thread_cpu_ns" { t = $2 }
      $1 == "allreduce_" size "_process_cpu_ns" { p = $2 }
      END { if (v == "" || t == "" || p == "") exit 1; print v, p - t, clock }' "$out" || {
    echo "bench-record: no figures in the output of $prog:" >&2
    cat "$out" >&2
    exit 1
  }
}

# median <numbers...>
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

dltrace=$build/cli/dltrace
# shellcheck disable=SC2206
sides=(without $clocks)
if [[ $raw_sides == 1 ]]; then
  for clock in $clocks; do sides+=("$clock+raw"); done
  if [[ $eager_sides == 1 ]]; then
    for clock in $clocks; do sides+=("$clock+raw+eager"); done
  fi
fi
if [[ -n $baseline ]]; then sides+=(baseline); fi
echo "dltrace-mpi-overhead: $small_iters x 8 B after $warmup untimed, $large_iters x 1 MB (each in its own run);" \
  "mpirun --bind-to $bind; median of $reps runs each side; $(nproc) cores"
echo "recorder: $recorder${baseline:+ (baseline: $baseline)}"
echo "sides: ${sides[*]} (tsc, monotonic: this recorder with DLTRACE_CLOCK so set and DLTRACE_RAW=0; +raw: DLTRACE_RAW=1, its default, and DLTRACE_DEFER=auto, its default: encoding deferred where every core has a rank; +raw+eager: DLTRACE_DEFER=0)"
echo "load average before: $(loadavg)"
rows=()
cpu_rows=()
declare -A clock_seen=()
for np in $ranks_list; do
  for size in 8B 1MB; do
    declare -A got=() cpu=()
    # Alternate the sides so drift in machine load hits them alike.
    for ((i = 1; i <= reps; i++)); do
      line="  ranks $np $size run $i:"
      for side in "${sides[@]}"; do
        # A plain assignment, so that a failed run stops the script (set -e).
        r=$(run_once "$np" "$side" "$size")
        read -r v c k <<<"$r"
        got[$side]+="$v "
        cpu[$side]+="$c "
        if [[ $k != - ]]; then clock_seen[$side]+="$k "; fi
        line+=" $side $v ns ($c ns other threads' CPU)"
      done
      echo "$line"
    done
    row="$np $size"
    cpu_row="$np $size"
    for side in "${sides[@]}"; do
      # shellcheck disable=SC2086
      row+=" $(median ${got[$side]})"
      # shellcheck disable=SC2086
      cpu_row+=" $(median ${cpu[$side]})"
    done
    rows+=("$row")
    cpu_rows+=("$cpu_row")
    unset got cpu
  done
done
echo "load average after: $(loadavg)"

echo
for side in "${sides[@]:1}"; do
  # shellcheck disable=SC2086
  echo "clock the recorded runs used (+deferred: encoding deferred), side $side: $(printf '%s\n' ${clock_seen[$side]:-unknown} |
    sort | uniq -c | awk '{ printf "%s%s x %s", sep, $1, $2; sep = ", " }')"
done
echo "(the path the calls took: DLTRACE_BENCH_INSTRUCTIONS=1 says, per clock)"

# table <percent: 1|0> <rows...>: ranks, size, then per side the median,
# and for each side after the first (without) the ns added (and the %).
table() {
  local header pct=$1
  shift
  header=$(printf '%-6s %-5s %12s' ranks size "without ns")
  for side in "${sides[@]:1}"; do
    header+=$(printf ' %14s %10s' "$side ns" added)
    if [[ $pct == 1 ]]; then header+=$(printf ' %8s' "%"); fi
  done
  echo "$header"
  for row in "$@"; do
    awk -v row="$row" -v pct="$pct" 'BEGIN {
      n = split(row, f, " ")
      printf "%-6s %-5s %12.1f", f[1], f[2], f[3]
      for (i = 4; i <= n; ++i) {
        printf " %14.1f %10.1f", f[i], f[i] - f[3]
        if (pct) printf " %7.1f%%", (f[3] > 0) ? (f[i] - f[3]) / f[3] * 100 : 0
      }
      printf "\n" }'
  done
}
echo "wall ns per call, medians:"
table 1 "${rows[@]}"
echo
echo "CPU time per call of rank 0's other threads (process less calling thread; the"
echo "recorder's flusher, and MPI's own), medians:"
table 0 "${cpu_rows[@]}"
