#!/bin/bash
# Fifteenth session, call bfb: BenchmarkAttentionMMA of every BF16 Hopper forward variant at
# N = 1024 (causal and not, d = 64 and 128): which variant the N = 1024 rows want.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/bfb; O=${OUT:-/tmp/out}/bfb; mkdir -p $O
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
(cd $R/cuda && timeout 300 $B/cuda.test -test.run '^$' -test.bench 'BenchmarkAttentionMMA/d(64|128)/n1024/.*/bf16/v(1[2-9]|2[0-2])/' -test.benchtime 30x) >$O/bench.log 2>&1
echo "rc=$?" >> $O/bench.log
grep -E "^Benchmark|rc=" $O/bench.log | sed -E 's/fg_attn_fwd_wgmma_//' | awk '{print $1, $3, $5}'
