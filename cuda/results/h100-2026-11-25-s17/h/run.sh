#!/bin/bash
# Seventeenth session, call H: variant 42 (variant 38 with a ring of key heads for its planes):
# ptxas -v, the forward's device tests on 38 and 42, TestAttentionMMARing (and under memcheck),
# three rounds of BenchmarkAttentionMMA (bf16 v22, 38, 42, every attnbench shape), ncu DRAM
# bytes at N = 1024 causal.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17h; O=${OUT:-/tmp/out}/s17h; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/cuda/ptx && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_persist.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*_v(38|42)_" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mma.only '_v(38|42)_' -test.run 'TestAttentionMMARing|TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMABuffersScratch|TestAttentionMMADeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL|ring of' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|want" $O/cuda.log | head -16 >>$O/tools.log
(cd $R/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMARing$') >$O/memcheck.log 2>&1
echo "memcheck rc=$? pass=$(grep -c -- '--- PASS' $O/memcheck.log) fail=$(grep -c -- '--- FAIL' $O/memcheck.log) $(grep -E 'ERROR SUMMARY' $O/memcheck.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log
for r in 1 2 3; do
  left=$(( 480 - ($(date +%s)-T0) )); [ $left -lt 30 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n(1024|4096|16384)/.*/bf16/v(22|38|42)/' -test.benchtime 20x) >$O/bench$r.log 2>&1
  echo "bench round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
for v in 38 42; do for d in 64 128; do
  left=$(( 560 - ($(date +%s)-T0) )); [ $left -lt 20 ] && break
  (cd $R/cuda && timeout $left /usr/local/cuda/bin/ncu --kernel-name regex:fg_attn_fwd_wgmma_v${v}_bf16_d$d --launch-skip 1 --launch-count 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d$d/n1024/causal=true/bf16/^v$v\$" -test.benchtime 2x) >$O/ncu-v$v-d$d.log 2>&1
  echo "ncu v$v d$d rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done; done
rm -f $B/cuda.test
for f in $O/ncu-v*.log; do echo "== $f"; cat $f; done > $O/ncu.log; rm -f $O/ncu-v*.log $O/ptxas.log
cat $O/tools.log
grep -E "^== |gpu__time|dram__bytes|hit_rate|dram__throughput" $O/ncu.log
for f in $O/bench*.log; do grep -E "^Benchmark" $f | sed -E 's/BenchmarkAttentionMMA.//; s/fg_attn_fwd_wgmma_//; s/bf16.v[0-9]+.//' | awk '{printf "%s %.3f\n", $1, $3/1e6}'; done | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}' | sort
