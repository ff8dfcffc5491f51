#!/bin/bash
# Eleventh session, call E: variant 25 (variant 24 in a persistent grid), Exact and TF32; the review mends (bulk kernels share FgQBlock, FgRing::at, load_head).
# ptxas -v on its module; the forward's device tests (every variant, 24 and 25 among them);
# memcheck and racecheck on the masked-keys tests; BenchmarkAttentionMMA Exact and TF32, variants
# 24 and 25 alternating, three rounds.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s11e; O=${OUT:-/tmp/out}/s11e; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
(cd $R/cuda && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/attention_hopper_exact.ptx -o /dev/null) >$O/ptxas.log 2>&1
run cuda cuda 240 $B/cuda.test -test.v -test.count=1 -test.run "TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionMMABuffersScratch|TestPickMMA|TestForwardScratch"
for tool in memcheck racecheck; do
  run $tool cuda 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$/(B2_H2_Hkv1|B2_H4_Hkv2)'
done
for r in 1 2 3; do
  for v in 24 25; do
    (cd $R/cuda && timeout 120 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d(64|128)/.*/.*/(exact|tf32)/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' | sed "s/^/r$r /" >>$O/fwd.log
  done
done
echo "fwd $(( $(date +%s)-T0 ))s" >>$O/tools.log
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
cat $O/summary.txt; grep -E "entry|spill|Used|C75|error" $O/ptxas.log | head -20
grep -E "v2[45]" $O/cuda.log | grep -E "O error" | head -40
awk '{print $1, $2, $(NF-3), $(NF-2), $(NF-1), $NF}' $O/fwd.log
cd $O/.. && tar czf s11e.tgz s11e
