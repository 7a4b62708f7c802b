#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The real GPU check of the NCCL recorder, for a machine with an NVIDIA GPU,
# CUDA, NCCL and PyTorch + torchvision. Builds the project (or takes a build
# made elsewhere, DLTRACE_GPU_CHECK_PREBUILT=1), then records under
# `dltrace record`: (1) a small CUDA + NCCL program of our own on one GPU that
# calls every collective and send/recv, and (2) a few steps of PyTorch DDP
# training of ResNet-50 under torchrun, one process per GPU. Checks that the
# programs' output is unchanged by recording, that every NCCL operation has
# GPU start/end times inside the host time span, and that one step's
# all-reduce bytes sum to ResNet-50's gradient. Then prints the slowdown of a
# 1 MB all-reduce loop with GPU timing on and off (figures, not asserted).
# Finally (3) records under NCCL's profiler plugin (`dltrace record --nccl
# profiler`) with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING and checks that the
# algorithm, protocol and channels the plugin recorded for every collective
# equal the ones NCCL logged (tests/nccl/gpu/check_nccl_choices.py):
#   - tests/nccl/gpu/nccl_sweep.cc, an nccl-tests-shaped sweep (8 B to 256 MB,
#     four collectives) over 2 and 4 processes that NCCL takes for as many
#     nodes, so one GPU is enough;
#   - nccl-tests itself (NCCL_TESTS = its build directory, or
#     all_reduce_perf on PATH): one process driving every GPU, or, with one
#     GPU, built with MPI=1 and run as 2 MPI processes that NCCL takes for
#     2 nodes.
# Needs NCCL >= 2.23 for (3). Every part runs even if an earlier one failed;
# the script exits non-zero if any did.
#
# usage: scripts/gpu-check.sh [BUILD_DIR]
#   CUDA_HOME  CUDA (default: /usr/local/cuda, else the one nvcc is in)
#   NCCL_HOME  NCCL's include/ and lib/ (default: next to CUDA, /usr, or
#              the nvidia-nccl Python package PyTorch uses)
#   DLTRACE_GPU_CHECK_PREBUILT=1  take BUILD_DIR as it is (built elsewhere)
#   DLTRACE_GPU_CHECK_KEEP=DIR    copy every part's logs and traces into DIR
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
steps=3
keep=${DLTRACE_GPU_CHECK_KEEP:-}  # a folder to copy the logs and traces into
work=$(mktemp -d /tmp/dltrace-gpu-check-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Inside a part, fail ends that part; outside, the whole check.
fail() { echo "gpu-check: FAIL: $*" >&2; exit 1; }
say() { echo "gpu-check: $*"; }
failed=()
part() {  # part NAME FUNCTION: runs it with set -e in a subshell, notes a failure
  say "$1"
  (set -e; "$2"); local rc=$?
  [ $rc -eq 0 ] || failed+=("$1")
  if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$work"/. "$keep"/ 2>/dev/null; fi
  return 0
}

# ---- what this machine has
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found (no NVIDIA driver)"
ngpu=$(nvidia-smi -L | grep -c '^GPU' || true)
[ "$ngpu" -ge 1 ] || fail "no GPU listed by nvidia-smi -L"
nvidia-smi -L
python3 -c 'import torch, torchvision; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' \
  || fail "PyTorch with CUDA and torchvision are needed"
command -v torchrun >/dev/null || fail "torchrun not found"

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda_runtime.h" ] && command -v nvcc >/dev/null; then
  cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
[ -f "$cuda/include/cuda_runtime.h" ] || fail "CUDA not found (set CUDA_HOME)"
cudalibs=()
for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib"; do
  [ -d "$d" ] && cudalibs+=(-L"$d" -Wl,-rpath,"$d")
done

# NCCL: NCCL_HOME, next to CUDA, the system's, or the nvidia-nccl package of
# the Python that holds PyTorch.
nccl_inc="" nccl_lib=""
homes=(${NCCL_HOME:+"$NCCL_HOME"} "$cuda" /usr)
pynv=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null || true)
if [ -n "$pynv" ]; then
  while read -r h; do homes+=("$(dirname "$(dirname "$h")")"); done < <(find "$pynv" -name nccl.h -path '*/include/*' 2>/dev/null)
