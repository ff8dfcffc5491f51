#!/bin/bash
# Eighth session, call J: the forward kernels on shared pieces (FgRing, fg_wgmma_load_q, fg_wgmma_tiles_ovl);
# their tests, memcheck and racecheck; BenchmarkAttentionMMA of 15, 17, 20.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8j; O=${OUT:-/tmp/out}/s8j; mkdir -p $O
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
run fwd cuda 150 $B/cuda.test -test.v -test.short -test.count=1 -test.run 'TestAttentionMMA(Device|Determinism|MaskedKeysInert|BuffersScratch)$|TestAttentionMisalignedViews'
run bench cuda 150 $B/cuda.test -test.run '^$' -test.bench 'AttentionMMA/d/n/causal/bf16/^v(15|17|20)$/' -test.benchtime 5x
CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  run $tool cuda 90 env FLASHGORGON_CUDA_POOL=off $CS --tool $tool --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$'
  S[-1]="${S[-1]} $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1)"
done
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep TFLOP $O/bench.log | awk '{print $1, $3, $(NF-1)}' | sed 's/BenchmarkAttentionMMA\///; s/\/fg_attn[^ ]*//' >>$O/summary.txt
cat $O/summary.txt
cd $O/.. && tar czf s8j.tgz s8j
