#!/bin/bash
# Seventeenth session, call X (CPU only, the H100 machine's Xeon): main after helper cdg's merge, through
# scripts/cpu-bench.sh pinned at 2 and 16 threads (peak.c's FMA peak and triad, our fused attention
# and softmax, PyTorch 2.11's CPU SDPA FLASH and MATH on the same CPUs), then nn's products at the
# large GPT's shapes on their kernel (internal/kernels/gemm's BenchmarkGemmRounds: GemmDepth, % of
# the FMA peak loop measured in the same process) pinned to one core, beside peak.c at 1 thread;
# the whole twice (rounds a and b, ROUNDS), one after the other.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17x
cd $B && xz -d -f *.xz && chmod +x cpubench gemm.test
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
for round in ${ROUNDS:-a b}; do
O=${OUT:-/tmp/out}/s17x${CALL:-}$round; mkdir -p $O
{ cat $B/commit; lscpu | grep -E 'Model name|^CPU\(s\)|Flags' ; uptime; } >$O/steps.log
(cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O REPS=${REPS:-3} timeout 400 scripts/cpu-bench.sh ${THREADS:-2,16}) >$O/run.out 2>&1; echo "cpu-bench rc=$?" >>$O/steps.log
# nn's products on one core: the core cpu-bench.sh's 1-thread peak ran on (its log names it).
core=$(grep -oE 'peak\.c at 1 thread on CPU [0-9]+' $O/cpu-bench.log | head -1 | grep -oE '[0-9]+$'); core=${core:-1}
taskset -c $core $O/peak 1 >$O/peak1.log 2>&1  # cpu-bench.sh compiled it
(cd $R/internal/kernels/gemm && taskset -c $core timeout 150 $B/gemm.test -test.run '^$' -test.bench 'GemmRounds' -test.cpu 1 -test.benchtime 16x) >$O/gemm.log 2>&1; echo "gemm rc=$? core=$core" >>$O/steps.log
cat $O/steps.log | grep -v Flags; grep -E "^\| |peak|triad|softmax|^## " $O/cpu-bench.log | head -60
cat $O/peak1.log | head -8; grep -E "^Benchmark" $O/gemm.log
rm -f $O/peak $O/run.out  # (the reply brings back a few files only)
done
