#!/bin/bash
# Eleventh session, call G: main with variants 24 and 25 as the Exact and TF32 forwards on Hopper,
# through the cuda suite (every kernel's device tests, the 50-run
# determinism checks) with the machine's and nn's device tests beside it (binaries in .devbin/s11g); the
# three compute-sanitizer tools on the kept-planes and the masked-keys tests (d = 64 and 128: every
# tensor-core forward, 24 and 25 among them); then, alone on the
# GPU, ops/attention's device tests and attnbench at every precision beside PyTorch SDPA, 10
# repetitions (binaries in .devbin/s11h). Argument: suites, bench
# (two calls: together they pass the 600 s limit) or all.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s11g; O=${OUT:-/tmp/out}/s11g; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz 2>/dev/null; chmod +x *.test attnbench
PART=${1:-all}  # suites (the tests and sanitizers), bench (attnbench), or all
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
bg() { # name dir timeout args... (in the background; collected by collect)
  local name=$1 dir=$2 to=$3; shift 3
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1 &
}
if [ $PART != bench ]; then
bg machine machine 240 $B/machine.test -test.v -test.count=1
bg nn nn 240 $B/nn.test -test.v -test.count=1
run cuda cuda 300 $B/cuda.test -test.v -test.count=1
wait
for n in machine nn; do
  S+=("$n: pass=$(grep -c -- '--- PASS' $O/$n.log) fail=$(grep -c -- '--- FAIL' $O/$n.log) $(tail -1 $O/$n.log)")
  grep -- '--- FAIL' $O/$n.log | head -8 | sed "s/^/  $n: /" >>$O/failures.txt
done
for tool in memcheck initcheck racecheck; do  # the three tools side by side
  bg $tool cuda 240 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^(TestAttentionKeptPlanes|TestAttentionMMAMaskedKeysInert)$/(B2_H4|B2_H2_Hkv1)'
done
wait
for n in memcheck initcheck racecheck; do
  S+=("$n: pass=$(grep -c -- '--- PASS' $O/$n.log) fail=$(grep -c -- '--- FAIL' $O/$n.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$n.log | tail -1) $(tail -1 $O/$n.log)")
  grep -- '--- FAIL' $O/$n.log | head -8 | sed "s/^/  $n: /" >>$O/failures.txt
done
fi
if [ $PART != suites ]; then
B=$R/.devbin/s11h  # the bench part's binaries (a call of its own: the two parts' binaries pass 64 MiB together)
cd $B && xz -d -f -T8 *.xz 2>/dev/null; chmod +x *.test attnbench
run ops-attention ops/attention 240 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision'
(cd $R && timeout 300 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 10) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
fi
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/bench.txt; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep -h "TestDeterminism\|TestAttentionMMADeterminism\|TestAttentionKeptPlanes\|TestCUDAAttentionPrecisions\|MemoryFlat" $O/cuda.log $O/machine.log | grep -- "^--- " >>$O/summary.txt
cat $O/summary.txt
sed -n '/BF16\/FLASH fwd/,/^$/p' $O/attnbench.log
grep "bf16  fwd" $O/attnbench.log | sed 's/(fg.*//;s/ours {B:[0-9]* H:16 //;s/, err.*//'
cd $O/.. && tar czf s11g-$PART.tgz s11g
