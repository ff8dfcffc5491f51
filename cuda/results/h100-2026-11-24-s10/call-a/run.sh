#!/bin/bash
# Tenth session, call A: the DOF dQ kernel (its rows' pre-pass inside, kept planes).
# ptxas on the Hopper backward module (registers and spills of the DOF kernels); the kept-planes
# tests (every Hopper backward pair on the planes, DOF among them, against float64 and bit for bit
# against the backward without Planes), the backward device tests, the machine's tests;
# memcheck and racecheck on the kept-planes tests; BenchmarkAttentionKeptBwd (DOF against the
# pre-pass, alternating); attnbench bf16, 10 repetitions.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s10a; O=${OUT:-/tmp/out}/s10a; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
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
(cd $R/cuda && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v ptx/attention_hopper_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A2 "_dof\|d64_m128_n128_ovl_fx_pipe'\|d128_m128_n128_fx'" $O/ptxas.log | grep -v "^--" >$O/ptxas-dof.txt
(cd $R/machine && timeout 170 $B/machine.test -test.v -test.count=1 -test.run 'CUDA|Attention|Planes') >$O/machine.log 2>&1 &
run cuda cuda 170 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionKeptPlanes|TestPickMMABwd|TestKeptLayout|TestBackwardScratch'
wait
S+=("machine: pass=$(grep -c -- '--- PASS' $O/machine.log) fail=$(grep -c -- '--- FAIL' $O/machine.log) $(tail -1 $O/machine.log)")
grep -- '--- FAIL' $O/machine.log | head -8 | sed "s/^/  machine: /" >>$O/failures.txt
for tool in memcheck racecheck; do
  run $tool cuda 75 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionKeptPlanes$/B2_H4'
done
(cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench 'AttentionKeptBwd' -test.benchtime 1x) >$O/keptbwd.log 2>&1
echo "keptbwd rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
(cd $R && timeout 170 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16 -reps 10) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/bench.txt; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
cat $O/summary.txt; cat $O/ptxas-dof.txt
grep "ms_dof" $O/keptbwd.log
sed -n '/BF16\/FLASH fwd/,/^$/p' $O/attnbench.log
cd $O/.. && tar czf s10a.tgz s10a
