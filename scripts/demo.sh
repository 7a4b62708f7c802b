#!/usr/bin/env bash
# The main job on a built-in default: installs, builds, records a real
# data-parallel MPI training run (4 ranks under mpirun), prints `dltrace info`
# of its trace set, replays its traffic over loopback TCP and prints
# recorded vs replayed times, and ends by writing the HTML report of the
# recorded run (with the replay beside it) and printing its path.
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
echo "== dltrace report $out/train -o $out/report.html --results $out/replay"
"$build/cli/dltrace" report "$out/train" -o "$out/report.html" --results "$out/replay"
echo "open $out/report.html in a browser (one file, no network needed)"
