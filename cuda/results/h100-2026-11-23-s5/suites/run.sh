#!/bin/bash
# Fifth session, call 1: main merged with gputrain (per-kernel JIT with the brace-counting fix, the
# Hopper modules, Heads/GemmBias/16-byte kernels/Assign) through every device suite, memcheck on the
# new kernels and a training step, racecheck and initcheck on the tensor-core forward (Hopper v15/v17).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s5; O=${OUT:-/tmp/out}/s5c1; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/tools.log; uptime >>$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
(cd $R/ops/attention && timeout 280 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') >$O/ops-attention-device.log 2>&1 &
AP=$!
run cuda cuda 200 $B/cuda.test -test.v -test.count=1
run machine machine 120 $B/machine.test -test.v -test.count=1
run nn nn 150 $B/nn.test -test.v -test.count=1
run ops-softmax ops/softmax 100 $B/ops-softmax.test -test.v -test.count=1
run examples-gpt examples/gpt 100 $B/examples-gpt.test -test.v -test.count=1
CS=/usr/local/cuda/bin/compute-sanitizer
run memcheck-newkernels cuda 80 env FLASHGORGON_CUDA_POOL=off $CS --tool memcheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run 'Heads|Affine|ColSum|Elementwise|GemmBias'
run memcheck-trainstep machine 80 env FLASHGORGON_CUDA_POOL=off $CS --tool memcheck --error-exitcode 3 $B/machine.test -test.v -test.count=1 -test.run 'TestCUDATraining$|TestCUDAHostOps$'
for tool in racecheck initcheck; do
  [ $(( $(date +%s)-T0 )) -lt 430 ] && run $tool-hopper cuda 70 env FLASHGORGON_CUDA_POOL=off $CS --tool $tool --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^(TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert)$'
done
wait $AP; rc=$?
S+=("ops-attention (Device|Precision): rc=$rc pass=$(grep -c -- '--- PASS' $O/ops-attention-device.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention-device.log)")
grep -- '--- FAIL' $O/ops-attention-device.log | head -8 | sed "s/^/  ops-attention: /" >>$O/failures.txt
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } | tee $O/summary.txt
grep -h "ops run on\|step 1000\|cuBLASLt\|host:" $O/machine.log $O/nn.log | sort | uniq -c | head -20
cd $O/.. && tar czf s5c1.tgz s5c1
