#!/bin/bash
# Seventh session, call F: the H100 machine's Xeon after merging cpuattn (attention's
# accumulating tile products in one FMA chain): cpu-bench (our attention and softmax beside
# PyTorch's CPU SDPA at 2 and 16 threads, FMA peak and triad in the same run), nn's products
# at the GPT's shapes with the AVX-512 FMA loop, then train-bench's CPU rows at 2 threads
# (three alternating rounds, medians; CUDA hidden so the script runs no GPU rows).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s7f; O=${OUT:-/tmp/out}/s7f; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; gunzip -kf corpus.txt.gz; chmod +x gpt cpubench *.test)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Flags' | cut -c1-600; uptime; } >$O/steps.log
export CUDA_VISIBLE_DEVICES=
(cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu timeout 220 scripts/cpu-bench.sh 2,16) >/dev/null 2>&1; st cpu-bench $?
{ (cd $R/internal/kernels/gemm && timeout 15 $B/gemm.test -test.run XXX -test.bench 'PeakFMA' -test.cpu 1,2,16)
  (cd $R/internal/kernels/gemm && timeout 40 $B/gemm.test -test.run XXX -test.bench ChainSplit -test.cpu 1)
  (cd $R/nn && FLASHGORGON_DEVICE=cpu timeout 40 $B/nn.test -test.run XXX -test.bench 'MatMulGPT/M4096' -test.benchtime 10x -test.cpu 2,16); } 2>&1 | grep -E '^Benchmark|^cpu:' > $O/matmul.txt; st matmul $?
(cd $R && FLASHGORGON_DEVICE=cpu ROUNDS=3 timeout 200 scripts/train-bench.sh $B/gpt $B/corpus.txt 2) >$O/train-bench-2.md 2>&1; st train-bench-2 $?
uptime >> $O/steps.log
cd $O && tar czf ../s7f.tgz . && ls $O $O/cpu 2>/dev/null | head -20
