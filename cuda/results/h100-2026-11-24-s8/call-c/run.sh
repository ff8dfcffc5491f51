#!/bin/bash
# Eighth session, call C: variants 19 and 20 with setmaxnreg at d = 64, 21 (20 without it);
# their tests; BenchmarkAttentionMMA beside 15 and 17; ncu's speed-of-light and warp states of
# v15, v19, v21 at d = 64.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8c; O=${OUT:-/tmp/out}/s8c; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) $(( $(date +%s)-t0 ))s")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
(cd $R/cuda && timeout 100 bash scripts/ptxas-hopper.sh) 2>&1 | grep -A3 persist >$O/ptxas.log
run fwd cuda 150 $B/cuda.test -test.v -test.short -test.count=1 -test.run 'TestAttentionMMA(Device|Determinism|MaskedKeysInert)$'
run bench cuda 150 $B/cuda.test -test.run '^$' -test.bench 'AttentionMMA/d/n/causal/bf16/^v(15|17|19|20|21)$/' -test.benchtime 5x
NCU=$(ls /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU" >>$O/ncu.log
(cd $R/cuda && timeout 150 $NCU --kernel-name regex:'fg_attn_fwd_wgmma_v(15|19|21)_bf16_d64' --launch-count 6 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis $B/cuda.test -test.run '^$' -test.bench 'AttentionMMA/d64/n(1024|4096)/causal=false/bf16/^v(15|19|21)$/' -test.benchtime 1x) >>$O/ncu.log 2>&1
S+=("ncu rc=$?")
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep TFLOP $O/bench.log | awk '{print $1, $3, $(NF-1)}' | sed 's/BenchmarkAttentionMMA\///; s/\/fg_attn[^ ]*//' >>$O/summary.txt
cat $O/summary.txt
cd $O/.. && tar czf s8c.tgz s8c
