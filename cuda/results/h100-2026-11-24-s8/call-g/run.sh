#!/bin/bash
# Eighth session, call G: main with the persistent BF16 forward (v20 the default) through the
# cuda suite (every kernel's device tests, TestDeterminism's 50 runs), ops/attention's device
# tests (in the background), the machine and nn suites; then, alone on the GPU, attnbench at
# every precision beside PyTorch SDPA.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8g; O=${OUT:-/tmp/out}/s8g; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
(cd $R/ops/attention && timeout 200 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') >$O/ops-attention-device.log 2>&1 &
AP=$!
run cuda cuda 200 $B/cuda.test -test.v -test.count=1
wait $AP; rc=$?
S+=("ops-attention (Device|Precision): rc=$rc pass=$(grep -c -- '--- PASS' $O/ops-attention-device.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention-device.log)")
grep -- '--- FAIL' $O/ops-attention-device.log | head -8 | sed "s/^/  ops-attention: /" >>$O/failures.txt
run machine machine 60 $B/machine.test -test.v -test.count=1
run nn nn 60 $B/nn.test -test.v -test.count=1
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep -h "MemoryFlat\|TestDeviceVersusCPU\|TestDeterminism" $O/machine.log $O/ops-attention-device.log $O/cuda.log | grep -- "^--- " >>$O/summary.txt
(cd $R && timeout 330 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/summary.txt
cat $O/summary.txt
cd $O/.. && tar czf s8g.tgz s8g
