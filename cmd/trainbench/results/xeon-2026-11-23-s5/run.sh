#!/bin/bash
# Fifth session, the Xeon call (with a short GPU check at the end): main after merging branches
# cpustep and cpugemm. Binaries built on the development machine (CGO_ENABLED=0).
#   1. train-bench's CPU rows (ours and PyTorch eager, both configs, 2 and 16 threads)
#   2. cpustep's spin A/B plan (cmd/trainbench/results/cpustep-xeon-plan.sh)
#   3. nn's products at the GPT's shapes at 1, 2, 16 threads with the FMA peak beside
#   4. the machine's attention precisions on the H100 (TestCUDAAttentionPrecisions, fixed form)
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); D=$R/.devbin/s5x; L=${OUT:-/tmp/out}; mkdir -p $L
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" >>$L/steps.txt; }
(cd $D && xz -d -f -T8 *.xz && gunzip -f corpus.txt.gz && chmod +x *.test gpt trainbench)
{ date -u; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Hypervisor|MHz'; uptime; } > $L/steps.txt
cd $R
CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu timeout 140 scripts/train-bench.sh $D/gpt $D/corpus.txt 2,16 > $L/train-bench.md 2>&1; st train-bench $?
export FLASHGORGON_DEVICE=cpu
{ (cd internal/kernels/gemm && timeout 15 $D/gemm.test -test.run XXX -test.bench 'PeakFMA' -test.cpu 1,2,16)
  (cd nn && timeout 35 $D/nn.test -test.run XXX -test.bench 'MatMulGPT/M4096' -test.benchtime 10x -test.cpu 1,2,16); } 2>&1 | grep -E '^Benchmark|^cpu:' > $L/matmul.txt; st matmul $?
unset FLASHGORGON_DEVICE
D=$D OUT=/tmp/spinout timeout 80 bash cmd/trainbench/results/cpustep-xeon-plan.sh > /dev/null 2>&1; st spin-plan $?
cp /tmp/spinout/logs/summary.txt $L/spin-summary.txt 2>/dev/null; tar czf $L/spin-logs.tgz -C /tmp/spinout logs 2>/dev/null
(cd machine && timeout 25 $D/machine.test -test.v -test.count=1 -test.run 'TestCUDAAttentionPrecisions|TestCUDATraining$') > $L/machine-gpu.log 2>&1; st machine-gpu $?
uptime >> $L/steps.txt
