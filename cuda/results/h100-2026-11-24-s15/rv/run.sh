#!/bin/bash
# Fifteenth session, call RV: the review mends (the 3xF16 pre-passes launched through startPrep and
# bwdPrepKernel): the forward's and backward's device tests, the Buffers scratch tests, the kernels' listing.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/rv; O=${OUT:-/tmp/out}/rv; mkdir -p $O
cd $B && xz -d -f *.xz && chmod +x cuda.test
(cd $R/cuda && timeout 400 $B/cuda.test -test.count=1 -test.v -mmabwd.only 'x3' -test.run 'TestAttentionMMADevice|TestAttentionMMABwdDevice|TestAttentionMMABuffersScratch|TestAttentionMMABwdBuffersScratch|TestAttentionDevice$|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMAMaskedKeysInert|TestPickMMA|TestBackwardScratch|TestForwardScratch') >$O/cuda.log 2>&1
echo "rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log)" | tee $O/tools.log
grep -- '--- FAIL' $O/cuda.log | head
