#!/usr/bin/env bash
# cudann's device check: the cuda test binary (Buffers, cuBLAS, nn kernels and the existing
# suite), the benchmarks, compute-sanitizer memcheck and racecheck on the nn kernels.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
work=$(mktemp -d)
gunzip -c "$here/cuda.test.gz" >"$work/cuda.test" && chmod +x "$work/cuda.test"
mkdir -p "$work/cuda" && tar xzf "$here/src.tgz" -C "$work/cuda"
cd "$work/cuda"
san=/usr/local/cuda/bin/compute-sanitizer
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  ldconfig -p | grep -i cublas
  ls /usr/local/cuda/lib64 2>/dev/null | grep -i cublas
  $san --version | tail -1
} >"$out/tools.log" 2>&1
s=$(date +%s)
timeout ${TEST_TIMEOUT:-150} ../cuda.test -test.v -test.count=1 ${TEST_RUN:+-test.run "$TEST_RUN"} >"$out/tests.log" 2>&1
echo "tests: rc=$? $(grep -c -- '--- PASS' "$out/tests.log") pass, $(grep -c -- '--- FAIL' "$out/tests.log") fail, $(grep -c -- '--- SKIP' "$out/tests.log") skip, $(( $(date +%s) - s ))s" >>"$out/summary.txt"
grep -- '--- FAIL' "$out/tests.log" | head -40 >>"$out/summary.txt"
s=$(date +%s)
timeout ${BENCH_TIMEOUT:-60} ../cuda.test -test.run XXX -test.bench "${BENCH:-Sgemm|NN|OptimizerStep}" -test.benchtime 10x >"$out/bench.log" 2>&1
echo "bench: rc=$? $(( $(date +%s) - s ))s" >>"$out/summary.txt"
grep -E 'TFLOP|GB/s' "$out/bench.log" >>"$out/summary.txt"
nnre='^(TestBufferDevice|TestElementwiseDevice|TestAffineDevice|TestColSumDevice|TestEmbeddingDevice|TestNormDevice|TestCrossEntropyDevice|TestAdamWDevice|TestGradNormClipDevice|TestDropoutDevice|TestSoftmaxBuffersDevice|TestNNDeterminism|TestParamGroupDevice)$'
s=$(date +%s)
FLASHGORGON_CUDA_POOL=off timeout ${MEMCHECK_TIMEOUT:-80} $san --tool memcheck --error-exitcode 3 ../cuda.test -test.v -test.count=1 -test.run "$nnre" -test.skip TestBufferDevice/out_of_memory >"$out/memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep -c -- '--- PASS' "$out/memcheck.log") pass, $(grep -c -- '--- FAIL' "$out/memcheck.log") fail, $(grep 'ERROR SUMMARY' "$out/memcheck.log" | tail -1), $(( $(date +%s) - s ))s" >>"$out/summary.txt"
s=$(date +%s)
timeout ${RACECHECK_TIMEOUT:-60} $san --tool racecheck --error-exitcode 3 ../cuda.test -test.v -test.count=1 -test.run '^(TestColSumDevice|TestEmbeddingDevice|TestCrossEntropyDevice|TestNormDevice|TestGradNormClipDevice|TestNNDeterminism|TestParamGroupDevice)$' >"$out/racecheck.log" 2>&1
echo "racecheck: rc=$? $(grep -c -- '--- PASS' "$out/racecheck.log") pass, $(grep 'RACECHECK SUMMARY' "$out/racecheck.log" | tail -1), $(( $(date +%s) - s ))s" >>"$out/summary.txt"
cat "$out/summary.txt"
