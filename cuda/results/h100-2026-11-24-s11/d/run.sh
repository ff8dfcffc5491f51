#!/bin/bash
# Eleventh session, call D: variant 24's pre-pass writing V^T in 64-byte pieces (four lanes a
# column); the forward's device tests and the masked-keys test; BenchmarkAttentionPrep (every
# forward pre-pass alone, GB/s), two rounds; BenchmarkAttentionMMA v24 Exact and TF32, one round.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s11d; O=${OUT:-/tmp/out}/s11d; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestPickMMA|TestForwardScratch') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
for r in 1 2; do
  (cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench "AttentionPrep" -test.benchtime 20x) 2>&1 | grep -E '^Benchmark' | sed "s/^/r$r /" >>$O/prep.log
done
(cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d(64|128)/.*/.*/(exact|tf32)/^v24\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' >>$O/fwd.log
echo "bench $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log; grep -- '--- FAIL' $O/cuda.log | head; awk '{print $1, $2, $(NF-1), $NF}' $O/prep.log; awk '{print $1, $(NF-3), $(NF-2), $(NF-1), $NF}' $O/fwd.log
