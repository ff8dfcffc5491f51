#!/bin/bash
# Fourteenth session, call A. (1) BF16 backward: main's fg_bwd_seen (bitwise, thirteenth session)
# against the short-circuit form of the twelfth (cuda_old.test, branch seen-old), alternating, 2 rounds,
# TestAttentionMMABwdTiming -mmabwd.precs bf16 (default pairs). (2) The Xeon: cpu-bench.sh pinned at 2
# threads, REPS=5, beside PyTorch; a CPU profile of d=128 at 2 threads; nn's BenchmarkMatMulGPT pinned at 2.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s14a; O=${OUT:-/tmp/out}/s14a; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test cpubench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E 'Model name|^CPU\(s\)'; uptime; } >$O/steps.log
for r in 1 2; do for v in old new; do
  (cd $R/cuda && timeout 100 $B/cuda_$v.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs bf16 -mmabwd.pairs none) >$O/bf16-$v-$r.log 2>&1
  echo "bf16 $v round $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/steps.log
done; done
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
(cd $R && CPUBENCH=$B/cpubench PEAK_SRC=$B/peak.c OUT=$O REPS=5 timeout 300 scripts/cpu-bench.sh 2) >$O/cpubench-run.out 2>&1; echo "cpu-bench rc=$? $(( $(date +%s)-T0 ))s" >>$O/steps.log
(cd $R && timeout 60 taskset -c 1,2 $B/cpubench -threads 2 -reps 5 -softmax=false -shapes '1,8,2048,128,0' -cpuprofile $O/d128-t2.prof) >$O/prof.out 2>&1; echo "profile rc=$? $(( $(date +%s)-T0 ))s" >>$O/steps.log
# (nn: not carried, over the payload limit)
cat $O/steps.log
for f in $O/bf16-*.log; do echo "== $f"; grep -E "^\| [0-9]" $f | awk -F'|' '{print $2,$3,$4,$6,$7,$8}'; done
grep -E "^\| |peak|triad" $O/cpu-bench.log | head -20
grep -E "^\|" $O/prof.out
grep -E "Benchmark" $O/nn-matmul.log | head -40
