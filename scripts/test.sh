#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs what dltrace needs (Debian 12, as root), builds with warnings as
# errors, and runs the whole test suite. Exits non-zero on any failure.
# Tests labelled "long" (building the ns-3 module inside an ns-3 source tree,
# 20-40 minutes) run only with DLTRACE_LONG_TESTS=1; tests labelled "timing"
# (wall-clock, throughput and accuracy bounds, which a busy or slow machine
# can miss) only with DLTRACE_TIMING_TESTS=1. The default run asserts nothing
# that machine timing can break.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DDLTRACE_WERROR=ON
cd "${DLTRACE_BUILD_DIR:-build}"
exclude=() timeout=3600
[ "${DLTRACE_LONG_TESTS:-0}" = 1 ] || { exclude+=(long); timeout=600; }
[ "${DLTRACE_TIMING_TESTS:-0}" = 1 ] || exclude+=(timing)
if [ ${#exclude[@]} -eq 0 ]; then
  ctest --output-on-failure -j"$(nproc)" --timeout $timeout
else
  ctest --output-on-failure -j"$(nproc)" --timeout $timeout -LE "^($(IFS='|'; echo "${exclude[*]}"))\$"
fi
