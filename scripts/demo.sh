#!/usr/bin/env bash
# The main job on a built-in default: installs, builds, writes a small trace
# set with the trace writer and prints `dltrace info` on it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
build=${DLTRACE_BUILD_DIR:-build}
out=$(mktemp -d /tmp/dltrace-demo-XXXXXX)
echo "== writing a sample trace set (4 ranks on 2 hosts, 10 iterations) to $out/sample"
"$build/tests/dltrace-sample-trace" -o "$out/sample" --ranks 4 --hosts 2 --iterations 10
echo "== dltrace info $out/sample"
"$build/cli/dltrace" info "$out/sample"
