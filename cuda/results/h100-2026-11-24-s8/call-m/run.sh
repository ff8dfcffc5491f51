#!/bin/bash
# Eighth session, call M: the review's launcher mend (startMMA: one launch of the persistent
# kernel after the fused memset or the pre-pass) through the forward's device tests.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8m; O=${OUT:-/tmp/out}/s8m; mkdir -p $O
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
(cd $R/cuda && timeout 200 $B/cuda.test -test.v -test.count=1 -test.short -test.run 'TestAttentionMMA(Device|Determinism|MaskedKeysInert|BuffersScratch)$|TestAttentionMisalignedViews|TestAttentionMMABwdBuffersScratch') >$O/fwd.log 2>&1
echo "rc=$? pass=$(grep -c -- '--- PASS' $O/fwd.log) fail=$(grep -c -- '--- FAIL' $O/fwd.log)" | tee $O/summary.txt
grep -- '--- FAIL' $O/fwd.log | head
