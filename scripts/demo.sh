#!/usr/bin/env bash
# The main job on a built-in default: installs, builds, records a real
# data-parallel MPI training run (4 ranks under mpirun), prints `dltrace info`
# of its trace set, then replays its traffic over loopback TCP and prints
# recorded vs replayed times; then simulates the recorded run in ns-3 on a
# small leaf-spine and prints simulated vs recorded vs replayed times.
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
sim_check=$("$build/cli/dltrace" simulate 2>&1 || true)
if [[ $sim_check != *"not built"* ]]; then
  echo "== dltrace simulate $out/train --iterations 10 --topo leaf-spine:hosts-per-leaf=2,rate=10Gbps -o $out/simulate"
  "$build/cli/dltrace" simulate "$out/train" --iterations 10 --topo leaf-spine:hosts-per-leaf=2,rate=10Gbps \
    --no-flowmon -o "$out/simulate" | tee "$out/simulate.txt"
  echo
  echo "== per iteration: recorded vs replayed (sockets) vs simulated (ns-3), ms"
  python3 - "$out" <<'PY'
import glob, json, re, sys
out = sys.argv[1]
def per_iteration(d):
    it = {}
    for f in glob.glob(d + "/rank*.results.json"):
        with open(f) as fh:
            for row in json.load(fh)["iterations"]:
                i = row["iteration"]
                it[i] = max(it.get(i, 0), (row["end_ns"] - row["start_ns"]) / 1e6)
    return it
replayed, simulated = per_iteration(out + "/replay"), per_iteration(out + "/simulate")
recorded = {}
with open(out + "/simulate.txt") as fh:
    for line in fh:
        m = re.match(r"^(\d+)\s+([\d.]+)\s+([\d.]+)\s", line)
        if m:
            recorded[int(m.group(1))] = float(m.group(2))
print("%-10s %12s %12s %12s" % ("iteration", "recorded", "replayed", "simulated"))
for i in sorted(simulated):
    print("%-10d %12.3f %12.3f %12.3f" % (i, recorded.get(i, float("nan")), replayed.get(i, float("nan")), simulated[i]))
PY
else
  echo "== dltrace simulate: skipped (this build has no ns-3)"
fi
