#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds ns3-module/ as the contrib module `dltrace` inside an ns-3 source
# tree, with only the ns-3 modules it needs, then runs its example and its test
# suites there with ./ns3 and test.py, as a user with their own tree would.
#
#   scripts/ns3-contrib-build.sh              Debian's ns-3.37 sources (apt-get source ns3)
#                                             in build-ns3-tree/; adds a deb-src entry for
#                                             the archive this machine uses when none exists
#   scripts/ns3-contrib-build.sh NS3_TREE     an ns-3 tree of your own (the folder with ./ns3)
#
# Takes 20-40 minutes on 2 cores the first time (ns-3's core, network,
# internet, ... with their tests and examples); later runs rebuild only what changed.
#
#   NS3_MPI=1     also ns-3's mpi module (--enable-mpi, Open MPI's mpicxx found by
#                 CMake): `dltrace simulate --engine ns3 --partitions N` needs it
#   NS3_LIBS_ONLY=1  only the ns-3 libraries dltrace's own build links (core,
#                 network, internet, point-to-point, traffic-control, flow-monitor;
#                 with NS3_MPI=1 also mpi): no contrib module, tests, examples or
#                 test.py (about half the time)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${JOBS:-$(nproc)}"
say() { echo "ns3-contrib-build: $*"; }
die() { echo "ns3-contrib-build: error: $*" >&2; exit 1; }

# A deb-src line for each deb source this machine already uses, so `apt-get
# source` fetches from the same archive (and the same snapshot, if pinned).
add_deb_src() {
  [ "$(id -u)" -eq 0 ] || die "no deb-src entry for apt; run as root, or add one and run apt-get update"
  local out=/etc/apt/sources.list.d/dltrace-deb-src.sources
  local found=0
  : > "$out.tmp"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    # deb822 stanzas: copy those whose Types has "deb", with Types set to deb-src.
    awk -v RS= -v ORS='\n\n' '/(^|\n)Types:[^\n]*(^|[ \t])deb([ \t]|\n|$)/ {
        sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' "$f" >> "$out.tmp"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$out.tmp"
  done
  grep -q '[^[:space:]]' "$out.tmp" && found=1
  [ "$found" -eq 1 ] || { rm -f "$out.tmp"; die "no deb entry found in /etc/apt to derive a deb-src entry from"; }
  if grep -q '^deb-src ' "$out.tmp"; then mv "$out.tmp" "${out%.sources}.list"; else mv "$out.tmp" "$out"; fi
  say "added deb-src entries ($(ls /etc/apt/sources.list.d/dltrace-deb-src.*))"
  apt-get update -qq
}

# Sets TREE to the ns-3 folder of Debian's sources unpacked under $1.
fetch_debian_sources() {
  local work="$1" tree
  mkdir -p "$work"
  tree="$(ls -d "$work"/ns3-*/ns-3.* 2>/dev/null | head -n1 || true)"
  if [ -z "$tree" ]; then
    command -v dpkg-source >/dev/null || die "dpkg-source not found (apt-get install dpkg-dev)"
    if ! apt-get source --print-uris ns3 >/dev/null 2>&1; then add_deb_src; fi
    say "fetching Debian's ns3 sources into $work"
    (cd "$work" && apt-get source -qq ns3 >/dev/null 2>&1) ||
      (cd "$work" && apt-get source ns3) || die "apt-get source ns3 failed"
    tree="$(ls -d "$work"/ns3-*/ns-3.* 2>/dev/null | head -n1 || true)"
    [ -n "$tree" ] || die "no ns-3.* folder in the unpacked sources under $work"
  fi
  TREE="$tree"
}

