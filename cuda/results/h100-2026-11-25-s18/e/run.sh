#!/bin/bash
# Eighteenth session, call E: Exact forward variants 45 and 46 (27 and 30 with the next tile's
# copy after the S' product): ptxas -v; the forward's device tests on 27, 30, 45, 46 (memcheck
# on the masked keys beside them); two rounds of BenchmarkAttentionMMA (exact, the four, every
# attnbench shape); attnbench -prec exact beside PyTorch.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18e; O=${OUT:-/tmp/out}/s18e; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/cuda/ptx && timeout 200 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -iE "C75" $O/ptxas.log | sort | uniq -c >>$O/tools.log
grep -A4 -E "Compiling entry function '.*_v(27|30|45|46)_" $O/ptxas.log | grep -E "Compiling|registers|spill" | sed 's/ptxas info    ://' >>$O/tools.log
(cd $R/cuda && timeout 200 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -mma.only '_v(45|46)_' -test.run '^TestAttentionMMAMaskedKeysInert$') >$O/memcheck.log 2>&1 &
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -mma.only '_v(27|30|45|46)_' -test.run 'TestPickMMA|TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch|TestAttentionMMADeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
wait
echo "memcheck pass=$(grep -c -- '--- PASS' $O/memcheck.log) fail=$(grep -c -- '--- FAIL' $O/memcheck.log) $(grep -E 'ERROR SUMMARY' $O/memcheck.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log
for r in 1 2; do
  left=$(( 440 - ($(date +%s)-T0) )); [ $left -lt 40 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/exact/v(27|30|45|46)/' -test.benchtime 10x) >>$O/bench.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
left=$(( 575 - ($(date +%s)-T0) ))
(cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attnbench $O/ptxas.log
cat $O/tools.log
grep -E "^Benchmark" $O/bench.log | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/exact.v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}' | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
sed -n '/| d | N | causal | /,/^$/p' $O/attnbench.log | head -16
