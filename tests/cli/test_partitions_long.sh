#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ctest ns3_partitions_long (label long): builds the release ns-3 tree with
# MPI (NS3_MPI=1 NS3_LIBS_ONLY=1 scripts/ns3-contrib-build.sh, 20-40 minutes
# on 2 cores the first time), dltrace against it in build-mpi/, and runs the
# sequential-against-partitioned check (test_partitions_mpi.py) there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
NS3_MPI=1 NS3_LIBS_ONLY=1 scripts/ns3-contrib-build.sh
DLTRACE_BUILD_DIR=build-mpi ./scripts/build.sh
grep -q "with MPI" <(build-mpi/cli/dltrace --version) ||
  { echo "build-mpi/cli/dltrace has no MPI: see build-mpi.configure.log" >&2; exit 1; }
DLTRACE="$ROOT/build-mpi/cli/dltrace" DLTRACE_SAMPLE_TRACE="$ROOT/build-mpi/tests/dltrace-sample-trace" python3 "$ROOT/tests/cli/test_partitions_mpi.py"
