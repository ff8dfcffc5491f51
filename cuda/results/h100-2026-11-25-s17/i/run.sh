#!/bin/bash
# Seventeenth session, call I (main, the kernels of call D): attnbench -prec bf16 twice more, one
# run after the other, to see how much the BF16 rows near 1 move between runs (both kept).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17i; O=${OUT:-/tmp/out}/s17i; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
for r in 1 2; do
  (cd $R && timeout 270 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16 -reps 5) >$O/attnbench$r.log 2>&1
  echo "attnbench $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
rm -f $B/attnbench
cat $O/tools.log
for r in 1 2; do sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench$r.log | head -16; done
