#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ctest install_prefix: `cmake --install` into a fresh prefix, then the
# installed program alone (no build tree on its path, no DLTRACE_RECORD_LIB):
# `PREFIX/bin/dltrace --version`, and a `record` of a tiny MPI program (the
# installed dltrace-mpi-pingpong, 2 ranks) that must find the installed
# recorder in PREFIX/lib and write both ranks' traces.
#   test_install.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
prefix=$tmp/prefix
for f in bin/dltrace lib/libdltrace-record.so share/doc/dltrace/LICENSE; do
  [ -e "$prefix/$f" ] || { echo "not installed: PREFIX/$f" >&2; cat "$tmp/install.log" >&2; exit 1; }
done
unset DLTRACE_RECORD_LIB DLTRACE_PROFILER_LIB DLTRACE_MPI_PINGPONG
cd "$tmp"
"$prefix/bin/dltrace" --version
if [ ! -x "$prefix/bin/dltrace-mpi-pingpong" ] || ! command -v mpirun >/dev/null; then
  echo "install_prefix: built without MPI; --version checked, record not"
  exit 0
fi
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
"$prefix/bin/dltrace" record -o "$tmp/run" -- \
  mpirun -np 2 --oversubscribe "${root[@]}" --mca btl self,vader "$prefix/bin/dltrace-mpi-pingpong" 20
for r in 0 1; do
  [ -s "$tmp/run/rank$r.dltrace" ] || { echo "no rank$r.dltrace in $tmp/run" >&2; ls -la "$tmp/run" >&2; exit 1; }
done
"$prefix/bin/dltrace" info "$tmp/run" | head -5
echo "install_prefix: installed dltrace records with the installed recorder"
