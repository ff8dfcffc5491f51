#!/bin/bash
# Tenth session, helper nn12: nn's matrix products on the GPU machine's Xeon, branch nn12 (CPU only).
# For T = 2 and 16 threads, pinned with taskset to T distinct physical cores (the CPUs
# scripts/cpu-bench.sh picks, its pick() read from the checkout's copy): (1) gemm's
# BenchmarkGemmRounds (a layer's four products alternating in rounds, % of the FMA loop per
# CPU-second), (2) BenchmarkPackFirstAB (xᵀ·g with and without variant 16's packing twin,
# alternating), (3) nn's BenchmarkMatMulGPT/M4096 (each product timed alone, as call F did).
# About 2 minutes (at most 5 by the timeouts); logs under $OUT/nn12, tarred to $OUT/nn12.tgz.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/nn12; O=${OUT:-/tmp/out}/nn12; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 gemm.test.xz nn.test.xz; chmod +x gemm.test nn.test)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3|Flags' | cut -c1-300
  command -v taskset; uptime; } >$O/steps.log 2>&1
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
# expand() and pick() of scripts/cpu-bench.sh (pick T: T CPUs, one per physical core, CPU 0's last).
sys=/sys/devices/system/cpu
eval "$(sed -n '/^expand() {/,/^}/p; /^pick() {/,/^}/p' $R/scripts/cpu-bench.sh)"
allowed=$(grep -s '^Cpus_allowed_list:' /proc/self/status | awk '{print $2}')
mapfile -t cpus < <(expand "${allowed:-$(cat $sys/online)}" | sort -n)
for T in 2 16; do
  set=$(pick $T); pre=(); command -v taskset >/dev/null && pre=(taskset -c $set)
  echo "## $T threads on CPUs $set (${pre[*]:-unpinned})" | tee -a $O/steps.log >>$O/bench-$T.txt
  (cd $R/internal/kernels/gemm && timeout 60 "${pre[@]}" $B/gemm.test -test.run '^$' -test.bench 'GemmRounds' -test.cpu $T -test.benchtime 16x) >>$O/bench-$T.txt 2>&1; st "GemmRounds $T" $?
  (cd $R/internal/kernels/gemm && timeout 45 "${pre[@]}" $B/gemm.test -test.run '^$' -test.bench 'PackFirstAB/T4096' -test.cpu $T -test.benchtime 6x) >>$O/bench-$T.txt 2>&1; st "PackFirstAB $T" $?
  (cd $R/nn && timeout 40 "${pre[@]}" $B/nn.test -test.run '^$' -test.bench 'MatMulGPT/M4096' -test.cpu $T -test.benchtime 10x) >>$O/bench-$T.txt 2>&1; st "MatMulGPT $T" $?
done
uptime >>$O/steps.log
cd $O && tar czf ../nn12.tgz . && ls -la $O
