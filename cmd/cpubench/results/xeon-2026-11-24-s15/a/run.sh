#!/bin/bash
# Fifteenth session, call X (CPU only, the H100 machine's Xeon): main's final CPU kernels (helpers xtg and cfw merged)
# through scripts/cpu-bench.sh pinned at 2 and 16 threads, REPS=3: peak.c (FMA peak, triad), our fused
# attention and softmax (cmd/cpubench) and PyTorch 2.11's CPU SDPA (FLASH, MATH) on the same CPUs.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s15x; O=${OUT:-/tmp/out}/s15x${CALL:-}; mkdir -p $O
cd $B && xz -d -f cpubench.xz && chmod +x cpubench
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
{ cat $B/commit; lscpu | grep -E 'Model name|^CPU\(s\)|Flags' ; uptime; } >$O/steps.log
(cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O REPS=${REPS:-3} timeout 540 scripts/cpu-bench.sh ${THREADS:-2,16}) >$O/run.out 2>&1; echo "rc=$?" >>$O/steps.log
head -3 $O/steps.log; tail -1 $O/steps.log; grep -E "^\| |peak|triad|softmax|^## " $O/cpu-bench.log | head -60
