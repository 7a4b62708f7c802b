# SPDX-License-Identifier: GPL-2.0-only
# Not a script: sourced by bench-ff.sh and bench-ff-sets.sh, which set $dltrace and $work.
# ff_simulate LABEL NAME ARGS...: `$dltrace simulate ARGS -o $work/NAME`, its log in
# $work/NAME.log and its wall and user CPU seconds in $work/NAME.time (/usr/bin/time "%e %U",
# what bench_ff_runs.py reads); on failure "LABEL failed:", the log's tail, and exit 1.
ff_simulate() {
  local label=$1 name=$2
  shift 2
  /usr/bin/time -f "%e %U" -o "$work/$name.time" "$dltrace" simulate "$@" -o "$work/$name" \
    >"$work/$name.log" 2>&1 ||
    { echo "$label failed:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
}
