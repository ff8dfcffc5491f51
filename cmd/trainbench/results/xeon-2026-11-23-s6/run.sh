#!/bin/bash
# Sixth session, call B: the Xeon's CPU rows with nothing else running (main after merging the
# cpugemm2 branch): cpu-bench (our attention and softmax beside PyTorch's CPU SDPA, 2 and 16
# threads, the FMA peak and triad in the same run), nn's products at the GPT's shapes with the
# FMA peak, train-bench's CPU rows (2 threads: three alternating rounds, medians; 16 threads:
# one round); then, on the GPU, racecheck and initcheck over the Hopper backward's kernel pairs.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s6b; O=${OUT:-/tmp/out}/s6b; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; gunzip -kf corpus.txt.gz; chmod +x gpt cpubench *.test)
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E 'Model name|^CPU\(s\)'; uptime; } >$O/steps.log
export CUDA_VISIBLE_DEVICES=
(cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu timeout 200 scripts/cpu-bench.sh 2,16) >/dev/null 2>&1; st cpu-bench $?
{ (cd $R/internal/kernels/gemm && timeout 15 $B/gemm.test -test.run XXX -test.bench 'PeakFMA' -test.cpu 1,2,16)
  (cd $R/nn && FLASHGORGON_DEVICE=cpu timeout 40 $B/nn.test -test.run XXX -test.bench 'MatMulGPT/M4096' -test.benchtime 10x -test.cpu 2,16); } 2>&1 | grep -E '^Benchmark|^cpu:' > $O/matmul.txt; st matmul $?
(cd $R && FLASHGORGON_DEVICE=cpu ROUNDS=3 timeout 200 scripts/train-bench.sh $B/gpt $B/corpus.txt 2) >$O/train-bench-2.md 2>&1; st train-bench-2 $?
(cd $R && FLASHGORGON_DEVICE=cpu timeout 90 scripts/train-bench.sh $B/gpt $B/corpus.txt 16) >$O/train-bench-16.md 2>&1; st train-bench-16 $?
uptime >> $O/steps.log
unset CUDA_VISIBLE_DEVICES
CS=/usr/local/cuda/bin/compute-sanitizer
for tool in racecheck initcheck; do
  (cd $R/cuda && FLASHGORGON_CUDA_POOL=off timeout 100 $CS --tool $tool --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMABwdDevice$' -mmabwd.only=wgmma) >$O/$tool-hopper-bwd.log 2>&1
  st "$tool pass=$(grep -c -- '--- PASS' $O/$tool-hopper-bwd.log) fail=$(grep -c -- '--- FAIL' $O/$tool-hopper-bwd.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool-hopper-bwd.log | tail -1)" $?
done
cd $O/.. && tar czf s6b.tgz s6b
