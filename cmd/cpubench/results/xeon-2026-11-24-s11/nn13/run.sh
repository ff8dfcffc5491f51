#!/bin/bash
# Eleventh session, helper nn13: nn's matrix products on the GPU machine's Xeon, branch nn13 (CPU only).
# Binaries: nn.old.test from main (34ba425), nn.new.test and gemm.new.test from branch nn13 (see
# commit), gemm.exp.test from nn13 plus exp.patch (experiment knobs, not committed; in the branch at
# cmd/cpubench/results/dev-2026-11-24-s11/nn13/exp.patch).
# For T = 2, 16 and 1 threads, pinned with taskset to T distinct physical cores (scripts/cpu-bench.sh's
# pick(), read from the checkout's copy):
#  (1) nn's BenchmarkMatMulGPT/M4096, old and new binaries alternating (T=2: old new old new; T=16: old new);
#  (2) gemm's BenchmarkPackFirstAB/T4096 (new binary: xᵀ·g through GemmDepth with and without the
#      packing twin, alternating in one process: the change itself);
#  (3) gemm's BenchmarkGemmRounds (new binary; comparable with the s10 run's nn12/bench-*.txt);
#  (4) T=2 and T=1 only: gemm.exp.test's BenchmarkExp, configurations alternating in rounds:
#      xᵀ·g: old (main), new (nn13), pf (prefetch the next depth block), kc128, kc256 (256 where the rules
#      give 128: 256×96's 512-deep parts, 1024×256's paged A), pkB (pack g), inB (g in place),
#      v13kc128 (variant 13's panel order: a B strip in L1 read by a group's row strips, depth blocks of
#      128), v4 (the 12×32 kernel: half the B bytes a depth step);
#      the 96-wide head's x·W and xᵀ·g: new against even (an 8×48 kernel for n = 96: two strips, no
#      6×32 edge strip) and nw (the 12×32 kernel for n = 96).
# NN13_QUICK=1 runs each benchmark once (a check of the script).
# About 3 minutes; logs under $OUT/nn13, tarred to $OUT/nn13.tgz.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/nn13; O=${OUT:-/tmp/out}/nn13; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -k -f -T8 *.test.xz; chmod +x *.test)
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3|Flags' | cut -c1-300
  command -v taskset; uptime; } >$O/steps.log 2>&1
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
sys=/sys/devices/system/cpu
eval "$(sed -n '/^expand() {/,/^}/p; /^pick() {/,/^}/p' $R/scripts/cpu-bench.sh)"
allowed=$(grep -s '^Cpus_allowed_list:' /proc/self/status | awk '{print $2}')
mapfile -t cpus < <(expand "${allowed:-$(cat $sys/online)}" | sort -n)
G=$R/internal/kernels/gemm; Q=${NN13_QUICK:-0}
XTG="old:0,0,0,0,0,0,1;new:0;pf:0,0,0,0,4096;kc128:128;kc256:256;pkB:0,1;inB:0,2;v13kc128:128,0,0,13;v4:0,0,0,4"
for T in 2 16 1; do
  set=$(pick $T); pre=(); command -v taskset >/dev/null && pre=(taskset -c $set)
  f=$O/bench-$T.txt
  echo "## $T threads on CPUs $set (${pre[*]:-unpinned})" | tee -a $O/steps.log >>$f
  if [ $T != 1 ]; then
    ways=(old new old new); [ $T = 16 ] && ways=(old new)
    for w in "${ways[@]}"; do
      echo "# MatMulGPT $w" >>$f
      (cd $R/nn && timeout 40 "${pre[@]}" $B/nn.$w.test -test.run '^$' -test.bench 'MatMulGPT/M4096' -test.cpu $T -test.benchtime $((Q ? 1 : 10))x) >>$f 2>&1; st "MatMulGPT $w $T" $?
    done
    (cd $G && timeout 45 "${pre[@]}" $B/gemm.new.test -test.run '^$' -test.bench 'PackFirstAB/T4096' -test.cpu $T -test.benchtime $((Q ? 1 : 6))x) >>$f 2>&1; st "PackFirstAB $T" $?
    (cd $G && timeout 60 "${pre[@]}" $B/gemm.new.test -test.run '^$' -test.bench 'GemmRounds' -test.cpu $T -test.benchtime $((Q ? 1 : 16))x) >>$f 2>&1; st "GemmRounds $T" $?
  fi
  if [ $T != 16 ]; then
    (cd $G && FG_PROD=xtg FG_CONFIGS="$XTG" timeout 60 "${pre[@]}" $B/gemm.exp.test -test.run '^$' -test.bench 'Exp/' -test.cpu $T -test.benchtime $((Q ? 1 : 6))x) >>$f 2>&1; st "Exp xtg $T" $?
    (cd $G && FG_PROD=xW,xtg FG_CONFIGS="new:0;even:0,0,0,0,0,0,0,1;nw:0,0,0,0,0,128" timeout 30 "${pre[@]}" $B/gemm.exp.test -test.run '^$' -test.bench 'Exp/D256/256x96/' -test.cpu $T -test.benchtime $((Q ? 1 : 20))x) >>$f 2>&1; st "Exp head $T" $?
  fi
done
uptime >>$O/steps.log
cd $O && tar czf ../nn13.tgz . && ls -la $O
