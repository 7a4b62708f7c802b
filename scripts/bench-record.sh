#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Measures what the recorder adds per MPI call: runs dltrace-mpi-overhead with
# and without libdltrace-record.so, alternating, and prints the medians: ns
# per call and % added, for an 8 B and a 1 MB MPI_Allreduce loop, each size
# in a run of its own (so that neither pays for the other's flushes), ranks
# under `mpirun --bind-to none`, the recorder writing a trace directory with
# its default settings (flusher and sampler on). It also prints rank 0's
# CPU time per call in threads other than the calling one (the recorder's
# flusher and sampler): what recording takes from cores the ranks spin on.
# The load average is
# printed before and after: on a shared machine it says how far to trust
# the figures.
#
# usage: scripts/bench-record.sh [build_dir]      (default build/, or $DLTRACE_BUILD_DIR)
# env:   DLTRACE_BENCH_RANKS        rank counts to run        (default 2)
#        DLTRACE_BENCH_BIND         mpirun --bind-to          (default none; core pins)
#        DLTRACE_BENCH_REPS         repetitions of each side  (default 5)
#        DLTRACE_BENCH_SMALL_ITERS  8-byte allreduce calls    (default 200000)
#        DLTRACE_BENCH_LARGE_ITERS  1 MB allreduce calls      (default 200)
#        DLTRACE_BENCH_BASELINE     another libdltrace-record.so (an older build)
#                                   run as a third side, alternating with the
#                                   others: before/after in the same conditions
#        DLTRACE_MPI_OVERHEAD       the benchmark program     (default <build>/tests/mpi/dltrace-mpi-overhead)
#        DLTRACE_BENCH_INSTRUCTIONS 1: instead of times, count the instructions
#                                   per 8 B call under valgrind's callgrind, one
#                                   rank without mpirun (a figure machine load
#                                   does not move; needs valgrind), split into
#                                   those in the call and those of the flusher,
#                                   and those of the wrapper alone (exact)
# Both modes first name the machine: CPU model (/proc/cpuinfo), cores and
# the kernel's clocksource (tsc: the recorder reads the TSC itself).
# Prints figures; it asserts nothing beyond every run succeeding and every
# recorded run leaving one trace file per rank.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-${DLTRACE_BUILD_DIR:-build}}
ranks_list=${DLTRACE_BENCH_RANKS:-2}
bind=${DLTRACE_BENCH_BIND:-none}
reps=${DLTRACE_BENCH_REPS:-5}
baseline=${DLTRACE_BENCH_BASELINE:-}
small_iters=${DLTRACE_BENCH_SMALL_ITERS:-200000}
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

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
echo "machine: ${cpu_model:-unknown CPU}, $(nproc) cores, clocksource ${clocksource:-unknown}"

if [[ ${DLTRACE_BENCH_INSTRUCTIONS:-0} == 1 ]]; then
  if ! command -v valgrind >/dev/null; then
    echo "bench-record: DLTRACE_BENCH_INSTRUCTIONS=1 needs valgrind (apt-get install valgrind)" >&2
    exit 1
  fi
  if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  # instructions <preload or ""> <calls>: "<all> <drain> <wrapper>": all the
  # process executed, every thread; of that what Recorder::DrainBuffers did
  # (the flusher's share: events turned into chunks and written); and what
  # the recorder's MPI_Allreduce executed itself (its own instructions, not
  # PMPI_Allreduce's: unlike the whole process's count, which MPI's polling
  # moves by a few instructions a call between runs, exact). No resource
  # samples and one flush, at exit (the calls stay well below half the
  # recorder's buffer), so that timers do not change the count.
  instructions() {
    local out=$work/callgrind.out n drain wrapper
    n=$(env ${1:+LD_PRELOAD="$1"} DLTRACE_OUTPUT="$work/trace" DLTRACE_SAMPLE_MS=0 DLTRACE_QUIET=1 \
          DLTRACE_FLUSH_MS=3600000 \
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
    rm -f "$out"
    echo "$n ${drain:-0} ${wrapper:-0}"
  }
  # Per call: the difference between two call counts, so start-up cancels out.
  lo=20000 hi=60000
  echo "dltrace-mpi-overhead under callgrind, 1 rank: instructions per 8 B MPI_Allreduce ($lo and $hi calls)"
  read -r a _ <<<"$(instructions "" $lo)"
  read -r b _ <<<"$(instructions "" $hi)"
  report() {  # report <label> <preload>
    local c d dc dd wc wd
    read -r c dc wc <<<"$(instructions "$2" $lo)"
    read -r d dd wd <<<"$(instructions "$2" $hi)"
    awk -v l="$1" -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v dc="$dc" -v dd="$dd" \
        -v wc="$wc" -v wd="$wd" -v n=$((hi - lo)) 'BEGIN {
      without = (b - a) / n; with = (d - c) / n; flusher = (dd - dc) / n
      printf "%-10s %10.1f %10.1f %10.1f %12.1f %10.1f %10.1f\n", l, without, with, with - without,
             with - without - flusher, flusher, (wd - wc) / n }'
  }
  echo "load average: $(loadavg) (callgrind counts do not depend on it)"
  printf "%-10s %10s %10s %10s %12s %10s %10s\n" recorder without with added "in the call" flusher wrapper
  report this "$recorder"
  if [[ -n $baseline ]]; then report baseline "$baseline"; fi
  exit 0
