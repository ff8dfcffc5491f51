#!/bin/bash
# Eighteenth session, call D: the Late forms of the Exact (3xF16) backward kernels, the new
# defaults, beside the old ones: ptxas -v; the backward's device tests on the X3 kernels
# (memcheck, racecheck on the masked keys beside them); TestAttentionMMABwdTiming (exact, X3
# pairs); attnbench -prec exact beside PyTorch.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18d; O=${OUT:-/tmp/out}/s18d; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/cuda/ptx && timeout 200 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -iE "C75" $O/ptxas.log | sort | uniq -c >>$O/tools.log
grep -A4 -E "Compiling entry function '.*_x3(_late)?'" $O/ptxas.log | grep -E "Compiling|registers|spill" | sed 's/ptxas info    ://' >>$O/tools.log
for tool in memcheck racecheck; do
  (cd $R/cuda && timeout 240 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$' -mmabwd.only 'x3') >$O/$tool.log 2>&1 &
done
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'x3' -test.run 'TestPickMMABwd|TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestBackwardScratch') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
wait
for tool in memcheck racecheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log; cat $O/$tool.log >>$O/sanitizers.log; rm $O/$tool.log; done
left=$(( 420 - ($(date +%s)-T0) ))
(cd $R/cuda && timeout $left $B/cuda.test -test.run '^TestAttentionMMABwdTiming$' -test.v -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only 'x3') >$O/timing.log 2>&1
echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
left=$(( 570 - ($(date +%s)-T0) ))
(cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attnbench $O/ptxas.log
cat $O/tools.log
grep -E "^\| (64|128) |exact bwd \[" $O/timing.log | sed -E 's/\[fg_attn[^]]*\]//' | cut -c1-200
grep -B1 -A14 "Forward+backward" $O/attnbench.log | grep "^|" | head -16
sed -n '/| d | N | causal | /,/^$/p' $O/attnbench.log | head -16
