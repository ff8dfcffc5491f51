#!/bin/bash
# Fifteenth session, call x3c: 3xF16 with dV's and dK's tile sums issued together; ptxas, the X3
# backward device tests, timing of the X3 pairs, attnbench -prec exact beside PyTorch.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x3c; O=${OUT:-/tmp/out}/x3c; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*_x3" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -hE "C75.*x3|error" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $R/cuda && timeout 200 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'x3' -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over 1.5|want" $O/cuda.log | head -12 >>$O/tools.log
(cd $R/cuda && timeout 150 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only 'x3') >$O/timing.log 2>&1
echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
left=$(( 560 - ($(date +%s)-T0) ))
(cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -reps 3) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
awk '/^\| (64|128) \| (1024|4096) \| false \| exact/,/x3 dq m64 n64\] |x3 dq m128 n64\] /' $O/timing.log | sed -E 's/\[fg_attn[^]]*\]//' | cut -c1-190 | head -30
grep -A14 "Exact/EFF fwd" $O/attnbench.log | head -15
grep -B2 -A15 "Forward+backward" $O/attnbench.log | grep "^|" | head -16
