#!/bin/bash
# Ninth session, helper cpu10: the H100 machine's Xeon on branch cpu10. (1) scripts/cpu-bench.sh
# as now pinned (each thread count on the same CPUs for peak.c, cpubench and PyTorch) at 2 and 16
# threads; (2) the same at 2 threads unpinned (PIN=0), the old way, to see what pinning changes;
# (3) BenchmarkKernel's forward and forward+backward at 2 threads, pinned and unpinned in turn
# (two rounds), with cpu_pct_peak and busy. The attention kernels are cpu10's (the forward's exp
# step: table-driven 2^x, masked tail lanes and a flush below 2^-125 instead of subnormal
# arithmetic, which cost a microcode assist per vector on the causal diagonal tiles).
# CPU only: no GPU is used.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/cpu10; O=${OUT:-/tmp/out}/cpu10; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; chmod +x cpubench attn.test scripts/cpu-bench.sh)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3' | cut -c1-200
  for c in /sys/devices/system/cpu/cpu[0-9]*; do echo "$(basename $c) siblings $(cat $c/topology/thread_siblings_list 2>/dev/null) core $(cat $c/topology/core_id 2>/dev/null)"; done | sort -V | tr '\n' ';'; echo
  command -v taskset; uptime; } >$O/steps.log 2>&1
export CUDA_VISIBLE_DEVICES=
# B holds scripts/cpu-bench.sh and cmd/cpubench/sdpa_cpu.py of the branch: the script runs from B.
(cd $B && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu timeout 260 scripts/cpu-bench.sh 2,16) >/dev/null 2>&1; st "cpu-bench pinned 2,16" $?
(cd $B && PIN=0 CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu-unpinned timeout 150 scripts/cpu-bench.sh 2) >/dev/null 2>&1; st "cpu-bench unpinned 2" $?
set2=$(sed -n 's/^## 2 threads on CPUs //p' $O/cpu/cpu-bench.log | head -1); set2=${set2:-0,1}
for round in 1 2; do
  for how in pinned unpinned; do
    pre=(); [ $how = pinned ] && pre=(taskset -c $set2)
    echo "## round $round, $how (CPUs ${set2} when pinned)" >>$O/kernel.txt
    (cd $R/ops/attention && FLASHGORGON_DEVICE=cpu timeout 60 "${pre[@]}" $B/attn.test -test.run '^$' -test.bench 'Kernel/(fwd|bwd)/B1_H8_(N1024_d64|N2048_d128)' -test.cpu 2 -test.benchtime 10x) 2>&1 | grep -E '^Benchmark' >>$O/kernel.txt
  done
done; st "kernel pinned/unpinned" $?
uptime >> $O/steps.log
cd $O && tar czf ../cpu10.tgz . && ls -la $O $O/cpu
