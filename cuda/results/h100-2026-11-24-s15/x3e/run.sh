#!/bin/bash
# Fifteenth session, call x3e: the 3xF16 backward with a factor per row (no maxima pass); device tests, timing, attnbench.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x3e; O=${OUT:-/tmp/out}/x3e; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A4 -E "Compiling entry function '.*_x3" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -hE "C75.*x3|error" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'x3' -test.run 'TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionMMABuffersScratch|TestAttentionDevice$|TestAttentionDeviceMaskedKeysInert|TestAttentionGradCheck|TestAttentionMMABwdDevice') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over |want" $O/cuda.log | head -16 >>$O/tools.log
(cd $R/cuda && timeout 120 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only 'x3') >$O/timing.log 2>&1
left=$(( 560 - ($(date +%s)-T0) ))
(cd $R && timeout $left $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact -reps 3) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log
grep -E "exact v27" $O/cuda.log | sed -E "s/^ *//" | cut -c1-200 | head -20
grep -E "^ours.*exact fwd" $O/attnbench.log | sed -E 's/\(fg_attn.*//' | head -12
grep -A14 "Exact/EFF fwd" $O/attnbench.log | head -15
grep -B2 -A15 "Forward+backward" $O/attnbench.log | grep "^|" | head -16
grep -E "^\| (64|128) \| (1024|4096|16384) \| (true|false) \| exact" $O/timing.log | sed -E 's/\[fg_attn[^]]*\]//' | cut -c1-150
