#!/bin/bash
# Eighth session, call I: the H100 machine's Xeon after merging cpu9 (pagedA for xᵀ·g with
# rows 4 KiB apart): cpu-bench (our attention and softmax beside PyTorch's CPU SDPA at 2 and 16
# threads, FMA peak and triad in the same run), nn's products at the GPT's shapes, gemm's
# alternating rounds of each layer's products at 2 threads; then, on the GPU, the
# misaligned-View test and the tensor-core forward tests after aligned16.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8i; O=${OUT:-/tmp/out}/s8i; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; chmod +x cpubench *.test)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Flags' | cut -c1-600; uptime; } >$O/steps.log
(cd $R/cuda && timeout 120 $B/cuda.test -test.v -test.count=1 -test.short -test.run 'TestAttentionMisalignedViews|TestPickMMA|TestAttentionMMA(Device|BuffersScratch)$|TestAttentionMMABwdBuffersScratch') >$O/cuda.log 2>&1; st "cuda tests pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log)" $?
export CUDA_VISIBLE_DEVICES=
(cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu timeout 240 scripts/cpu-bench.sh 2,16) >/dev/null 2>&1; st cpu-bench $?
{ (cd $R/internal/kernels/gemm && timeout 15 $B/gemm.test -test.run XXX -test.bench 'PeakFMA' -test.cpu 1,2,16)
  (cd $R/nn && FLASHGORGON_DEVICE=cpu timeout 40 $B/nn.test -test.run XXX -test.bench 'MatMulGPT/M4096' -test.benchtime 10x -test.cpu 2,16); } 2>&1 | grep -E '^Benchmark|^cpu:' > $O/matmul.txt; st matmul $?
(cd $R/internal/kernels/gemm && timeout 120 $B/gemm.test -test.run '^$' -test.bench GemmRounds -test.cpu 2 -test.benchtime 16x) > $O/gemm-rounds.txt 2>&1; st gemm-rounds $?
uptime >> $O/steps.log
cd $O && tar czf ../s8i.tgz . && ls $O $O/cpu 2>/dev/null | head -20
