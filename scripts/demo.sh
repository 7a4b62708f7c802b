#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The main job on a built-in default: installs, builds, records a real
# data-parallel MPI training run (4 ranks under mpirun), prints `dltrace info`
# of its trace set, replays its traffic, simulates it in ns-3, prints
# recorded vs replayed vs simulated times (dltrace compare), and ends by
# writing the HTML report of the recorded run (with the replay and the
# simulation beside it) and printing its path.
#
# Where it can (root, network namespaces), it records on an emulated cluster
# of 4 hosts with 10 Gbit/s links (scripts/fidelity.sh), replays on the same
# network and simulates a star of that rate, so the three can agree. Else it
# records 4 ranks on this host and says why its numbers differ.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
build=${DLTRACE_BUILD_DIR:-build}
out=$(mktemp -d /tmp/dltrace-demo-XXXXXX)
steps=50

results=()
cluster_reason=
if [ "$(id -u)" -ne 0 ]; then
  cluster_reason="not root (network namespaces need it)"
else
  echo "== scripts/fidelity.sh --rates 10 --programs train-ring --steps $steps -o $out/cluster"
  set +e
  ./scripts/fidelity.sh --build "$build" --rates 10 --programs train-ring --steps $steps -o "$out/cluster"
  rc=$?
  set -e
  if [ $rc -eq 0 ] && [ -d "$out/cluster/train-ring-10g" ]; then
    trace=$out/cluster/train-ring-10g
    for k in replay ns3; do [ -d "$trace-$k" ] && results+=(--results "$trace-$k"); done
    echo
    echo "== dltrace info $trace"
    "$build/cli/dltrace" info "$trace"
  else
    cluster_reason="the emulated cluster did not run (scripts/fidelity.sh exit $rc; log in $out/cluster/fidelity.log)"
  fi
fi

if [ -n "$cluster_reason" ]; then
  echo "== recording on this host only: $cluster_reason."
  echo "   Its 4 ranks talk through shared memory; the replay and the simulation time those"
  echo "   same-host transfers on a shared-memory model (80 Gbit/s, 0.5 us: --local-gbps,"
  echo "   --local-latency-us), not as measured, and 4 ranks share the host's cores, so"
  echo "   their times differ from the recording."
  mpirun=(mpirun --oversubscribe --bind-to none)
  [ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
  trace=$out/train
  echo "== dltrace record -o $trace -- mpirun -np 4 dltrace-mpi-train --steps $steps"
  "$build/cli/dltrace" record -o "$trace" -- "${mpirun[@]}" -np 4 "$build/tests/mpi/dltrace-mpi-train" --steps $steps
  echo
  echo "== dltrace info $trace"
  "$build/cli/dltrace" info "$trace"
  echo
  echo "== dltrace replay $trace --local --iterations 10 -o $out/replay"
  "$build/cli/dltrace" replay "$trace" --local --iterations 10 --no-progress -o "$out/replay"
  echo
  results=(--results "$out/replay")
  sim_check=$("$build/cli/dltrace" simulate 2>&1 || true)
  if [[ $sim_check != *"not built"* ]]; then
    echo "== dltrace simulate $trace --iterations 10 --topo leaf-spine:hosts-per-leaf=2,rate=10Gbps -o $out/simulate"
    "$build/cli/dltrace" simulate "$trace" --iterations 10 --topo leaf-spine:hosts-per-leaf=2,rate=10Gbps \
      --no-flowmon -o "$out/simulate" | tee "$out/simulate.txt"
    echo
    echo "== dltrace compare $trace $out/replay $out/simulate"
    "$build/cli/dltrace" compare "$trace" "$out/replay" "$out/simulate" || [ $? -eq 3 ]  # 3: a run incomplete
    results=(--results "$out/replay" --results "$out/simulate")
  else
    echo "== dltrace simulate: skipped (this build has no ns-3)"
  fi
fi

echo "== dltrace report $trace -o $out/report.html ${results[*]}"
"$build/cli/dltrace" report "$trace" -o "$out/report.html" "${results[@]}"
echo "open $out/report.html in a browser (one file, no network needed)"