if [ $# -gt 1 ]; then die "usage: $0 [NS3_TREE]"; fi
if [ $# -eq 1 ]; then
  TREE="$(cd "$1" 2>/dev/null && pwd)" || die "$1: no such directory"
else
  fetch_debian_sources "${DLTRACE_NS3_WORK:-$ROOT/build-ns3-tree}"
fi
[ -x "$TREE/ns3" ] && [ -d "$TREE/contrib" ] || die "$TREE: not an ns-3 source tree (no ./ns3 or contrib/)"
say "ns-3 tree: $TREE ($(cat "$TREE/VERSION" 2>/dev/null || echo 'version unknown'))"

# Link the module in (a copy works as well; a link keeps it current).
LINK="$TREE/contrib/dltrace"
if [ -L "$LINK" ]; then
  ln -sfn "$ROOT/ns3-module" "$LINK"
elif [ -e "$LINK" ]; then
  die "$LINK exists and is not a link to this checkout; move it away first"
else
  ln -s "$ROOT/ns3-module" "$LINK"
fi

cd "$TREE"
# Only dltrace and what it links (ns-3 resolves the dependencies from its CMakeLists).
MODULES="dltrace"
EXTRA=()
LIBS_ONLY="${NS3_LIBS_ONLY:-0}"
if [ "$LIBS_ONLY" = 1 ]; then
  MODULES="core;network;internet;point-to-point;traffic-control;flow-monitor"
fi
if [ "${NS3_MPI:-0}" = 1 ]; then
  command -v mpicxx >/dev/null || die "NS3_MPI=1 needs Open MPI (apt-get install libopenmpi-dev openmpi-bin)"
  MODULES="$MODULES;mpi"
  EXTRA+=(--enable-mpi)
fi
if [ "$LIBS_ONLY" = 1 ]; then
  EXTRA+=(--disable-examples --disable-tests)
else
  EXTRA+=(--enable-examples --enable-tests)
fi
say "configuring (modules: $MODULES; ${EXTRA[*]})"
./ns3 configure -d release --enable-modules "$MODULES" "${EXTRA[@]}" \
  --disable-python-bindings >configure.dltrace.log 2>&1 ||
  { tail -n 30 configure.dltrace.log >&2; die "./ns3 configure failed (log: $TREE/configure.dltrace.log)"; }
grep -A3 "Modules configured to be built" configure.dltrace.log | sed 's/^/  /'
[ "$LIBS_ONLY" = 1 ] || grep -qw dltrace configure.dltrace.log || die "ns-3 did not pick up contrib/dltrace"
if [ "${NS3_MPI:-0}" = 1 ]; then
  grep -A3 "Modules configured to be built" configure.dltrace.log | grep -qw mpi ||
    die "ns-3 did not configure its mpi module (MPI not found? log: $TREE/configure.dltrace.log)"
fi

say "building with $JOBS jobs"
# Not `./ns3 build -j N`: ns-3.37's ns3 caps the jobs at one less than the
# cores (one job on a 2-core machine).
cmake --build cmake-cache -j "$JOBS" >build.dltrace.log 2>&1 ||
  { tail -n 40 build.dltrace.log >&2; die "./ns3 build failed (log: $TREE/build.dltrace.log)"; }

if [ "$LIBS_ONLY" = 1 ]; then
  say "NS3_LIBS_ONLY=1: no example scenario or test.py; dltrace's build in $ROOT uses this tree from its next configure"
  say "ok"
  exit 0
fi

say "./ns3 run \"dltrace-simulate --PrintHelp\""
./ns3 run --no-build "dltrace-simulate --PrintHelp" | head -n 12

# A small scenario on a synthetic trace, when a dltrace program is at hand to write one.
DLTRACE="${DLTRACE:-$ROOT/build/cli/dltrace}"
if [ -x "$DLTRACE" ]; then
  work="$(mktemp -d /tmp/dltrace-ns3-contrib-XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  "$DLTRACE" synth --model resnet50 --ranks 4 --ranks-per-host 1 --iterations 1 -o "$work/trace" >/dev/null
  say "./ns3 run \"dltrace-simulate --trace=... --algo=ring --topo=leaf-spine:rate=10Gbps\""
  ./ns3 run --no-build "dltrace-simulate --trace=$work/trace --algo=ring --topo=leaf-spine:rate=10Gbps --out=$work/sim"
  ls "$work/sim"/rank*.results.json >/dev/null || die "the example wrote no results"
else
  say "no dltrace program at $DLTRACE (set DLTRACE=...): skipping the example scenario"
fi

say "./test.py --no-build --suite dltrace"
./test.py --no-build --suite dltrace
# dltrace's own build can run `dltrace simulate` on this (release-profile) ns-3.
case "$TREE" in
  "$ROOT"/build-ns3-tree/*) say "dltrace's build in $ROOT uses this ns-3 from its next configure (./scripts/build.sh; -DDLTRACE_NS3_TREE=OFF keeps Debian's)" ;;
  *) say "to build dltrace against this ns-3: ./scripts/build.sh -DDLTRACE_NS3_TREE=$TREE" ;;
esac
say "ok"
