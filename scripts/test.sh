#!/usr/bin/env bash
# Installs what dltrace needs (Debian 12, as root), builds with warnings as
# errors, and runs the whole test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DDLTRACE_WERROR=ON
cd "${DLTRACE_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 600
