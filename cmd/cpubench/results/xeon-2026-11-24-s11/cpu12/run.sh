#!/bin/bash
# Eleventh session, helper cpu12: main's attention kernels against cpu12's (gemm.ScoreExp: the
# forward's exponentials in the score product's micro-kernel) on the H100 machine's Xeon, CPU
# only (no GPU is used), 2 threads pinned on CPUs 1,2 (what scripts/cpu-bench.sh picks there).
# Binaries: cpubench-main (main at ./commit-main), cpubench-new (cpu12 at ./commit-new),
# attn-ab.test (cpu12 plus the harness switch in ./harness.diff and ./zz_ab_test.go.txt).
# Steps (timeouts sum to 272 s; expected about 190 s; DRY=1 runs each step 6 s, for the plumbing):
#  1. peak.c at 1 and 2 threads pinned;
#  2. cpubench-main -torch, then cpubench-new -torch (PyTorch FLASH and MATH interleaved per shape);
#  3. cpubench-main, cpubench-new, cpubench-main, cpubench-new without PyTorch, -reps 5;
#  4. attn-ab.test BenchmarkZZAB: main's two-pass forward (old) and ScoreExp's (new) alternating
#     in one process, at GOMAXPROCS 2 and 1, per CPU-second (% of one core's FMA peak).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/cpu12; O=${OUT:-/tmp/out}/cpu12; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; chmod +x cpubench-main cpubench-new attn-ab.test)
{ cat $B/commit-main $B/commit-new; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3|MHz' | cut -c1-200
  command -v taskset gcc python3; uptime; } >$O/steps.log 2>&1
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
P="taskset -c 1,2"
# lim S: the step's timeout, 6 s in a dry run (DRY=1: plumbing only).
lim() { if [ -n "${DRY:-}" ]; then echo 6; else echo $1; fi; }
gcc -O2 -mavx2 -mfma -o $O/peak $B/peak.c -lpthread && { taskset -c 1 $O/peak 1; $P $O/peak 2; } >$O/peak.txt 2>&1; st "peak" $?
for v in main new; do
  (cd $R && timeout $(lim 70) $P $B/cpubench-$v -threads 2 -torch $B/sdpa_cpu.py -softmax=false) >$O/torch-$v.md 2>&1; st "cpubench-$v -torch" $?
done
for v in main new main new; do
  (cd $R && timeout $(lim 18) $P $B/cpubench-$v -threads 2 -reps 5 -softmax=false) >>$O/alt-$v.md 2>&1; st "cpubench-$v reps 5" $?
done
(cd $R/ops/attention && timeout $(lim 55) $P $B/attn-ab.test -test.run '^$' -test.bench 'ZZAB' -test.benchtime 2x -test.cpu 2) >$O/zzab.txt 2>&1; st "attn-ab ZZAB" $?
uptime >> $O/steps.log
cd $O && tar czf ../cpu12.tgz . && ls -la $O
