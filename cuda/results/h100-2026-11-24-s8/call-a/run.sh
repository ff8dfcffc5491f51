#!/bin/bash
# Eighth session, call A: the persistent Hopper forward (variants 19, 20) checked and timed
# beside variants 15 and 17; the BF16 backward with the grid's negative scale.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8a; O=${OUT:-/tmp/out}/s8a; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
(cd $R/cuda && timeout 100 bash scripts/ptxas-hopper.sh) >$O/ptxas.log 2>&1
run fwd cuda 200 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionMMA(Device|MaskedKeysInert|Determinism|BuffersScratch)$'
run bwd cuda 120 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionMMABwdDevice$'
run bench cuda 120 $B/cuda.test -test.run '^$' -test.bench 'AttentionMMA/.*/v(15|17|19|20)/' -test.benchtime 5x
CS=/usr/local/cuda/bin/compute-sanitizer
run memcheck-persist cuda 90 env FLASHGORGON_CUDA_POOL=off $CS --tool memcheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$'
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } | tee $O/summary.txt
grep -E "v19|v20|Used|spill|serialized|error|warning" $O/ptxas.log | head -40 >>$O/summary.txt
cd $O/.. && tar czf s8a.tgz s8a
