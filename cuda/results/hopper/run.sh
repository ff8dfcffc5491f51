#!/bin/bash
# hopper helper: one device call. Unpacks this worktree's kernels and PTX, checks the Hopper
# PTX with nvcc 13's ptxas, compiles attention_hopper.cu with nvcc 13, runs the tensor-core
# forward tests, memcheck on the short grid, the bf16 variant benchmark and attnbench.
set -u
B=$PWD/.devbin/hopper
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"
L=$OUT/logs
export CUDA_CACHE_MAXSIZE=4294967296
STEPS=${STEPS:-ptxas,tests,memcheck,bench,attnbench}
ABFLAGS=${ABFLAGS:-}
cd "$B" && for f in cuda.test attnbench; do xz -dkf $f.xz && chmod +x $f; done
mkdir -p "$B/tree" && tar -C "$B/tree" -xzf "$B/tree.tgz"
T=$B/tree/cuda
NV=/usr/local/cuda/bin
sum() { echo "$*" | tee -a "$L/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$L/gpu.txt" 2>&1
if [[ $STEPS == *ptxas* ]]; then
  s=$(date +%s)
  $NV/ptxas --version > "$L/ptxas.log" 2>&1
  rc=0
  for f in "$T"/ptx/attention_hopper*.ptx; do
    echo "== $f" >> "$L/ptxas.log"
    timeout 120 $NV/ptxas -arch=sm_90a -v -o /tmp/h.cubin "$f" >> "$L/ptxas.log" 2>&1 || rc=$?
  done
  sum "ptxas(committed PTX) rc=$rc $(( $(date +%s)-s ))s"
  s=$(date +%s)
  (cd "$T/kernels" && timeout 150 $NV/nvcc -cubin -arch=sm_90a -O3 -std=c++17 -Xptxas -v -o /tmp/h13.cubin attention_hopper.cu) > "$L/nvcc13.log" 2>&1
  sum "nvcc13 sm_90a rc=$? $(( $(date +%s)-s ))s"
fi
cd "$T"
if [ -n "${PROBE:-}" ]; then
  s=$(date +%s)
  timeout 40 "$B/cuda.test" -test.run '^$' -test.bench "$PROBE" -test.benchtime=3x > "$L/probe.log" 2>&1
  sum "probe rc=$? $(( $(date +%s)-s ))s: $(grep -c TFLOP "$L/probe.log") timed"
fi
if [[ $STEPS == *tests* ]]; then
  s=$(date +%s)
  timeout ${TESTTIME:-150} "$B/cuda.test" -test.v -test.count=1 -test.run '^(TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch|TestPickMMA|TestForwardScratch|TestAttentionMMADeterminism)$' > "$L/tests.log" 2>&1
  sum "tests rc=$? $(grep -c -- '--- PASS' "$L/tests.log") pass $(grep -c -- '--- FAIL' "$L/tests.log") fail $(( $(date +%s)-s ))s"
fi
if [[ $STEPS == *memcheck* ]]; then
  s=$(date +%s)
  FLASHGORGON_CUDA_POOL=off timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 "$B/cuda.test" -test.v -test.short -test.count=1 -test.run '^(TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert)$' > "$L/memcheck.log" 2>&1
  sum "memcheck rc=$? $(grep -c -- '--- PASS' "$L/memcheck.log") pass $(grep -c -- '--- FAIL' "$L/memcheck.log") fail, $(grep -E 'ERROR SUMMARY' "$L/memcheck.log" | tail -1) $(( $(date +%s)-s ))s"
fi
for tool in ${SANITIZERS:-}; do
  s=$(date +%s)
  FLASHGORGON_CUDA_POOL=off timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 "$B/cuda.test" -test.v -test.short -test.count=1 -test.run '^(TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert)$' > "$L/$tool.log" 2>&1
  sum "$tool rc=$? $(grep -c -- '--- PASS' "$L/$tool.log") pass $(grep -c -- '--- FAIL' "$L/$tool.log") fail, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool.log" | tail -1) $(( $(date +%s)-s ))s"
done
if [[ $STEPS == *bench* && $STEPS != *nobench* ]]; then
  s=$(date +%s)
  timeout 90 "$B/cuda.test" -test.run '^$' -test.bench "${BENCH:-AttentionMMA/.*/bf16/v(9|10|12|13)/}" -test.benchtime=3x > "$L/bench.log" 2>&1
  sum "bench rc=$? $(( $(date +%s)-s ))s"
fi
if [[ $STEPS == *attnbench* ]]; then
  s=$(date +%s)
  timeout ${ABTIME:-170} "$B/attnbench" -torch "$B/../../cuda/cmd/attnbench/sdpa_bench.py" -prec bf16 $ABFLAGS > "$L/attnbench.log" 2>&1
  sum "attnbench rc=$? $(( $(date +%s)-s ))s"
fi
tar -C "$OUT" -czf "$OUT/hopper-logs.tgz" logs && rm -rf "$L"
