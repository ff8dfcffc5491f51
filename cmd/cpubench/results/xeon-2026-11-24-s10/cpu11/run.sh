#!/bin/bash
# Tenth session, helper cpu11: the H100 machine's Xeon on branch cpu11 (commit in ./commit). CPU only:
# no GPU is used. Expected duration about 4–5 minutes (timeouts sum to 8 min 10 s at most).
# (1) scripts/cpu-bench.sh pinned at 2 and 16 threads with PyTorch (as in the ninth session; the
#     attention kernels are main's: cpu11 changed no kernel);
# (2) BenchmarkForwardThreads pinned on the 2-thread CPUs: the float32 forward alternating in one
#     process at GOMAXPROCS 1 (t1), 2 (t2) and the op through the machine at 2 (op2), per
#     CPU-second (_pct), busy and per wall second (_wpct), t2/t1: whether the 2-thread forward
#     loses to the 1-thread one on this Xeon, and whether the op adds to the kernel;
# (3) cpu-bench at 2 threads with REPS=15 (median of 15 timed runs instead of 3, PyTorch too);
# (4) BenchmarkForwardThreads again (a second round).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/cpu11; O=${OUT:-/tmp/out}/cpu11; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; chmod +x cpubench attn.test scripts/cpu-bench.sh)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3' | cut -c1-200
  for c in /sys/devices/system/cpu/cpu[0-9]*; do echo "$(basename $c) siblings $(cat $c/topology/thread_siblings_list 2>/dev/null) core $(cat $c/topology/core_id 2>/dev/null)"; done | sort -V | tr '\n' ';'; echo
  command -v taskset; uptime; } >$O/steps.log 2>&1
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
# B holds scripts/cpu-bench.sh and cmd/cpubench/sdpa_cpu.py of the branch: the script runs from B.
(cd $B && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu timeout 200 scripts/cpu-bench.sh 2,16) >/dev/null 2>&1; st "cpu-bench pinned 2,16" $?
set2=$(sed -n 's/^## 2 threads on CPUs //p' $O/cpu/cpu-bench.log | head -1); set2=${set2:-1,2}
ft() {
  echo "## round $1, pinned on CPUs $set2; $(uptime)" >>$O/forward-threads.txt
  (cd $R/ops/attention && timeout $2 taskset -c $set2 $B/attn.test -test.run '^$' -test.bench 'ForwardThreads' -test.cpu 2 -test.benchtime 4x) 2>&1 | grep -E '^Benchmark|FAIL|panic' >>$O/forward-threads.txt
}
ft 1 90; st "forward-threads round 1" $?
(cd $B && REPS=15 CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O/cpu-reps15 timeout 120 scripts/cpu-bench.sh 2) >/dev/null 2>&1; st "cpu-bench pinned 2 REPS=15" $?
ft 2 80; st "forward-threads round 2" $?
uptime >> $O/steps.log
cd $O && tar czf ../cpu11.tgz . && ls -la $O $O/cpu $O/cpu-reps15
