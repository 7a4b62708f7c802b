# SPDX-License-Identifier: GPL-2.0-only
# Not a script: sourced by bench-ff.sh and bench-ff-sets.sh, which set $dltrace and $work.
# ff_simulate LABEL NAME ARGS...: `$dltrace simulate ARGS -o $work/NAME`, its log in
# $work/NAME.log and its wall and user CPU seconds in $work/NAME.time (/usr/bin/time "%e %U",
# what bench_ff_runs.py reads); on failure "LABEL failed:", the log's tail, and exit 1.
# Every run is pinned to one CPU, the same for all (DLTRACE_BENCH_PIN: a CPU number, or
# none; default the last this shell may use): a virtual machine's CPUs can differ in speed
# by half, and the two runs of a ratio must not land on different ones.
ff_pin=${DLTRACE_BENCH_PIN:-$(taskset -cp $$ 2>/dev/null | sed 's/.*[,-]//; s/.*: //')}
[[ $ff_pin == none ]] && ff_pin=""
ff_pinned() { [[ -n $ff_pin ]] && echo "pinned to CPU $ff_pin" || echo "not pinned"; }
ff_simulate() {
  local label=$1 name=$2
  shift 2
  local pin=()
  [[ -n $ff_pin ]] && pin=(taskset -c "$ff_pin")
  /usr/bin/time -f "%e %U" -o "$work/$name.time" "${pin[@]}" "$dltrace" simulate "$@" -o "$work/$name" \
    >"$work/$name.log" 2>&1 ||
    { echo "$label failed:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
}
