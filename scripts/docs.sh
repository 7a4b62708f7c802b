#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the documentation site (Sphinx + MyST, Debian's python3-sphinx and
# python3-myst-parser; offline) from docs/ into OUT/html, default
# build/docs/html (or $DLTRACE_BUILD_DIR/docs/html). Warnings are errors. Then
# checks every internal link of the site and every relative link of the
# Markdown files outside it (README.md, CONTRIBUTING.md, CHANGELOG.md, the
# folders' READMEs). Exits non-zero on a warning or a broken link.
#
# The command reference runs `dltrace COMMAND --help`: the program is
# $DLTRACE_BIN, else this checkout's build/cli/dltrace, else dltrace on PATH.
#
#   scripts/docs.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${DLTRACE_BUILD_DIR:-build}/docs}
# Debian's Sphinx lives in the system Python; a python3 earlier on PATH
# (pyenv, a virtual environment) may not have it.
sphinx=${SPHINX_BUILD:-/usr/bin/sphinx-build}
[ -x "$sphinx" ] || sphinx=$(command -v sphinx-build || true)
if [ -z "$sphinx" ]; then
  echo "docs: sphinx-build not found (apt-get install python3-sphinx python3-myst-parser, or scripts/install-deps.sh)" >&2
  exit 1
fi
python=$(head -1 "$sphinx" | sed -n 's/^#! *//p' | awk '{print $1}')
[ -x "${python:-}" ] || python=/usr/bin/python3
rm -rf "$out/html" "$out/doctrees"
mkdir -p "$out"
# -E: a fresh environment, so a changed --help is always read again.
"$sphinx" -b html -W --keep-going -E -q -d "$out/doctrees" docs "$out/html"
"$python" docs/_ext/check_links.py "$out/html" README.md CONTRIBUTING.md CHANGELOG.md ./*/README.md
echo "docs: $out/html/index.html"
