#!/bin/bash
# Seventeenth session, call K (main after the review mends: the hinted loads, stores and bulk
# copies as options of fg_ld4, fg_st2 and fg_bulk_load, fg_key_length in the converters;
# attnbench's timing loops as one helper): the forward's device tests on variants 22 and 38,
# TestPickMMA, memcheck on the forward's masked keys (v38), one round of BenchmarkAttentionMMA
# (v22, v38) at N = 1024, attnbench -prec bf16 -n 1024.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17k; O=${OUT:-/tmp/out}/s17k; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mma.only '_v(22|38)_' -test.run 'TestPickMMA|TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch|TestAttentionMMADeterminism|TestKeptLayout|TestAttentionKeptPlanes') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head >>$O/tools.log
(cd $R/cuda && timeout 120 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -mma.only '_v38_' -test.run '^TestAttentionMMAMaskedKeysInert$') >$O/memcheck.log 2>&1
echo "memcheck rc=$? pass=$(grep -c -- '--- PASS' $O/memcheck.log) fail=$(grep -c -- '--- FAIL' $O/memcheck.log) $(grep -E 'ERROR SUMMARY' $O/memcheck.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log
(cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n1024/.*/bf16/v(22|38)/' -test.benchtime 20x) >$O/bench.log 2>&1
echo "bench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
(cd $R && timeout 200 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16 -n 1024 -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attnbench
cat $O/tools.log
grep -E "^Benchmark" $O/bench.log | awk '{print $1, $3/1e6}'
grep -E "^ours.*bf16" $O/attnbench.log | sed -E 's/err O.*\(/(/' | cut -c1-160
sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench.log
