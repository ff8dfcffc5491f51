#!/bin/bash
# Eleventh session, call J: the review's mends (behaviour unchanged: FgItem::block replaces
# FgQBlock in the bulk kernels and variant 24, variant 25's producer calls FgRing::load_head,
# Go's planeKeys); ptxas on the bulk and exact modules; the forward's device tests (every
# variant), the masked-keys and kept-planes tests; v24 and v25 Exact and TF32 at d = 128, one round.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s11j; O=${OUT:-/tmp/out}/s11j; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
for m in attention_hopper_exact attention_hopper_bulk; do
  (cd $R/cuda && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/$m.ptx -o /dev/null) >$O/ptxas-$m.log 2>&1
done
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionKeptPlanes|TestPickMMA|TestForwardScratch') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >$O/tools.log
for v in 24 25; do
  (cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d128/.*/.*/(exact|tf32)/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' >>$O/fwd.log
done
cat $O/tools.log; grep -- '--- FAIL' $O/cuda.log | head
grep -hE "C75|spill" $O/ptxas-*.log | sort | uniq -c
awk '{print $1, $(NF-1)}' $O/fwd.log
