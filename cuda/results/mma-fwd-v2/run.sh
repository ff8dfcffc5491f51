#!/bin/bash
# gpu-fwd helper: tensor-core forward tests, per-variant benchmark, attnbench (one device call).
set -u
B=$PWD/.devbin/gpu-fwd
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export CUDA_CACHE_MAXSIZE=4294967296
cd "$B" && gunzip -kf cuda.test.gz attnbench.gz && chmod +x cuda.test attnbench
cd "$B/../../cuda"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/tools.log"
s=$(date +%s)
timeout ${T_TEST:-100} "$B/cuda.test" -test.v -test.count=1 -test.run "${TEST_RUN:-TestAttentionMMA|TestRoundings}" > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c -- '--- PASS' "$OUT/tests.log") pass $(grep -c -- '--- FAIL' "$OUT/tests.log") fail $(( $(date +%s)-s ))s" | tee -a "$OUT/summary.txt"
grep -E -- '--- FAIL|panic|Error' "$OUT/tests.log" | head -30
s=$(date +%s)
if [ "${BENCH:-1}" = 1 ]; then
timeout ${T_BENCH:-75} "$B/cuda.test" -test.run '^$' -test.bench "${BENCH_RUN:-BenchmarkAttentionMMA}" -test.benchtime 3x > "$OUT/bench-variants.log" 2>&1
echo "bench rc=$? $(( $(date +%s)-s ))s" | tee -a "$OUT/summary.txt"
fi
s=$(date +%s)
timeout ${T_ATTN:-100} "$B/attnbench" -torch "$B/sdpa_bench.py" ${ATTN_ARGS:-} > "$OUT/attnbench.log" 2>&1
echo "attnbench rc=$? $(( $(date +%s)-s ))s" | tee -a "$OUT/summary.txt"
tail -40 "$OUT/attnbench.log"
