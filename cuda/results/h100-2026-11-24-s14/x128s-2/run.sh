#!/bin/bash
# Fourteenth session, call x128s-2: the timing the first x128s call skipped (its TestPickMMABwd failed
# under -mmabwd.only, a test fragility fixed on main since): TestAttentionMMABwdTiming, exact, the ws1
# forms beside the default; then racecheck on vsw01.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x128s; O=${OUT:-/tmp/out}/x128s2; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 cuda.test.xz && chmod +x cuda.test
rm -rf $B/cuda && mkdir -p $B/cuda && tar -C $B/cuda -xf $B/kernels.tar
ONLY='one (w1|w0|w01|vs|vsw1|vsw01|kr|vskr) '
(cd $B/cuda && timeout 400 $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only "$ONLY") >$O/timing.log 2>&1
echo "timing rc=$? $(( $(date +%s)-T0 ))s" >$O/tools.log
cat $O/tools.log
sed -n '/^| 128 |/,$p' $O/timing.log | grep -E "^\| 128|dkdv" | sed -E "s/\[fg_attn[^]]*\]//" | awk -F'|' '{print $5, $7, $11}' | cut -c1-160