fi
for h in "${homes[@]}"; do
  [ -f "$h/include/nccl.h" ] || continue
  for f in "$h"/lib64/libnccl.so "$h"/lib/libnccl.so "$h"/lib/libnccl.so.2 "$h"/lib64/libnccl.so.2 \
           /usr/lib/x86_64-linux-gnu/libnccl.so /usr/lib/x86_64-linux-gnu/libnccl.so.2; do
    [ -e "$f" ] && nccl_inc=$h/include && nccl_lib=$f && break 2
  done
done
[ -n "$nccl_lib" ] || fail "NCCL not found (nccl.h and libnccl.so; set NCCL_HOME)"
nccl_version=$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{v[$2]=$3} END {print v["NCCL_MAJOR"] "." v["NCCL_MINOR"] "." v["NCCL_PATCH"]}' "$nccl_inc/nccl.h")
say "CUDA at $cuda; NCCL $nccl_version: $nccl_inc, $nccl_lib"
build_program() {  # build_program NAME: tests/nccl/gpu/NAME.cc against this NCCL and CUDA
  "${CXX:-g++}" -O2 -std=c++17 "$root/tests/nccl/gpu/$1.cc" -I"$nccl_inc" -I"$cuda/include" \
    "$nccl_lib" -Wl,-rpath,"$(dirname "$nccl_lib")" "${cudalibs[@]}" -lcudart -o "$work/$1" \
    || fail "cannot build tests/nccl/gpu/$1.cc"
}

if [ "${DLTRACE_GPU_CHECK_PREBUILT:-0}" = 1 ]; then
  say "taking the build in $build as it is"
else
  say "building into $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null || fail "cmake configure"
  cmake --build "$build" -j "$(nproc)" --target dltrace dltrace-record dltrace-nccl-profiler >/dev/null \
    || fail "cmake build"
fi
dltrace=$build/cli/dltrace
"$dltrace" --version || fail "$dltrace does not run"

world1() {
  build_program nccl_world1
  "$work/nccl_world1" >"$work/world1.plain" || fail "nccl_world1 failed without the recorder"
  "$dltrace" record -o "$work/world1" -- "$work/nccl_world1" >"$work/world1.recorded" \
    || fail "nccl_world1 failed under dltrace record"
  diff -u "$work/world1.plain" "$work/world1.recorded" || fail "nccl_world1's output changed when recorded"
  python3 "$root/tests/nccl/gpu/check_gpu_trace.py" --dltrace "$dltrace" world1 "$work/world1" \
    || fail "world1 trace"
}

ddp() {
  export CUBLAS_WORKSPACE_CONFIG=:4096:8
  local cmd=(torchrun --standalone --nproc_per_node="$ngpu" "$root/tests/nccl/gpu/ddp_resnet50.py" --steps "$steps")
  "${cmd[@]}" >"$work/ddp.plain" || fail "DDP training failed without the recorder"
  "$dltrace" record -o "$work/ddp" -- "${cmd[@]}" >"$work/ddp.recorded" || fail "DDP training failed under dltrace record"
  cat "$work/ddp.recorded"
  diff -u "$work/ddp.plain" "$work/ddp.recorded" || fail "the training's output changed when recorded"
  local files
  files=$(ls "$work/ddp" | grep -c '\.dltrace$' || true)
  [ "$files" -eq "$ngpu" ] || fail "$files trace files for $ngpu ranks (torchrun's agent must leave none)"
  python3 "$root/tests/nccl/gpu/check_gpu_trace.py" --dltrace "$dltrace" ddp "$work/ddp" --steps "$steps" \
    || fail "DDP trace"
  "$dltrace" info "$work/ddp" | head -30
}

