#!/bin/bash
# Seventh session, call C: main after merging bwd64 (the Hopper BF16 backward's Fx, Pipe and B3
# kernels, the 16-byte pre-pass, new defaults) through the cuda suite (every kernel pair's
# device tests, TestDeterminism's 50 runs, the scratch and masked-key tests); racecheck and
# initcheck over every Hopper backward pair; ops/attention's device tests in the background;
# then, alone on the GPU, attnbench at every precision beside PyTorch SDPA.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s7c; O=${OUT:-/tmp/out}/s7c; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
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
(cd $R/ops/attention && timeout 280 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') >$O/ops-attention-device.log 2>&1 &
AP=$!
run cuda cuda 250 $B/cuda.test -test.v -test.count=1
CS=/usr/local/cuda/bin/compute-sanitizer
for tool in racecheck initcheck; do
  run $tool-hopper-bwd cuda 60 env FLASHGORGON_CUDA_POOL=off $CS --tool $tool --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMABwdDevice$' -mmabwd.only=wgmma
done
wait $AP; rc=$?
S+=("ops-attention (Device|Precision): rc=$rc pass=$(grep -c -- '--- PASS' $O/ops-attention-device.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention-device.log)")
grep -- '--- FAIL' $O/ops-attention-device.log | head -8 | sed "s/^/  ops-attention: /" >>$O/failures.txt
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } | tee $O/summary.txt
(cd $R && timeout 150 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/summary.txt
grep -h "TestDeviceVersusCPU\|TestDeterminism" $O/ops-attention-device.log $O/cuda.log | grep -- "---" | head -4 >>$O/summary.txt
cd $O/.. && tar czf s7c.tgz s7c
