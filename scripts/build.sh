#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Configures and builds dltrace into build/ (or $DLTRACE_BUILD_DIR).
# Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DLTRACE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$build.configure.log" 2>&1 || {
  cat "$build.configure.log" >&2
  exit 1
}
# Show only dltrace's own configure messages (skipped parts and why).
grep -E "^-- dltrace|^CMake (Warning|Error)" "$build.configure.log" || true
cmake --build "$build" -j"$(nproc)"
