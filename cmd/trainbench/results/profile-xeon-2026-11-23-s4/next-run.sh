#!/usr/bin/env bash
# cputrain: the one-call Xeon measurement of branch cputrain (prepared 2026-11-23; the session's
# device loans ended before it ran). Run from the lead's checkout on the GPU machine:
#   bash .devbin/cputrain/run.sh      (carry [".devbin/cputrain"], timeout_s 400, about 5-6 minutes)
# Binaries built on the development machine from branch cputrain at 9765118 (CGO_ENABLED=0, -ldflags='-s -w');
# nnold.test is main at 9000449 (the base). Logs come back as $OUT/logs.tgz.
set -u
D=.devbin/cputrain
L=$OUT/logs; mkdir -p $L
(cd $D && xz -d -f -T8 *.xz && gunzip -f corpus.txt.gz && chmod +x *.test gpt cpubench)
{ date -u; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|MHz'; uptime; } > $L/machine.txt
# 1. Training throughput, CPU rows only (no CUDA for PyTorch: the script skips its GPU rows).
CUDA_VISIBLE_DEVICES= timeout 140 scripts/train-bench.sh $D/gpt $D/corpus.txt 2,16 > $L/train-bench.md 2>&1
# 2. cpu-bench: peak.c, the five shapes and examples/gpt's attention shapes, with PyTorch.
CPUBENCH=$D/cpubench PEAK_SRC=$D/peak.c OUT=$L/cb5 timeout 120 scripts/cpu-bench.sh 2,16 > /dev/null 2>&1
SHAPES='32,8,64,32,1;32,4,64,16,1;16,8,256,32,1' CPUBENCH=$D/cpubench PEAK_SRC=$D/peak.c OUT=$L/cbgpt timeout 70 scripts/cpu-bench.sh 2,16 > /dev/null 2>&1
# 3. A/B in one call: base (nnold) and branch (nn): the GPT step and nn's products at 2 and 16
#    threads; nn's products with and without internal/parallel's worker pool.
export FLASHGORGON_DEVICE=cpu
B() { "$@" 2>&1 | grep -E '^Benchmark|^cpu:' ; }
{ for r in 1 2; do for b in nnold nn; do echo "## $b rep $r"
    B $D/$b.test -test.run XXX -test.bench 'TrainStep/L4_D256' -test.benchtime 5x -test.cpu 2,16; done; done
  B $D/nn.test -test.run XXX -test.bench 'TrainStep/L4_D256' -test.benchtime 5x -test.cpu 16 -test.cpuprofile $L/train-16.prof; } > $L/ab-train.txt
{ for b in nnold nn; do echo "## $b"; B $D/$b.test -test.run XXX -test.bench 'MatMulGPT/M4096' -test.benchtime 10x -test.cpu 2,16; done; } > $L/ab-matmul.txt
# The products alone with the worker pool (gemm.test) and without it (gemm-nopool.test: the
# same code with parallel.For/ForDynamic starting goroutines per call, as before the third
# session's pool): 4096×256·256×1024 ran at 858 GFLOP/s on 16 threads in the morning's
# gemm.test (before the pool) and at 279 in the fourth session's first call (nn.test, with it).
{ for g in gemm gemm-nopool; do echo "## $g"; B $D/$g.test -test.run XXX -test.bench 'PeakFMA/avx512' -test.cpu 2,16
    B $D/$g.test -test.run XXX -test.bench 'Gemm/D256' -test.benchtime 10x -test.cpu 2,16; done; } > $L/gemm-pool.txt
uptime >> $L/machine.txt
tar czf $OUT/logs.tgz -C $OUT logs
