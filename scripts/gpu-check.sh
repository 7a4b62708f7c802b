#!/usr/bin/env bash
# The real GPU check of the NCCL recorder, for a machine with an NVIDIA GPU,
# CUDA, NCCL and PyTorch + torchvision. Builds the project, then records under
# `dltrace record`: (1) a small CUDA + NCCL program of our own on one GPU that
# calls every collective and send/recv, and (2) a few steps of PyTorch DDP
# training of ResNet-50 under torchrun, one process per GPU. Checks that the
# programs' output is unchanged by recording, that every NCCL operation has
# GPU start/end times inside the host time span, and that one step's
# all-reduce bytes sum to ResNet-50's gradient. Then prints the slowdown of a
# 1 MB all-reduce loop with GPU timing on and off (figures, not asserted).
# Finally (3) runs nccl-tests under NCCL's profiler plugin (`dltrace record
# --nccl profiler`) with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING and checks
# that the algorithm, protocol and channels the plugin recorded for every
# collective equal the ones NCCL logged (tests/nccl/gpu/check_nccl_choices.py);
# needs NCCL >= 2.23 and nccl-tests (NCCL_TESTS = its build directory, or
# all_reduce_perf on PATH). Exits non-zero on the first failed check.
#
# usage: scripts/gpu-check.sh [BUILD_DIR]      (CUDA_HOME defaults to /usr/local/cuda)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
steps=3
work=$(mktemp -d /tmp/dltrace-gpu-check-XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() { echo "gpu-check: FAIL: $*" >&2; exit 1; }
say() { echo "gpu-check: $*"; }

command -v nvidia-smi >/dev/null || fail "nvidia-smi not found (no NVIDIA driver)"
ngpu=$(nvidia-smi -L | grep -c '^GPU' || true)
[ "$ngpu" -ge 1 ] || fail "no GPU listed by nvidia-smi -L"
nvidia-smi -L
python3 -c 'import torch, torchvision; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' \
  || fail "PyTorch with CUDA and torchvision are needed"
command -v torchrun >/dev/null || fail "torchrun not found"

say "building into $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target dltrace dltrace-record dltrace-nccl-profiler >/dev/null
dltrace=$build/cli/dltrace

# The one-rank program, against the system's NCCL.
inc=""
for d in "$cuda/include" /usr/include; do [ -f "$d/nccl.h" ] && inc=$d && break; done
[ -n "$inc" ] || fail "nccl.h not found in $cuda/include or /usr/include"
libdir=""
for d in "$cuda/lib64" "$cuda/lib" /usr/lib/x86_64-linux-gnu; do
  [ -e "$d/libnccl.so" ] || [ -e "$d/libnccl.so.2" ] || continue
  libdir=$d && break
done
[ -n "$libdir" ] || fail "libnccl.so not found next to CUDA"
cudalib=$cuda/lib64; [ -d "$cudalib" ] || cudalib=$cuda/lib
g++ -O2 -std=c++17 "$root/tests/nccl/gpu/nccl_world1.cc" -I"$inc" -I"$cuda/include" \
  -L"$libdir" -L"$cudalib" -Wl,-rpath,"$libdir" -Wl,-rpath,"$cudalib" -lnccl -lcudart \
  -o "$work/nccl_world1" || fail "cannot build tests/nccl/gpu/nccl_world1.cc"

say "1/3 CUDA + NCCL program, world size 1"
"$work/nccl_world1" >"$work/world1.plain" || fail "nccl_world1 failed without the recorder"
"$dltrace" record -o "$work/world1" -- "$work/nccl_world1" >"$work/world1.recorded" \
  || fail "nccl_world1 failed under dltrace record"
diff -u "$work/world1.plain" "$work/world1.recorded" || fail "nccl_world1's output changed when recorded"
python3 "$root/tests/nccl/gpu/check_gpu_trace.py" --dltrace "$dltrace" world1 "$work/world1" \
  || fail "world1 trace"

say "2/3 PyTorch DDP ResNet-50, $steps steps, torchrun --nproc_per_node=$ngpu"
export CUBLAS_WORKSPACE_CONFIG=:4096:8
ddp=(torchrun --standalone --nproc_per_node="$ngpu" "$root/tests/nccl/gpu/ddp_resnet50.py" --steps "$steps")
"${ddp[@]}" >"$work/ddp.plain" || fail "DDP training failed without the recorder"
"$dltrace" record -o "$work/ddp" -- "${ddp[@]}" >"$work/ddp.recorded" || fail "DDP training failed under dltrace record"
cat "$work/ddp.recorded"
diff -u "$work/ddp.plain" "$work/ddp.recorded" || fail "the training's output changed when recorded"
files=$(ls "$work/ddp" | grep -c '\.dltrace$' || true)
[ "$files" -eq "$ngpu" ] || fail "$files trace files for $ngpu ranks (torchrun's agent must leave none)"
python3 "$root/tests/nccl/gpu/check_gpu_trace.py" --dltrace "$dltrace" ddp "$work/ddp" --steps "$steps" \
  || fail "DDP trace"
"$dltrace" info "$work/ddp" | head -30

say "benchmark: 1 MB all-reduce loop, microseconds per call (medians of 5)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
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
plain=$(cat "$work/bench.plain")
for variant in off on; do
  v=$(cat "$work/bench.$variant")
  awk -v p="$plain" -v v="$v" -v n="$variant" \
    'BEGIN {printf "  GPU timing %-3s %8.3f us/call vs %8.3f without the recorder: %+.2f%%\n", n, v, p, 100 * (v - p) / p}'
done
say "3/3 nccl-tests under the profiler plugin: recorded choices against NCCL's TUNING lines"
tests_dir=${NCCL_TESTS:-}
if [ -z "$tests_dir" ] && command -v all_reduce_perf >/dev/null; then
  tests_dir=$(dirname "$(command -v all_reduce_perf)")
fi
[ -n "$tests_dir" ] && [ -x "$tests_dir/all_reduce_perf" ] \
  || fail "nccl-tests not found: set NCCL_TESTS to its build directory (make MPI=0 NCCL_HOME=...)"
for t in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf; do
  [ -x "$tests_dir/$t" ] || continue
  # One process driving every GPU (-g): the plugin's file holds all of its
  # communicators; the check takes communicator rank 0's operations, the
  # rank that prints NCCL's TUNING lines.
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING "$dltrace" record --nccl profiler -o "$work/$t" -- \
    "$tests_dir/$t" -b 8 -e 256M -f 4 -g "$ngpu" -n 2 -w 1 >"$work/$t.log" 2>&1 \
    || { tail -20 "$work/$t.log"; fail "$t failed under the profiler plugin"; }
  python3 "$root/tests/nccl/gpu/check_nccl_choices.py" --dltrace "$dltrace" "$work/$t" "$work/$t.log" \
    || fail "$t: the plugin's recorded choices differ from NCCL's log"
  "$dltrace" schedule "$work/$t" --algo nccl --no-steps | grep -m 5 -E "recorded\)$" || true
done
say "PASS"
