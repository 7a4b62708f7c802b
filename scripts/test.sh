#!/usr/bin/env bash
# Installs what dltrace needs (Debian 12, as root), builds with warnings as
# errors, and runs the whole test suite. Exits non-zero on any failure.
# Tests labelled "long" (building the ns-3 module inside an ns-3 source tree,
# 20-40 minutes) run only with DLTRACE_LONG_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DDLTRACE_WERROR=ON
cd "${DLTRACE_BUILD_DIR:-build}"
if [ "${DLTRACE_LONG_TESTS:-0}" = 1 ]; then
  ctest --output-on-failure -j"$(nproc)" --timeout 3600
else
  ctest --output-on-failure -j"$(nproc)" --timeout 600 -LE long
fi
