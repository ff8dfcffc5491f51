#!/bin/bash
# Seventh session, call B: which AVX-512 GEMM variant suits the H100 machine's Xeon (issue 9's
# "nn's products ≥ 70% of peak", issue 10's large configuration at 2 threads).
#  1. BenchmarkVariantTable, nn's GPT products at 2 and 16 threads: every variant of the
#     level, interleaved in 7 rounds (best of each), each beside the FMA loop's rate measured
#     in the same rounds (% of peak).
#  2. examples/gpt's large configuration of train-bench (12 steps, 2 threads), variants 6 (the
#     default), 13 and 14 alternating (FLASHGORGON_GEMM_VARIANT), three rounds, with PyTorch
#     eager's twin in each round.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s7b; A=$R/.devbin/s7a; O=${OUT:-/tmp/out}/s7b; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; chmod +x *.test); (cd $A && xz -d -f -T8 *.xz; gunzip -kf corpus.txt.gz; chmod +x gpt)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|L1d|L2|L3'; uptime; } >$O/steps.log 2>&1
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
(cd $R/internal/kernels/gemm && timeout 150 $B/gemm.test -test.run XXX -test.bench 'VariantTable/nn/D256' -test.benchtime 1x -test.cpu 2,16) > $O/variant-table.txt 2>&1; st variant-table $?
for r in 1 2 3; do
  for v in 6 13 14; do
    echo "round $r variant $v: $(cd $R && GOMAXPROCS=2 FLASHGORGON_GEMM_VARIANT=$v timeout 60 $A/gpt -data $A/corpus.txt -layers 4 -width 256 -heads 8 -context 256 -batch 16 -steps 12 -lr 1e-3 -min_lr 1e-4 -warmup 0 -eval_every 1000000 -eval_batches 1 -sample_len 1 -quiet -out /tmp/o 2>&1 | tail -1)" >> $O/gpt-variants.txt
  done
  echo "round $r torch: $(cd $R && timeout 60 python3 cmd/trainbench/gpt_twin.py --device cpu --threads 2 --layers 4 --width 256 --heads 8 --context 256 --batch 16 --steps 12 2>/dev/null)" >> $O/gpt-variants.txt
done; st gpt-variants $?
uptime >> $O/steps.log
cd $O/.. && tar czf s7b.tgz s7b
