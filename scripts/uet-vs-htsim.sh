#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the 8-to-1 incast (2 MB per sender, 1 us links) at 100 and 400 Gbit/s with
# NSCC and RCCC in dltrace's ns-3 UET and in uet-htsim (the reference), prints
# the max FCT of each and their difference, the first flow's FCT (how unevenly
# the flows were served) and the packets trimmed (htsim: retransmitted, one per
# trim there as here), then one benchmark line: ns-3
# packets per wall second, UET against RDMA (DCQCN) on the same incast.
#
# Usage: scripts/uet-vs-htsim.sh [HTSIM_UEC]
#   HTSIM_UEC: uet-htsim's htsim_uec binary (or set $HTSIM_UEC); without one
#   the htsim side is skipped with a line saying so. Build it with
#   cd htsim/sim && cmake -S . -B build && cmake --build build
# Environment: DLTRACE_BUILD_DIR (default build), UET_BYTES (2000000),
# UET_SENDERS (8), UET_SEEDS (1 2 3 4 5: max FCTs over seeds are shown as
# min-max, ns-3's RngRun and htsim's -seed), UET_BENCH_BYTES (20000000).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DLTRACE_BUILD_DIR:-build}
incast="$build/ns3-module/examples/dltrace-uet-incast"
htsim=${1:-${HTSIM_UEC:-}}
bytes=${UET_BYTES:-2000000}
senders=${UET_SENDERS:-8}
seeds=${UET_SEEDS:-1 2 3 4 5}
bench_bytes=${UET_BENCH_BYTES:-20000000}
if [[ ! -x $incast ]]; then
  echo "uet-vs-htsim: $incast is missing (cmake --build $build --target dltrace-uet-incast)" >&2
  exit 1
fi
if [[ -n $htsim && ! -x $htsim ]]; then
  echo "uet-vs-htsim: $htsim is not an executable htsim_uec" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# uet-htsim has no star: a two-tier fat tree whose one ToR holds every host
# (tier-1 links of 1 ns, never used by the incast) is the same path, host ->
# ToR -> host over 1 us links. Its NSCC and queue sizes scale with the RTT it
# computes for its diameter (4 hops), which dltrace is given as rtt-us.
nodes=16
{
  echo "Nodes $nodes"
  echo "Connections $senders"
  for ((i = 0; i < senders; i++)); do echo "$i->$senders id $((i + 1)) start 0 size $bytes"; done
} >"$work/incast.cm"
topo() {
  cat <<EOF
Nodes $nodes
Tiers 2
Podsize $nodes

Tier 0
Downlink_speed_Gbps $1
Radix_Down $nodes
Radix_Up $nodes
Downlink_Latency_ns 1000
Switch_Latency_ns 0

Tier 1
Downlink_speed_Gbps $1
Radix_Down 1
Downlink_Latency_ns 1
Switch_Latency_ns 0
EOF
}
# uet-htsim's network_max_unloaded_rtt for that topology: 2 x 2.002 us plus a
# 4150-byte frame and a 64-byte ACK on each of 4 hops.
htsim_rtt_us() { /usr/bin/python3 -c "r=$1e9; print(2*2.002 + 4*(4150+64)*8/r*1e6)"; }

if [[ -z $htsim ]]; then
  echo "uet-htsim: no htsim_uec given (argument or \$HTSIM_UEC): its column is skipped"
fi
# Per seed: max FCT, first flow's FCT, trimmed (htsim: retransmitted).
ours_run() { # RATE CC RTT SEED
  "$incast" --senders="$senders" --bytes="$bytes" --rate="${1}Gbps" --cc="$2" --rtt-us="$3" --run="$4" |
    awk '/^flow/ {m = (m == "" || $6 < m) ? $6 : m} /^transport/ {for (i = 1; i < NF; i++) {
      if ($i == "max_fct_us") x = $(i + 1); if ($i == "trimmed") t = $(i + 1)}} END {print x, m, t}'
}
theirs_run() { # RATE CC SEED
  local flag
  flag=$([[ $2 == nscc ]] && echo -sender_cc_only || echo -receiver_cc_only)
  (cd "$work" && "$htsim" -tm incast.cm -topo "star$1.topo" -linkspeed "${1}000" -end 20000 -seed "$3" "$flag") |
    awk -v n="$senders" '/finished at/ {for (i = 1; i < NF; i++) if ($i == "at") f = $(i + 1);
      c++; x = (f > x) ? f : x; m = (m == "" || f < m) ? f : m} /^New:/ {r = $4}
      END {if (c != n) print "incomplete(" c "/" n ")", "-", r; else print x, m, r}'
}
# min-max of column COL over the lines on stdin, and the mean
spread() { awk -v c="$1" '{v = $c; if (v !~ /^[0-9.]+$/) {bad = 1; next} s += v; n++; lo = (n == 1 || v < lo) ? v : lo;
  hi = (n == 1 || v > hi) ? v : hi} END {if (bad || n == 0) print "-"; else printf "%.1f-%.1f|%.2f\n", lo, hi, s / n}'; }

printf '%-5s %-5s %-22s %-22s %7s %-22s %-22s %-10s %-10s\n' rate cc dltrace_max_fct_us htsim_max_fct_us diff_% \
  dltrace_first_fct_us htsim_first_fct_us trimmed htsim_rtx
for rate in 100 400; do
  topo "$rate" >"$work/star$rate.topo"
  rtt=$(htsim_rtt_us "$rate")
  for cc in nscc rccc; do
    : >"$work/ours" && : >"$work/theirs"
    for seed in $seeds; do
      ours_run "$rate" "$cc" "$rtt" "$seed" >>"$work/ours"
      if [[ -n $htsim ]]; then theirs_run "$rate" "$cc" "$seed" >>"$work/theirs"; fi
    done
    omax=$(spread 1 <"$work/ours") omin=$(spread 2 <"$work/ours") otrim=$(spread 3 <"$work/ours")
    tmax=- tmin=- trtx=- diff=-
    if [[ -n $htsim ]]; then
      tmax=$(spread 1 <"$work/theirs") tmin=$(spread 2 <"$work/theirs") trtx=$(spread 3 <"$work/theirs")
      if [[ $tmax != - ]]; then
        diff=$(/usr/bin/python3 -c "a=float('${omax#*|}'); b=float('${tmax#*|}'); print(f'{100*(a-b)/b:+.1f}')")
      fi
    fi
    # Cells: min-max over the seeds (the mean after |, used for diff_%: of the means).
    printf '%-5s %-5s %-22s %-22s %7s %-22s %-22s %-10s %-10s\n' "${rate}G" "$cc" "$omax" "$tmax" "$diff" \
      "$omin" "$tmin" "${otrim%|*}" "${trtx%|*}"
  done
done

# Benchmark (not a test): ns-3 packets per wall second, UET and RDMA (DCQCN, its
# 1 KB MTU: more packets for the same bytes), 100 Gbit/s, best of three runs.
for t in uet rdma; do
  best=0 line=
  for _ in 1 2 3; do
    l=$("$incast" --senders="$senders" --bytes="$bench_bytes" --rate=100Gbps --transport="$t" | tail -1)
    r=$(sed -n 's/.* packets_per_wall_s \([0-9]*\).*/\1/p' <<<"$l")
    if ((r > best)); then best=$r line=$l; fi
  done
  echo "bench $t: $(sed -n 's/.* packets \([0-9]*\) wall_s \([0-9.]*\) packets_per_wall_s \([0-9]*\).*/\1 packets in \2 s wall, \3 packets per wall s/p' <<<"$line") (best of 3, $senders x $bench_bytes bytes)"
done
