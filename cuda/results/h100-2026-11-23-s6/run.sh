#!/bin/bash
# Sixth session, call S: main with this session's merges (Hopper wgmma backward, dedupe, CPU GEMM)
# through every device suite; the Hopper PTX through CUDA 13's ptxas; compute-sanitizer on the
# new backward kernels and on a training step; meanwhile the GPT trains on the GPU and twice on
# the CPU (cuda/scripts/gpt-cpu-vs-gpu.sh, the CPU preset given explicitly so both devices train
# the same model); then, alone on the GPU, attnbench at every precision against PyTorch SDPA.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s6; O=${OUT:-/tmp/out}/s6s; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test gpt attnbench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/tools.log; uptime >>$O/tools.log
(cd $R/cuda && bash scripts/ptxas-hopper.sh) >$O/ptxas-hopper.log 2>&1
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
CPU_PRESET="-steps 1400 -batch 32 -eval_every 200 -warmup 50 -layers 2 -heads 8 -width 256 -context 64 -lr 3e-3 -min_lr 1e-3 -seed 1"
(cd $B && gunzip -kf corpus.txt.gz)
(cd $R && timeout 330 bash cuda/scripts/gpt-cpu-vs-gpu.sh $B/gpt $B/corpus.txt $O/loss $CPU_PRESET) >$O/loss-compare.log 2>&1 &
LP=$!
(cd $R/ops/attention && timeout 280 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') >$O/ops-attention-device.log 2>&1 &
AP=$!
run cuda cuda 250 $B/cuda.test -test.v -test.count=1
run machine machine 120 $B/machine.test -test.v -test.count=1
run nn nn 150 $B/nn.test -test.v -test.count=1
CS=/usr/local/cuda/bin/compute-sanitizer
run memcheck-trainstep machine 80 env FLASHGORGON_CUDA_POOL=off $CS --tool memcheck --error-exitcode 3 $B/machine.test -test.v -test.count=1 -test.run 'TestCUDATraining$|TestCUDAHostOps$'
for tool in memcheck racecheck initcheck; do
  [ $(( $(date +%s)-T0 )) -lt 300 ] && run $tool-hopper-bwd cuda 90 env FLASHGORGON_CUDA_POOL=off $CS --tool $tool --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^(TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert)$' -mmabwd.only=wgmma
done
wait $AP; rc=$?
S+=("ops-attention (Device|Precision): rc=$rc pass=$(grep -c -- '--- PASS' $O/ops-attention-device.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention-device.log)")
grep -- '--- FAIL' $O/ops-attention-device.log | head -8 | sed "s/^/  ops-attention: /" >>$O/failures.txt
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } | tee $O/summary.txt
wait $LP; echo "loss-curve rc=$? $(( $(date +%s)-T0 ))s" >>$O/summary.txt
rm -rf $O/loss/*/*.safetensors
(cd $R && timeout 150 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/summary.txt
tail -3 $O/summary.txt; tail -4 $O/loss/compare.txt 2>/dev/null
grep -h "TestDeviceVersusCPU\|problems on" $O/ops-attention-device.log | head -4
cd $O/.. && tar czf s6s.tgz s6s