fi

# run_once <ranks> <without|with|baseline> <8B|1MB>: prints "NS CPU": ns per
# call, and rank 0's CPU time per call in threads other than the calling one
# (process CPU time less the calling thread's, over the timed loop): with the
# recorder, mostly its flusher, i.e. what it takes from the cores the ranks
# spin on.
# Each size runs alone: the 1 MB loop would otherwise pay for the flush of
# the 8 B loop's last events, and the 8 B one for nothing of the 1 MB's.
run_once() {
  local np=$1 side=$2 size=$3 out=$work/out.txt err=$work/err.txt
  local -a env_flags=() args=()
  case $side in
    with) env_flags=(-x LD_PRELOAD="$recorder" -x DLTRACE_OUTPUT="$work/trace") ;;
    baseline) env_flags=(-x LD_PRELOAD="$baseline" -x DLTRACE_OUTPUT="$work/trace") ;;
  esac
  if [[ $size == 8B ]]; then args=("$small_iters" 0); else args=(0 "$large_iters" 100); fi
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
    rm -rf "$work/trace"
  fi
  awk -v size="$size" '$1 == "allreduce_" size "_ns" { v = $2 }
      $1 == "allreduce_" size "_thread_cpu_ns" { t = $2 }
      $1 == "allreduce_" size "_process_cpu_ns" { p = $2 }
      END { if (v == "" || t == "" || p == "") exit 1; print v, p - t }' "$out" || {
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

sides=(without with)
if [[ -n $baseline ]]; then sides+=(baseline); fi
echo "dltrace-mpi-overhead: $small_iters x 8 B, $large_iters x 1 MB (each in its own run);" \
  "mpirun --bind-to $bind; median of $reps runs each side; $(nproc) cores"
echo "recorder: $recorder${baseline:+ (baseline: $baseline)}"
echo "load average before: $(loadavg)"
rows=()
cpu_rows=()
for np in $ranks_list; do
  for size in 8B 1MB; do
    declare -A got=() cpu=()
    # Alternate the sides so drift in machine load hits them alike.
    for ((i = 1; i <= reps; i++)); do
      line="  ranks $np $size run $i:"
      for side in "${sides[@]}"; do
        # A plain assignment, so that a failed run stops the script (set -e).
        r=$(run_once "$np" "$side" "$size")
        read -r v c <<<"$r"
        got[$side]+="$v "
        cpu[$side]+="$c "
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
header=$(printf '%-6s %-5s %12s %12s %10s %9s' ranks size "without ns" "with ns" "added ns" added)
if [[ -n $baseline ]]; then
  header+=$(printf ' %13s %10s %9s' "baseline ns" "added ns" added)
fi
echo "$header"
for row in "${rows[@]}"; do
  read -r np size without with base <<<"$row"
  awk -v np="$np" -v size="$size" -v a="$without" -v b="$with" -v c="${base:-}" 'BEGIN {
    printf "%-6s %-5s %12.1f %12.1f %10.1f %8.1f%%", np, size, a, b, b - a, (a > 0) ? (b - a) / a * 100 : 0
    if (c != "") printf " %13.1f %10.1f %8.1f%%", c, c - a, (a > 0) ? (c - a) / a * 100 : 0
    printf "\n" }'
done

echo
echo "CPU time per call of rank 0's other threads (process less calling thread; the"
echo "recorder's flusher and sampler, and MPI's own), medians:"
header=$(printf '%-6s %-5s %12s %12s %10s' ranks size "without ns" "with ns" "added ns")
if [[ -n $baseline ]]; then header+=$(printf ' %13s %10s' "baseline ns" "added ns"); fi
echo "$header"
for row in "${cpu_rows[@]}"; do
  read -r np size without with base <<<"$row"
  awk -v np="$np" -v size="$size" -v a="$without" -v b="$with" -v c="${base:-}" 'BEGIN {
    printf "%-6s %-5s %12.1f %12.1f %10.1f", np, size, a, b, b - a
    if (c != "") printf " %13.1f %10.1f", c, c - a
    printf "\n" }'
done
