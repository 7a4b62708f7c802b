#!/usr/bin/env bash
# The main job on a built-in default: installs, builds, records a real
# data-parallel MPI training run (4 ranks under mpirun), prints `dltrace info`
# of its trace set, replays its traffic over loopback TCP, simulates it in
# ns-3 on a small leaf-spine, prints recorded vs replayed vs simulated times
# (dltrace compare), and ends by writing the HTML report of the recorded run
# (with the replay and the simulation beside it) and printing its path.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
build=${DLTRACE_BUILD_DIR:-build}
out=$(mktemp -d /tmp/dltrace-demo-XXXXXX)
mpirun=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)

echo "== dltrace record -o $out/train -- mpirun -np 4 dltrace-mpi-train --steps 50"
"$build/cli/dltrace" record -o "$out/train" -- \
  "${mpirun[@]}" -np 4 "$build/tests/mpi/dltrace-mpi-train" --steps 50
echo
echo "== dltrace info $out/train"
"$build/cli/dltrace" info "$out/train"
echo
echo "== dltrace replay $out/train --local --iterations 10 -o $out/replay"
"$build/cli/dltrace" replay "$out/train" --local --iterations 10 --no-progress -o "$out/replay"
echo
results=(--results "$out/replay")
sim_check=$("$build/cli/dltrace" simulate 2>&1 || true)
if [[ $sim_check != *"not built"* ]]; then
  echo "== dltrace simulate $out/train --iterations 10 --topo leaf-spine:hosts-per-leaf=2,rate=10Gbps -o $out/simulate"
  "$build/cli/dltrace" simulate "$out/train" --iterations 10 --topo leaf-spine:hosts-per-leaf=2,rate=10Gbps \
    --no-flowmon -o "$out/simulate" | tee "$out/simulate.txt"
  echo
  echo "== dltrace compare $out/train $out/replay $out/simulate"
  "$build/cli/dltrace" compare "$out/train" "$out/replay" "$out/simulate" || [ $? -eq 3 ]  # 3: a run incomplete
  results=(--results "$out/replay" --results "$out/simulate")
else
  echo "== dltrace simulate: skipped (this build has no ns-3)"
fi

echo "== dltrace report $out/train -o $out/report.html ${results[*]}"
"$build/cli/dltrace" report "$out/train" -o "$out/report.html" "${results[@]}"
echo "open $out/report.html in a browser (one file, no network needed)"
