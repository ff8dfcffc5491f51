#!/bin/bash
# gpubwd helper: one device call (`bash .devbin/gpubwd/run.sh` from the repository root).
# Unpacks the binaries and this branch's kernels and PTX, then: ptxas -v of the backward
# module (CUDA 13), the backward tests, memcheck on the short grid, the backward timing (old
# vs new kernels side by side), a diagnostic of the gradient error at N = 4096 causal,
# attnbench -prec bf16, racecheck on the short grid. Each step has its own timeout; the logs
# go straight to $OUT (at most 8 files come back).
set -u
ROOT=$PWD
B=$ROOT/.devbin/gpubwd
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export CUDA_CACHE_MAXSIZE=4294967296
cd "$B" && for f in cuda.test attnbench; do xz -dkf $f.xz && chmod +x $f; done
mkdir -p "$B/tree" && tar -C "$B/tree" -xzf "$B/tree.tgz"
T=$B/tree/cuda
NV=/usr/local/cuda/bin
sum() { echo "$*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/summary.txt" 2>&1
s=$(date +%s)
{ $NV/ptxas --version; timeout 15 $NV/ptxas -arch=sm_90 -v -o /tmp/b.cubin "$T/ptx/attention_mma_bwd.ptx"; } > "$OUT/ptxas.log" 2>&1
sum "ptxas rc=$? $(grep -c 'bytes spill stores' "$OUT/ptxas.log") kernels, $(grep 'bytes spill stores' "$OUT/ptxas.log" | grep -vc ' 0 bytes spill stores') with spills $(( $(date +%s)-s ))s"
cd "$T"
s=$(date +%s)
timeout 90 "$B/cuda.test" -test.v -test.count=1 -test.run '^(TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestPickMMABwd|TestBackwardScratch|TestAttentionBwdEmulFA2)$' > "$OUT/tests.log" 2>&1
sum "tests rc=$? $(grep -c -- '--- PASS' "$OUT/tests.log") pass $(grep -c -- '--- FAIL' "$OUT/tests.log") fail $(( $(date +%s)-s ))s"
s=$(date +%s)
FLASHGORGON_CUDA_POOL=off timeout 35 $NV/compute-sanitizer --tool memcheck --error-exitcode 3 "$B/cuda.test" -test.v -test.short -test.count=1 -test.run '^(TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert)$' > "$OUT/memcheck.log" 2>&1
sum "memcheck rc=$? $(grep -c -- '--- PASS' "$OUT/memcheck.log") pass $(grep -c -- '--- FAIL' "$OUT/memcheck.log") fail, $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1) $(( $(date +%s)-s ))s"
s=$(date +%s)
timeout 45 "$B/cuda.test" -test.v -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs=bf16 -mmabwd.pairs=bf16 > "$OUT/timing.log" 2>&1
sum "timing rc=$? $(( $(date +%s)-s ))s"
s=$(date +%s)
timeout 30 "$B/cuda.test" -test.v -test.count=1 -test.run '^TestAttentionMMABwdDiag$' -mmabwd.diag > "$OUT/diag.log" 2>&1
sum "diag rc=$? $(( $(date +%s)-s ))s"
cd "$ROOT"
s=$(date +%s)
timeout 80 "$B/attnbench" -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16 > "$OUT/attnbench.log" 2>&1
sum "attnbench rc=$? $(( $(date +%s)-s ))s"
cd "$T"
s=$(date +%s)
FLASHGORGON_CUDA_POOL=off timeout 50 $NV/compute-sanitizer --tool racecheck --error-exitcode 3 "$B/cuda.test" -test.v -test.short -test.count=1 -test.run '^TestAttentionMMABwdDevice$' > "$OUT/racecheck.log" 2>&1
sum "racecheck rc=$? $(grep -c -- '--- PASS' "$OUT/racecheck.log") pass $(grep -c -- '--- FAIL' "$OUT/racecheck.log") fail, $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1) $(( $(date +%s)-s ))s"
