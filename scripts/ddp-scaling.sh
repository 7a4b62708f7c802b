#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One GPU, one node of 8 GPUs, or several nodes? PyTorch DDP training of
# ResNet-152: synth writes the 1-GPU and 8-GPU jobs, scale grows the latter to
# 2 and 4 nodes, the flow engine simulates one iteration of each, and a table
# shows iteration time, throughput and scaling efficiency.
# usage: scripts/ddp-scaling.sh [build_dir]      (default build/, or $DLTRACE_BUILD_DIR)
#   DLTRACE_SCALING_TOPO   the network (default leaf-spine:rate=100Gbps)
set -euo pipefail
build=${1:-${DLTRACE_BUILD_DIR:-build}}
dltrace=$build/cli/dltrace
topo=${DLTRACE_SCALING_TOPO:-leaf-spine:rate=100Gbps}
[[ -x $dltrace ]] || { echo "ddp-scaling: $dltrace not found; build first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dltrace-scaling.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$dltrace" synth --model resnet152 --ranks 1 --iterations 2 -o "$work/gpu1" >/dev/null
"$dltrace" synth --model resnet152 --ranks 8 --ranks-per-host 8 --iterations 2 -o "$work/node1" >/dev/null
"$dltrace" scale "$work/node1" --ranks 16 --ranks-per-host 8 -o "$work/node2" >/dev/null
"$dltrace" scale "$work/node1" --ranks 32 --ranks-per-host 8 -o "$work/node4" >/dev/null
for job in gpu1 node1 node2 node4; do
  "$dltrace" simulate "$work/$job" --engine flow --algo ring --topo "$topo" -o "$work/$job-sim" \
    >"$work/$job.log" 2>&1 || { echo "ddp-scaling: simulating $job failed:" >&2; tail -3 "$work/$job.log" >&2; exit 1; }
  "$dltrace" compare "$work/$job-sim" "$work/$job-sim" --json >"$work/$job.json"
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
rows = [("1 GPU", "gpu1", 1, 1), ("1 node x 8 GPUs", "node1", 8, 1),
        ("2 nodes x 8 GPUs", "node2", 16, 2), ("4 nodes x 8 GPUs", "node4", 32, 4)]
base = None
print("| setup | GPUs | hosts | iteration ms | iterations/s x GPUs | efficiency |")
print("|---|---|---|---|---|---|")
for name, job, gpus, hosts in rows:
    with open("%s/%s.json" % (work, job)) as f:
        ms = json.load(f)["runs"][0]["mean_iteration_ms"]
    throughput = gpus * 1000.0 / ms
    base = base or throughput
    print("| %s | %d | %d | %.1f | %.1f | %.0f%% |" % (name, gpus, hosts, ms, throughput,
                                                    100.0 * throughput / (base * gpus)))
PY
