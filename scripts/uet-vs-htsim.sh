#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the 8-to-1 incast (2 MB per sender, 1 us links) at 100 and 400 Gbit/s with
# NSCC and RCCC in dltrace's ns-3 UET and in uet-htsim (the reference), prints
# the max FCT of each and their difference, then one benchmark line: ns-3
# packets per wall second, UET against RDMA (DCQCN) on the same incast.
#
# Usage: scripts/uet-vs-htsim.sh [HTSIM_UEC]
#   HTSIM_UEC: uet-htsim's htsim_uec binary (or set $HTSIM_UEC); without one
#   the htsim side is skipped with a line saying so. Build it with
#   cd htsim/sim && cmake -S . -B build && cmake --build build
# Environment: DLTRACE_BUILD_DIR (default build), UET_BYTES (2000000),
# UET_SENDERS (8).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DLTRACE_BUILD_DIR:-build}
incast="$build/ns3-module/examples/dltrace-uet-incast"
htsim=${1:-${HTSIM_UEC:-}}
bytes=${UET_BYTES:-2000000}
senders=${UET_SENDERS:-8}
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
printf '%-6s %-5s %14s %14s %8s %8s %8s\n' rate cc dltrace_fct_us htsim_fct_us diff_% trimmed htsim_rtx
for rate in 100 400; do
  topo "$rate" >"$work/star$rate.topo"
  rtt=$(htsim_rtt_us "$rate")
  for cc in nscc rccc; do
    line=$("$incast" --senders="$senders" --bytes="$bytes" --rate="${rate}Gbps" --cc="$cc" --rtt-us="$rtt" | tail -1)
    ours=$(sed -n 's/.* max_fct_us \([0-9.]*\).*/\1/p' <<<"$line")
    trimmed=$(sed -n 's/.* trimmed \([0-9]*\).*/\1/p' <<<"$line")
    theirs=- diff=- rtx=-
    if [[ -n $htsim ]]; then
      flag=$([[ $cc == nscc ]] && echo -sender_cc_only || echo -receiver_cc_only)
      out=$(cd "$work" && "$htsim" -tm incast.cm -topo "star$rate.topo" -linkspeed "${rate}000" -end 20000 "$flag")
      theirs=$(grep 'finished at' <<<"$out" | sed 's/.*finished at \([0-9.]*\).*/\1/' | sort -g | tail -1)
      done=$(grep -c 'finished at' <<<"$out" || true)
      rtx=$(grep '^New:' <<<"$out" | tail -1 | awk '{print $4}')
      if [[ $done != "$senders" ]]; then
        theirs="($done/$senders)"
      else
        diff=$(/usr/bin/python3 -c "print(f'{100*($ours-$theirs)/$theirs:+.1f}')")
      fi
    fi
    printf '%-6s %-5s %14s %14s %8s %8s %8s\n' "${rate}G" "$cc" "$ours" "$theirs" "$diff" "$trimmed" "$rtx"
  done
done

# Benchmark (not a test): ns-3 packets per wall second, UET and RDMA, 100 Gbit/s.
for t in uet rdma; do
  line=$("$incast" --senders="$senders" --bytes="$bytes" --rate=100Gbps --transport="$t" | tail -1)
  echo "bench $t: $(sed -n 's/.* packets \([0-9]*\) wall_s \([0-9.]*\) packets_per_wall_s \([0-9]*\).*/\1 packets in \2 s wall, \3 packets per wall s/p' <<<"$line")"
done
