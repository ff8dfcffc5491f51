#!/bin/bash
# Thirteenth session, call F (main at 9e5ff89, the session's final kernels): attnbench at every
# precision beside PyTorch SDPA (f32 EFFICIENT, bf16 FLASH, bf16 cuDNN) in one run, 5 repetitions;
# then the cuda suite (every kernel's device tests) with the time left.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s13f; O=${OUT:-/tmp/out}/s13f; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R && timeout 330 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
left=$(( 560 - ($(date +%s)-T0) ))
(cd $R/cuda && timeout $left $B/cuda.test -test.v -test.count=1) >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) skip=$(grep -c -- '--- SKIP' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -- '--- FAIL' $O/cuda.log | head >>$O/tools.log
cat $O/tools.log; sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench.log | head -20
