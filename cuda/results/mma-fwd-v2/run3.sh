#!/bin/bash
# gpu-fwd helper, call 3: attnbench at d=128 (d=64 ran in call 2 with the same binaries),
# then compute-sanitizer memcheck and racecheck on the tensor-core forward's short test grid.
set -u
B=$PWD/.devbin/gpu-fwd
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export CUDA_CACHE_MAXSIZE=4294967296
cd "$B" && gunzip -kf cuda.test.gz attnbench.gz && chmod +x cuda.test attnbench
cd "$B/../../cuda"
s=$(date +%s)
timeout 140 "$B/attnbench" -torch "$B/sdpa_bench.py" -d 128 > "$OUT/attnbench.log" 2>&1
echo "attnbench rc=$? $(( $(date +%s)-s ))s" | tee -a "$OUT/summary.txt"
filter='^(TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch)$'
for tool in memcheck racecheck; do
  s=$(date +%s)
  FLASHGORGON_CUDA_POOL=off timeout 70 compute-sanitizer --tool $tool --error-exitcode 3 "$B/cuda.test" -test.v -test.short -test.count=1 -test.run "$filter" > "$OUT/sanitizer-$tool.log" 2>&1
  echo "$tool rc=$? $(grep -c -- '--- PASS' "$OUT/sanitizer-$tool.log") pass $(grep -c -- '--- FAIL' "$OUT/sanitizer-$tool.log") fail, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1), $(( $(date +%s)-s ))s" | tee -a "$OUT/summary.txt"
done
tail -32 "$OUT/attnbench.log"
