#!/bin/bash
# Seventh session, call E: the d = 128 dQ kernels beside the default d = 128 dK/dV kernel (bwd64
# timed the Pipe dQ kernel only beside the slower Fx dK/dV one): TestAttentionMMABwdTiming,
# BF16, every pair "wgmma dkdv n128 m64 s64 + wgmma … dq …", twice.
R=$(cd "$(dirname "$0")/../.." && pwd); C=$R/.devbin/s7c; O=${OUT:-/tmp/out}/s7e; mkdir -p $O
(cd $C && xz -d -f -T8 *.xz 2>/dev/null; chmod +x *.test)
cat $C/commit > $O/timing.log
for r in 1 2; do
  (cd $R/cuda && timeout 120 $C/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs=bf16 -mmabwd.pairs=bf16 -mmabwd.cross -mmabwd.only='^wgmma dkdv n128 m64 s64 \+ wgmma') >>$O/timing.log 2>&1
  echo "round $r rc=$?" >>$O/timing.log
done
