#!/usr/bin/env bash
# Measures what the recorder adds per MPI call: runs dltrace-mpi-overhead with
# and without libdltrace-record.so, alternating, and prints the medians.
#
# usage: scripts/bench-record.sh [build_dir]      (default build/, or $DLTRACE_BUILD_DIR)
# env:   DLTRACE_BENCH_RANKS        rank counts to run        (default "2 4")
#        DLTRACE_BENCH_REPS         repetitions of each side  (default 3)
#        DLTRACE_BENCH_SMALL_ITERS  8-byte allreduce calls    (default 200000)
#        DLTRACE_BENCH_LARGE_ITERS  1 MB allreduce calls      (default 200)
#        DLTRACE_MPI_OVERHEAD       the benchmark program     (default <build>/tests/mpi/dltrace-mpi-overhead)
#        DLTRACE_BENCH_INSTRUCTIONS 1: instead of times, count the instructions
#                                   per 8 B call under valgrind's callgrind, one
#                                   rank without mpirun (a figure machine load
#                                   does not move; needs valgrind)
# Prints figures; it asserts nothing beyond every run succeeding and every
# recorded run leaving one trace file per rank.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-${DLTRACE_BUILD_DIR:-build}}
ranks_list=${DLTRACE_BENCH_RANKS:-"2 4"}
reps=${DLTRACE_BENCH_REPS:-3}
small_iters=${DLTRACE_BENCH_SMALL_ITERS:-200000}
large_iters=${DLTRACE_BENCH_LARGE_ITERS:-200}
prog=${DLTRACE_MPI_OVERHEAD:-$build/tests/mpi/dltrace-mpi-overhead}
recorder=$build/record/libdltrace-record.so

for f in "$prog" "$recorder"; do
  if [[ ! -e $f ]]; then
    echo "bench-record: $f not found; build first (cmake --build $build), or set DLTRACE_MPI_OVERHEAD" >&2
    exit 1
  fi
done
prog=$(realpath "$prog")
recorder=$(realpath "$recorder")

# Open MPI refuses root without --allow-run-as-root; never pass it otherwise.
# Two ranks or more may exceed the cores here, hence --oversubscribe.
mpirun_flags=(--oversubscribe)
if [[ $(id -u) -eq 0 ]]; then mpirun_flags+=(--allow-run-as-root); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dltrace-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [[ ${DLTRACE_BENCH_INSTRUCTIONS:-0} == 1 ]]; then
  if ! command -v valgrind >/dev/null; then
    echo "bench-record: DLTRACE_BENCH_INSTRUCTIONS=1 needs valgrind (apt-get install valgrind)" >&2
    exit 1
  fi
  if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  # instructions <preload or ""> <calls>: all the process executed, every
  # thread. No resource samples and one flush, at exit (the calls stay below
  # the recorder's early-flush mark), so that timers do not change the count.
  instructions() {
    local n
    n=$(env ${1:+LD_PRELOAD="$1"} DLTRACE_OUTPUT="$work/trace" DLTRACE_SAMPLE_MS=0 DLTRACE_QUIET=1 \
          DLTRACE_FLUSH_MS=3600000 \
          valgrind --tool=callgrind --callgrind-out-file=/dev/null "$prog" "$2" 0 0 2>&1 |
        awk '/Collected :/ { print $4 }')
    rm -rf "$work/trace"
    if [[ -z $n ]]; then
      echo "bench-record: $prog did not run under valgrind" >&2
      exit 1
    fi
    echo "$n"
  }
  # Per call: the difference between two call counts, so start-up cancels out.
  lo=20000 hi=60000
  echo "dltrace-mpi-overhead under callgrind, 1 rank: instructions per 8 B MPI_Allreduce ($lo and $hi calls)"
  a=$(instructions "" $lo) b=$(instructions "" $hi)
  c=$(instructions "$recorder" $lo) d=$(instructions "$recorder" $hi)
  awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v n=$((hi - lo)) 'BEGIN {
    without = (b - a) / n; with = (d - c) / n
    printf "%-14s %14s %14s %12s\n", "", "without", "with", "added"
    printf "%-14s %14.1f %14.1f %12.1f\n", "instructions", without, with, with - without }'
  exit 0
fi

# run_once <ranks> <with|without>: prints "<8B ns> <1MB ns>".
run_once() {
  local np=$1 side=$2 out=$work/out.txt err=$work/err.txt
  local -a env_flags=()
  if [[ $side == with ]]; then
    rm -rf "$work/trace"
    env_flags=(-x LD_PRELOAD="$recorder" -x DLTRACE_OUTPUT="$work/trace")
  fi
  if ! mpirun "${mpirun_flags[@]}" -np "$np" "${env_flags[@]}" \
      "$prog" "$small_iters" "$large_iters" >"$out" 2>"$err"; then
    echo "bench-record: $side recorder, $np ranks: $prog failed:" >&2
    cat "$err" >&2
    exit 1
  fi
  if [[ $side == with ]]; then
    local n
    n=$(find "$work/trace" -name 'rank*.dltrace' 2>/dev/null | wc -l)
    if [[ $n -ne $np ]]; then
      echo "bench-record: recorded run with $np ranks left $n trace files in $work/trace" >&2
      cat "$err" >&2
      exit 1
    fi
    rm -rf "$work/trace"
  fi
  awk '$1 == "allreduce_8B_ns" { s = $2 } $1 == "allreduce_1MB_ns" { l = $2 }
       END { if (s == "" || l == "") exit 1; print s, l }' "$out" || {
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

echo "dltrace-mpi-overhead: $small_iters x 8 B, $large_iters x 1 MB; median of $reps runs each side"
rows=()
for np in $ranks_list; do
  without_s=() without_l=() with_s=() with_l=()
  # Alternate the sides so drift in machine load hits both alike.
  for ((i = 1; i <= reps; i++)); do
    # A plain assignment, so that a failed run stops the script (set -e).
    figures=$(run_once "$np" without)
    read -r s l <<<"$figures"
    without_s+=("$s") without_l+=("$l")
    figures=$(run_once "$np" with)
    read -r s l <<<"$figures"
    with_s+=("$s") with_l+=("$l")
    echo "  ranks $np run $i: 8B ${without_s[-1]} / ${with_s[-1]} ns, 1MB ${without_l[-1]} / ${with_l[-1]} ns (without / with)"
  done
  rows+=("$np 8B $(median "${without_s[@]}") $(median "${with_s[@]}")")
  rows+=("$np 1MB $(median "${without_l[@]}") $(median "${with_l[@]}")")
done

echo
printf '%-6s %-5s %14s %14s %12s %10s\n' ranks size "without ns" "with ns" "added ns" overhead
for row in "${rows[@]}"; do
  read -r np size without with <<<"$row"
  awk -v np="$np" -v size="$size" -v a="$without" -v b="$with" 'BEGIN {
    pct = (a > 0) ? (b - a) / a * 100 : 0
    printf "%-6s %-5s %14.1f %14.1f %12.1f %9.1f%%\n", np, size, a, b, b - a, pct }'
done
