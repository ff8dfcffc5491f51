#!/bin/bash
# Eighteenth session, call G: the copies of fg_load_sw128 / fg_load_kv_sw128 with compile-time
# counts and offsets (every kernel that copies tiles by cp.async): ptxas -v of the defaults;
# the backward's and the forward's device tests on the defaults (quick check);
# TestAttentionMMABwdTiming (bf16, exact defaults) to set beside calls B and D;
# BenchmarkAttentionMMA exact v45 beside call E; attnbench bf16,exact beside PyTorch.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18g; O=${OUT:-/tmp/out}/s18g; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
for m in attention_hopper_bwd attention_hopper; do (cd $R/cuda/ptx && timeout 200 /usr/local/cuda/bin/ptxas -arch=sm_90a -v $m.ptx -o /dev/null) >$O/ptxas-$m.log 2>&1; done
cat $O/ptxas-*.log | grep -iE "C75" | sort | uniq -c >>$O/tools.log
cat $O/ptxas-*.log | grep -A4 -E "Compiling entry function '(.*_late|fg_attn_fwd_wgmma_v45_.*)'" | grep -E "Compiling|registers|spill" | sed 's/ptxas info    ://' >>$O/tools.log
rm -f $O/ptxas-*.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'none' -mma.only '_v45_' -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionKeptPlanes|TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.run '^TestAttentionMMABwdTiming$' -test.v -mmabwd.time -mmabwd.precs bf16,exact -mmabwd.pairs none) >$O/timing.log 2>&1
echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
(cd $R/cuda && timeout 100 $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/exact/v(45)/' -test.benchtime 10x -test.count 2) >$O/bench.log 2>&1
echo "bench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
left=$(( 580 - ($(date +%s)-T0) ))
(cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,bf16 -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attnbench
cat $O/tools.log
grep -E "^\| (64|128) " $O/timing.log | sed -E 's/\[fg_attn[^]]*\]//' | cut -c1-200
grep -E "^Benchmark" $O/bench.log | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/exact.v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}' | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench.log | head -16
