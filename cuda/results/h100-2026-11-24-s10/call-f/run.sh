#!/bin/bash
# Tenth session, call F: the review mends (variant 22 on fg_bulk_load), main's final kernels.
# ptxas on the persistent module; the forward's device tests (every variant, 22 among them),
# the kept-planes tests (forward variants 20 to 22 with every Hopper backward pair); memcheck,
# racecheck and initcheck on a kept-planes case; BenchmarkAttentionMMA at d = 64 and 128,
# variants 20 and 22 alternating, three rounds of 5 launches.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s10f; O=${OUT:-/tmp/out}/s10f; mkdir -p $O
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
(cd $R/cuda && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/attention_hopper_persist.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A3 "Compiling entry" $O/ptxas.log | grep -E "entry|spill|Used" >$O/ptxas-short.txt
run cuda cuda 200 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionKeptPlanes|TestAttentionMMABuffersScratch|TestPickMMA|TestKeptLayout'
for tool in memcheck racecheck initcheck; do
  run $tool cuda 60 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionKeptPlanes$/B2_H4'
done
for r in 1; do
  for v in 20 22; do
    (cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d(64|128)/.*/.*/bf16/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' | sed "s/^/r$r /" >>$O/fwd.log
  done
done
echo "fwd $(( $(date +%s)-T0 ))s" >>$O/tools.log
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
cat $O/summary.txt; grep -A2 "v2[02]_bf16" $O/ptxas-short.txt
awk '{print $1, $2, $(NF-3), $(NF-2), $(NF-1), $NF}' $O/fwd.log
cd $O/.. && tar czf s10f.tgz s10f
