#!/bin/bash
# Twelfth session, call G: main with the Exact backward on wgmma (d = 64) and cpu13 merged, in two
# calls (their binaries pass 64 MiB together). Part suites (binaries in .devbin/s12g): the cuda
# suite (every kernel's device tests, the 50-run determinism checks) with machine's device tests
# beside it; then memcheck, initcheck and racecheck side by side on the kept-planes and masked-keys
# tests, forward and backward (every tensor-core kernel pair at d = 64 and 128). Part bench
# (.devbin/s12h): nn's suite, ops/attention's device tests, attnbench at every precision beside
# PyTorch SDPA, 10 repetitions.
R=$(cd "$(dirname "$0")/../.." && pwd); PART=${1:-suites}; O=${OUT:-/tmp/out}/s12g-$PART; mkdir -p $O
T0=$(date +%s)
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
if [ $PART = suites ]; then
B=$R/.devbin/s12g; cd $B && xz -d -f -T8 *.xz 2>/dev/null; chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/machine && timeout 240 $B/machine.test -test.v -test.count=1) >$O/machine.log 2>&1 &
run cuda cuda 330 $B/cuda.test -test.v -test.count=1
wait
S+=("machine: pass=$(grep -c -- '--- PASS' $O/machine.log) fail=$(grep -c -- '--- FAIL' $O/machine.log) $(tail -1 $O/machine.log)")
for tool in memcheck initcheck racecheck; do
  (cd $R/cuda && timeout 240 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^(TestAttentionKeptPlanes|TestAttentionMMAMaskedKeysInert|TestAttentionMMABwdMaskedKeysInert)$/(B2_H4|B2_H2_Hkv1)') >$O/$tool.log 2>&1 &
done
wait
for n in memcheck initcheck racecheck; do
  S+=("$n: pass=$(grep -c -- '--- PASS' $O/$n.log) fail=$(grep -c -- '--- FAIL' $O/$n.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$n.log | tail -1) $(tail -1 $O/$n.log)")
done
else
B=$R/.devbin/s12h; cd $B && xz -d -f -T8 *.xz 2>/dev/null; chmod +x *.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/nn && timeout 240 $B/nn.test -test.v -test.count=1) >$O/nn.log 2>&1
S+=("nn: pass=$(grep -c -- '--- PASS' $O/nn.log) fail=$(grep -c -- '--- FAIL' $O/nn.log) $(tail -1 $O/nn.log)")
run ops-attention ops/attention 240 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision'
(cd $R && timeout 300 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 10) >$O/attnbench.log 2>&1
S+=("attnbench rc=$? $(( $(date +%s)-T0 ))s")
fi
{ echo "==== $PART $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
cat $O/summary.txt
[ $PART = bench ] && sed -n '/BF16\/FLASH fwd/,/^$/p' $O/attnbench.log
true
