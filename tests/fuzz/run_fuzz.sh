#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the reader fuzzer with clang (-fsanitize=fuzzer,address,undefined)
# and runs it for a bounded time on a seed corpus of real trace files.
# usage: run_fuzz.sh SOURCE_DIR GENERATED_DIR SAMPLE_TOOL SECONDS
set -euo pipefail
src=$1 gen=$2 sample_tool=$3 seconds=${4:-30}
CXX=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
if [ -z "$CXX" ]; then
  echo "clang++ not found: skipping the fuzzer (install clang and libclang-rt-14-dev)"
  exit 77
fi
work=$(mktemp -d /tmp/dltrace-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$CXX" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$src/formats/include" -isystem "$gen" \
  "$src"/formats/src/{crc32c,trace,writer,reader,trace_set,op_kind}.cc \
  "$src/tests/fuzz/reader_fuzzer.cc" -o "$work/reader_fuzzer"

# Seeds: whole sample traces, each with a leading 0 (as is) and 1 (fix CRCs).
mkdir -p "$work/corpus"
"$sample_tool" -o "$work/set" --ranks 2 --hosts 1 --iterations 2 --buckets 2 >/dev/null
for f in "$work"/set/*.dltrace; do
  name=$(basename "$f")
  { printf '\x00'; cat "$f"; } >"$work/corpus/plain-$name"
  { printf '\x01'; cat "$f"; } >"$work/corpus/fixcrc-$name"
done
"$work/reader_fuzzer" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 2>&1 | tail -n 15
echo "fuzz: reader survived ${seconds}s without a crash, leak or hang"
