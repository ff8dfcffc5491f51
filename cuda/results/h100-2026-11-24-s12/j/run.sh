#!/bin/bash
# Twelfth session, call J: the review's mends (behaviour unchanged: fg_exact_load_hi, the hi A
# fragments of the Exact forward's Q and the dQ kernel's Q and dO, once; FgTf32Planes::load_kv,
# the dK/dV kernels' K and V copies, once); ptxas on both Exact modules; the forward's device
# tests (every variant), masked keys, kept planes, TestPickMMA; the Exact backward's device,
# determinism and masked-keys tests; racecheck on the backward's masked keys at d = 64; v24 and
# v25 Exact at d = 64 and 128 (BenchmarkAttentionMMA, one round); attnbench -prec exact -d 64.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s12j; O=${OUT:-/tmp/out}/s12j; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
for m in attention_hopper_exact attention_hopper_exact_bwd; do
  (cd $R/cuda && timeout 90 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/$m.ptx -o /dev/null) >$O/ptxas-$m.log 2>&1
done
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -test.run '^(TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionKeptPlanes|TestPickMMA|TestForwardScratch|TestAttentionMMABwdDevice|TestAttentionMMABwdDeterminism|TestAttentionMMABwdMaskedKeysInert)$') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >$O/tools.log
(cd $R/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool racecheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H2_Hkv1') >$O/racecheck.log 2>&1
echo "racecheck: pass=$(grep -c -- '--- PASS' $O/racecheck.log) fail=$(grep -c -- '--- FAIL' $O/racecheck.log) $(grep -E 'RACECHECK SUMMARY' $O/racecheck.log | tail -1)" >>$O/tools.log
for v in 24 25; do
  (cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d(64|128)/.*/.*/exact/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' >>$O/fwd.log
done
(cd $R && timeout 120 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -d 64 -reps 5) >$O/attnbench.log 2>&1
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log; grep -- '--- FAIL' $O/cuda.log | head
grep -hE "C75|spill" $O/ptxas-*.log | sort | uniq -c
awk '{print $1, $(NF-1)}' $O/fwd.log
sed -n '/Exact\/EFF/,/^$/p' $O/attnbench.log | head -10