bench() {
  [ -x "$work/nccl_world1" ] || build_program nccl_world1
  median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  local variant i plain v
  for variant in plain off on; do
    for i in 1 2 3 4 5; do
      case $variant in
        plain) "$work/nccl_world1" --loop 2000 ;;
        off) DLTRACE_GPU_TIMING=0 DLTRACE_QUIET=1 LD_PRELOAD=$build/record/libdltrace-record.so \
               DLTRACE_OUTPUT=$work/bench/%p "$work/nccl_world1" --loop 2000 ;;
        on) DLTRACE_GPU_TIMING=1 DLTRACE_QUIET=1 LD_PRELOAD=$build/record/libdltrace-record.so \
              DLTRACE_OUTPUT=$work/bench/%p "$work/nccl_world1" --loop 2000 ;;
      esac
    done | median >"$work/bench.$variant"
  done
  rm -rf "$work/bench"
  plain=$(cat "$work/bench.plain")
  for variant in off on; do
    v=$(cat "$work/bench.$variant")
    awk -v p="$plain" -v v="$v" -v n="$variant" \
      'BEGIN {printf "  GPU timing %-3s %8.3f us/call vs %8.3f without the recorder: %+.2f%%\n", n, v, p, 100 * (v - p) / p}'
  done
}

# Records NAME's command under the profiler plugin with NCCL's TUNING lines on
# (one log file per process: lines of processes sharing a stdout interleave)
# and compares the two.
choices() {
  local name=$1; shift
  mkdir -p "$work/$name.nccl"
  env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING NCCL_DEBUG_FILE="$work/$name.nccl/%h.%p.log" \
    "$dltrace" record --nccl profiler -o "$work/$name" -- "$@" >"$work/$name.log" 2>&1 \
    || { tail -20 "$work/$name.log"; fail "$name failed under the profiler plugin"; }
  python3 "$root/tests/nccl/gpu/check_nccl_choices.py" --dltrace "$dltrace" "$work/$name" "$work/$name.nccl"/*.log \
    || fail "$name: the plugin's recorded choices differ from NCCL's log"
  "$dltrace" schedule "$work/$name" --algo nccl --no-steps | grep -m 5 -E "recorded\)$" || true
}

profiler() {
  case $nccl_version in 2.1[0-9].*|2.2[0-2].*) fail "NCCL $nccl_version has no profiler plugin API (2.23 or later)" ;; esac
  build_program nccl_sweep
  local n t tests_dir bad=0
  for n in 2 4; do
    say "  nccl_sweep over $n processes as $n nodes"
    (NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} choices "sweep$n" "$work/nccl_sweep" "$n") || bad=1
  done
  tests_dir=${NCCL_TESTS:-}
  if [ -z "$tests_dir" ] && command -v all_reduce_perf >/dev/null; then
    tests_dir=$(dirname "$(command -v all_reduce_perf)")
  fi
  if [ -z "$tests_dir" ] || [ ! -x "$tests_dir/all_reduce_perf" ]; then
    say "  nccl-tests: skipped (not found: set NCCL_TESTS to its build directory)"
    return $bad
  fi
  local launch=()
  if [ "$ngpu" -lt 2 ]; then
    # One GPU: two MPI processes as two nodes on it, as nccl_sweep does
    # (nccl-tests built with MPI=1; NCCL_TESTS_DEVICE puts both on GPU 0).
    command -v mpirun >/dev/null || { say "  nccl-tests: skipped (one GPU and no mpirun)"; return $bad; }
    printf '%s\n' '#!/bin/sh' \
      'export NCCL_HOSTID=dltrace-node-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} NCCL_TESTS_DEVICE=0' \
      'exec "$@"' >"$work/as_node.sh"
    chmod +x "$work/as_node.sh"
    launch=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_IB_DISABLE=1
            NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}" mpirun -np 2 "$work/as_node.sh")
  fi
  for t in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf; do
    [ -x "$tests_dir/$t" ] || continue
    # One process driving every GPU (-g), or one per node on one GPU: the
    # check takes communicator rank 0's operations, the rank that prints
    # NCCL's TUNING lines.
    say "  nccl-tests $t"
    (choices "$t" "${launch[@]}" "$tests_dir/$t" -b 8 -e 256M -f 4 -g "$(( ngpu < 2 ? 1 : ngpu ))" -n 2 -w 1) || bad=1
  done
  return $bad
}

part "1/3 CUDA + NCCL program, world size 1" world1
part "2/3 PyTorch DDP ResNet-50, $steps steps, torchrun --nproc_per_node=$ngpu" ddp
part "benchmark: 1 MB all-reduce loop, microseconds per call (medians of 5)" bench
part "3/3 NCCL's profiler plugin: recorded choices against NCCL's TUNING lines" profiler
if [ ${#failed[@]} -gt 0 ]; then
  printf 'gpu-check: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
say "PASS"
