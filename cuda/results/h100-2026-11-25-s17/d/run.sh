#!/bin/bash
# Seventeenth session, call D (main, the session's final kernels: BF16 forward variant 38 below
# Nk = 4096; attnbench's forward timed alone, as inference runs it): attnbench at every precision
# beside PyTorch SDPA (f32 EFFICIENT, bf16 FLASH, bf16 cuDNN) in one run, 5 repetitions. The
# suite and the sanitizers: call E (the payload of both does not fit one call).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17d; O=${OUT:-/tmp/out}/s17d; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R && timeout 400 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/attnbench
cat $O/tools.log; sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench.log | head -16
grep -E "^ours.*bf16" $O/attnbench.log | sed -E 's/err O.*\(/(/' | cut -c1-200
