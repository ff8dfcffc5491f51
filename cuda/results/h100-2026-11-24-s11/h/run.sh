#!/bin/bash
# Eleventh session, call H: variant 26 (variant 25 with chains of 4 k steps: 32 head columns,
# 32 keys); ptxas; the forward's device tests (every variant: the error ratios of 26 beside 25's)
# and the masked-keys test; v25 and v26 Exact alternating at both d, three rounds.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s11i; O=${OUT:-/tmp/out}/s11i; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
(cd $R/cuda && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/attention_hopper_exact.ptx -o /dev/null) >$O/ptxas.log 2>&1
(cd $R/cuda && timeout 200 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >$O/tools.log
for r in 1 2 3; do
  for v in 25 26; do
    (cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d(64|128)/.*/.*/exact/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' | sed "s/^/r$r /" >>$O/fwd.log
  done
done
echo "bench $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log; grep -- '--- FAIL' $O/cuda.log | head
grep -E "Compiling|spill|C75" $O/ptxas.log | grep -A1 "v26\|v25_exact" | grep -v "^--"
grep -E "exact v2[56]" $O/cuda.log | sed 's/.*exact/exact/' | awk '{print $1, $2, $9, $10, $16, $17}' | paste - - | head -20
