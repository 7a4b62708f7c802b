#!/usr/bin/env bash
# Refreshes the vendored uPlot from the npm registry: refresh-uplot.sh VERSION.
# Run by hand on a machine with npm; the build never runs it.
set -euo pipefail
version=${1:?usage: refresh-uplot.sh VERSION (e.g. 1.6.32)}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null && tar xzf "uplot-$version.tgz")
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$here/"
cp "$tmp/package/LICENSE" "$here/uPlot.LICENSE"
sha256sum "$tmp/uplot-$version.tgz"
(cd "$here" && sha256sum uPlot.iife.min.js uPlot.min.css uPlot.LICENSE)
echo "uPlot $version copied into $here: update the version in README.md"
