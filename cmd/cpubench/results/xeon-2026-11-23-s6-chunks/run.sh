#!/bin/bash
# Sixth session, early Xeon call: our CPU attention with three chunk rules for the tile products
# (A: main; B: chunks of 16 up to depth 128 (8 below 64); C: one FMA chain per depth block), at
# 2 and 16 threads, then PyTorch's CPU SDPA beside A. Binaries built on the dev machine.
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); D=$R/.devbin/x6; L=${OUT:-/tmp/out}; mkdir -p $L
cd $D && xz -d -f -T8 *.xz && chmod +x cpubench?
{ date -u; lscpu | grep -E 'Model name|^CPU\(s\)|MHz'; uptime; } > $L/env.txt
cd $R
export FLASHGORGON_DEVICE=cpu CUDA_VISIBLE_DEVICES=
for round in 1 2; do
  for v in A B C; do
    echo "## round $round variant $v" >> $L/ours.txt
    timeout 60 $D/cpubench$v -threads 2,16 -reps 3 -softmax=false 2>&1 | grep -E '^\||peak' >> $L/ours.txt
  done
done
timeout 150 $D/cpubenchA -threads 2,16 -reps 3 -torch cmd/cpubench/sdpa_cpu.py > $L/torch.txt 2>&1
uptime >> $L/env.txt
