#!/bin/bash
# Seventh session, call G: call F read the softmax op at 16 threads at 27 GB/s against a triad
# of 89 (the sixth session: 80 against 58). Twice more, each with peak.c's triad in the same
# run: scripts/cpu-bench.sh 2,16 with one tiny attention shape (SHAPES) so that the softmax row
# is what the run is for.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s7f; O=${OUT:-/tmp/out}/s7g; mkdir -p $O
(cd $B && xz -d -f -T8 *.xz 2>/dev/null; chmod +x cpubench)
export CUDA_VISIBLE_DEVICES=
for r in 1 2; do
  (cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/run$r SHAPES='1,1,128,64,0' timeout 100 scripts/cpu-bench.sh 2,16) >/dev/null 2>&1
  echo "run $r rc=$?" >> $O/steps.log
done
grep -h "triad\|^| 2 | [0-9.]* |$\|^| 16 | [0-9.]* |$" $O/run*/cpu-bench.log >> $O/steps.log
