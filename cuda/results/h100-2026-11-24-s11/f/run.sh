#!/bin/bash
# Eleventh session, call F: variant 24's per-block kernel with its early return back (call E's
# form spilled 188-584 bytes at d = 128 and ptxas serialized its wgmmas, C7512); ptxas, the
# forward's device tests, v24 and v25 Exact and TF32 at d = 128, one round.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s11f; O=${OUT:-/tmp/out}/s11f; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
(cd $R/cuda && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/attention_hopper_exact.ptx -o /dev/null) >$O/ptxas.log 2>&1
(cd $R/cuda && timeout 150 $B/cuda.test -test.count=1 -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert') >$O/cuda.log 2>&1
echo "cuda rc=$? $(tail -1 $O/cuda.log) $(( $(date +%s)-T0 ))s" >$O/tools.log
for v in 24 25; do
  (cd $R/cuda && timeout 120 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d128/.*/.*/(exact|tf32)/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' >>$O/fwd.log
done
cat $O/tools.log; grep -E "C75|Compiling|spill" $O/ptxas.log | grep -B1 -A0 "spill" | grep -v "^--" | paste - - | awk '{print $6, $9, $10, $13}'; grep C75 $O/ptxas.log | cut -c1-150
awk '{print $1, $(NF-1)}' $O/fwd.log
