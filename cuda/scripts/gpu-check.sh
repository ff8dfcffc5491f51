#!/usr/bin/env bash
# gpu-check.sh: the GPU machine's part of cuda/'s checks, in one command. It runs what was
# built beforehand on a development machine (the GPU machine has no Go toolchain), with no
# cgo, no CUDA headers and no build tag (the binaries open libcuda.so.1 at run time):
#
#   CGO_ENABLED=0 go test -c -ldflags='-s -w' -o .devbin/cuda.test ./cuda
#   CGO_ENABLED=0 go build -ldflags='-s -w' -o .devbin/attnbench ./cuda/cmd/attnbench
#   CGO_ENABLED=0 go test -c -ldflags='-s -w' -o .devbin/ops-softmax.test ./ops/softmax      (optional,
#   CGO_ENABLED=0 go test -c -ldflags='-s -w' -o .devbin/ops-attention.test ./ops/attention   likewise any
#                                                                         package's tests)
#
# and writes every log under $OUT (default ./out), printing a short summary last:
#   1. the tools: nvidia-smi, compute-sanitizer, PyTorch; CUDA 12+ ptxas on the sm_90a PTX;
#   2. the cuda test binary (every kernel against float64 references, gradient checks,
#      determinism over 50 runs, errors, memory, concurrency, device selection; Buffers,
#      cuBLAS and the nn kernels);
#   3. compute-sanitizer memcheck, racecheck and initcheck on the small test grid, and memcheck
#      and racecheck on the nn kernels' tests, with the allocator's cache off
#      (FLASHGORGON_CUDA_POOL=off) so every buffer has its exact size;
#   4. every other .devbin/<dir>-<pkg>.test: that package's whole test suite, its ops running
#      on the device (package directory dir/pkg);
#   5. the benchmark table (ours vs PyTorch SDPA), unless SKIP_BENCH=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-out}
mkdir -p "$out"
bin=.devbin
summary=()
note() { summary+=("$1"); }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
  nvcc --version | tail -2
  command -v compute-sanitizer && compute-sanitizer --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
} >"$out/tools.log" 2>&1
note "tools: $(head -1 "$out/tools.log"); $(grep -m1 ^torch "$out/tools.log" || echo 'no torch')"

# The sm_90a PTX (made by nvcc 11.8, which does not check it) through a CUDA 12+ ptxas, where
# there is one: errors, registers, spills, wgmma serialization (scripts/ptxas-hopper.sh).
if [ -x "${PTXAS:-/usr/local/cuda/bin/ptxas}" ]; then
  (cd cuda && scripts/ptxas-hopper.sh) >"$out/ptxas-hopper.log" 2>&1
  note "ptxas sm_90a: rc=$?, $(grep -c serialized "$out/ptxas-hopper.log") serialization warnings, $(grep -c 'error' "$out/ptxas-hopper.log") error lines"
fi

