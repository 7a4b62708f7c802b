#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ctest docs_build: scripts/docs.sh (Sphinx, warnings as errors, every
# internal link checked) into a folder of the build tree, then
# check_reference.py: the built command reference has a page for every
# command and names every option of this dltrace.
#   test_docs_build.sh DLTRACE OUT_DIR
set -euo pipefail
dltrace=$1 out=$2
cd "$(dirname "$0")/../.."
start=$(date +%s)
DLTRACE_BIN=$dltrace ./scripts/docs.sh "$out"
python3 tests/docs/check_reference.py "$out/html" "$dltrace"
echo "docs_build: $(( $(date +%s) - start )) s"
