#!/usr/bin/env bash
# cpu-bench.sh: the CPU speed table of issue 9 in one command, side by side in one run on one
# machine: the machine's float32 FMA peak and streaming bandwidth (shared/tools/peak.c), our
# fused attention and softmax (cmd/cpubench) and, where Python has PyTorch, PyTorch's CPU SDPA
# (FLASH and MATH backends) at the same thread counts.
#
#   scripts/cpu-bench.sh [THREADS]            # THREADS default "2"; e.g. "2,16"
#
# Environment: CPUBENCH names a prebuilt cpubench binary (the GPU machine has no Go: build it
# elsewhere with `go build -o .devbin/cpubench ./cmd/cpubench`); PEAK_SRC the peak.c to use
# (default ../shared/tools/peak.c); OUT the folder for the log (default out/cpu-bench); SHAPES,
# when set, replaces BenchmarkAttention's five shapes (cpubench -shapes: "B,H,N,d,causal;…", e.g.
# examples/gpt's "32,8,64,32,1;32,4,64,16,1;16,8,256,32,1").
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
out=${OUT:-out/cpu-bench}
mkdir -p "$out"
log="$out/cpu-bench.log"
: >"$log"

peak_src=${PEAK_SRC:-../shared/tools/peak.c}
if command -v gcc >/dev/null && [ -f "$peak_src" ]; then
  gcc -O2 -mavx2 -mfma -o "$out/peak" "$peak_src" -lpthread
  for t in ${threads//,/ }; do
    echo "## peak.c at $t threads" >>"$log"
    "$out/peak" "$t" >>"$log" 2>&1 || echo "peak failed" >>"$log"
    echo >>"$log"
  done
else
  echo "(no gcc or no $peak_src: FMA peak and bandwidth not measured)" >>"$log"
fi

bin=${CPUBENCH:-}
if [ -z "$bin" ]; then
  bin="$out/cpubench"
  go build -o "$bin" ./cmd/cpubench
fi
torch=()
if python3 -c 'import torch' 2>/dev/null; then
  torch=(-torch cmd/cpubench/sdpa_cpu.py)
else
  echo "(python3 has no torch: PyTorch columns empty)" >>"$log"
fi
shapes=()
if [ -n "${SHAPES:-}" ]; then
  shapes=(-shapes "$SHAPES")
fi
FLASHGORGON_DEVICE=cpu "$bin" -threads "$threads" "${torch[@]}" "${shapes[@]}" >>"$log" 2>&1
cat "$log"