if [ -x "$bin/cuda.test" ]; then
  testbin=$PWD/$bin/cuda.test  # run from cuda/, the package directory, as go test does
  start=$(date +%s)
  (cd cuda && timeout ${TEST_TIMEOUT:-330} "$testbin" -test.v -test.count=1 ${TEST_RUN:+-test.run "$TEST_RUN"}) >"$out/tests.log" 2>&1
  rc=$?
  pass=$(grep -c -- '--- PASS' "$out/tests.log"); fail=$(grep -c -- '--- FAIL' "$out/tests.log"); skip=$(grep -c -- '--- SKIP' "$out/tests.log")
  note "tests: rc=$rc, $pass passed, $fail failed, $skip skipped, $(( $(date +%s) - start ))s"
  grep -- '--- FAIL' "$out/tests.log" | head -20 | while read -r l; do echo "  $l"; done >"$out/failures.txt"
  if [ "${SKIP_SANITIZER:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
    filter='^(TestSoftmaxDevice|TestAttentionDevice)$/^small/'
    for tool in memcheck racecheck initcheck; do
      start=$(date +%s)
      FLASHGORGON_CUDA_POOL=off timeout ${SANITIZER_TIMEOUT:-150} compute-sanitizer --tool "$tool" --error-exitcode 3 \
        "$testbin" -test.v -test.run "$filter" -test.count=1 >"$out/sanitizer-$tool.log" 2>&1
      rc=$?
      note "compute-sanitizer $tool: rc=$rc, $(grep -c -- '    --- PASS' "$out/sanitizer-$tool.log") subtests passed, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.log" | tail -1), $(( $(date +%s) - start ))s"
    done
    # The nn kernels on Buffers (the out-of-memory subtest's failed allocation is on purpose).
    nnfilter='^(TestBufferDevice|TestElementwiseDevice|TestAffineDevice|TestColSumDevice|TestEmbeddingDevice|TestNormDevice|TestCrossEntropyDevice|TestAdamWDevice|TestGradNormClipDevice|TestDropoutDevice|TestSoftmaxBuffersDevice|TestNNDeterminism|TestParamGroupDevice)$'
    for tool in memcheck racecheck; do
      start=$(date +%s)
      FLASHGORGON_CUDA_POOL=off timeout ${SANITIZER_TIMEOUT:-150} compute-sanitizer --tool "$tool" --error-exitcode 3 \
        "$testbin" -test.v -test.run "$nnfilter" -test.skip 'TestBufferDevice/out_of_memory' -test.count=1 >"$out/sanitizer-nn-$tool.log" 2>&1
      rc=$?
      note "compute-sanitizer $tool (nn kernels): rc=$rc, $(grep -c -- '    --- PASS' "$out/sanitizer-nn-$tool.log") subtests passed, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-nn-$tool.log" | tail -1), $(( $(date +%s) - start ))s"
    done
  fi
else
  note "tests: $bin/cuda.test missing"
fi

for tb in "$bin"/*-*.test; do
  [ -x "$tb" ] || continue
  name=$(basename "$tb" .test)
  dir=${name/-//}
  start=$(date +%s)
  abs=$PWD/$tb  # the binary runs from its package directory, as go test does
  (cd "$dir" && timeout ${TEST_TIMEOUT:-330} "$abs" -test.v -test.count=1) >"$out/tests-$name.log" 2>&1
  rc=$?
  note "$dir tests on the device: rc=$rc, $(grep -c -- '--- PASS' "$out/tests-$name.log") passed, $(grep -c -- '--- FAIL' "$out/tests-$name.log") failed, $(grep -c -- '--- SKIP' "$out/tests-$name.log") skipped, $(( $(date +%s) - start ))s"
  grep -- '--- FAIL' "$out/tests-$name.log" | head -10 | while read -r l; do echo "  $dir: $l"; done >>"$out/failures.txt"
done

if [ "${SKIP_BENCH:-0}" != 1 ] && [ -x "$bin/attnbench" ]; then
  start=$(date +%s)
  "$bin/attnbench" -torch cuda/cmd/attnbench/sdpa_bench.py ${BENCH_ARGS:-} >"$out/bench.log" 2>&1
  note "bench: rc=$?, $(( $(date +%s) - start ))s (table in bench.log)"
fi

{
  echo "==== summary"
  for s in "${summary[@]}"; do echo "$s"; done
  [ -s "$out/failures.txt" ] && cat "$out/failures.txt"
} >"$out/summary.txt"
# Everything but the summary and the benchmark table travels as one archive (the device tool
# brings back at most 8 files).
(cd "$out" && tar czf logs.tar.gz --exclude logs.tar.gz --exclude summary.txt --exclude bench.log ./*.log ./*.txt && \
  find . -maxdepth 1 -type f ! -name logs.tar.gz ! -name summary.txt ! -name bench.log -delete)
cat "$out/summary.txt"
exit 0
