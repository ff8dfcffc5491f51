#!/bin/bash
# Twelfth session, helper nn14: nn's matrix products at examples/gpt's shapes on the GPU machine's
# Xeon (CPU only). Binaries (see commit): nn.test (branch nn14; nn's products run main's code by
# default) and gemm.test (branch nn14: BenchmarkNNAB, its configurations alternating in one process).
# T = 2 then 1 thread, pinned with taskset to T distinct physical cores (scripts/cpu-bench.sh's pick()):
#  (1) T=2: nn's BenchmarkMatMulGPT/M4096 (the issue's metric), twice, before and after (2);
#  (2) gemm's BenchmarkNNAB on the weight gradients xᵀ·g (five 4096-token shapes and 256×64 over
#      2048): configurations main, swap (transposed orientation for n < m), pfA (packing twin that
#      prefetches A 24 steps ahead), packAT (variant 15), inplace (no twin), kc256 (depth blocks of
#      256 in the parts), units4 (4 units a worker), alternating in rounds, each checked against
#      float64 first; every round also times the FMA peak loop and the 6×64 kernel alone in L1
#      (tile), so that *_rpct reads a way against the round's own peak;
#  (3) T=2: BenchmarkNNAB on x·W and g·Wᵀ, main against pfA (which does not change them: noise);
#  (4) BenchmarkChunks/k256 (the kernel alone) and BenchmarkPeakFMA.
# /proc/stat's steal and idle ticks are logged around every step, vmstat 1 runs throughout.
# NN14_QUICK=1 runs each benchmark once (a check of the script). About 2 minutes; logs under
# $OUT/nn14, tarred to $OUT/nn14.tgz.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/nn14; O=${OUT:-/tmp/out}/nn14; mkdir -p $O
T0=$(date +%s)
ticks() { awk '/^cpu /{printf "user %s sys %s idle %s steal %s", $2, $4, $5, $9}' /proc/stat; }
st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s $(ticks)" | tee -a $O/steps.log; }
X=$(mktemp -d) # the binaries, decompressed outside the carried folder
for b in gemm nn; do xz -dc -T8 $B/$b.test.xz >$X/$b.test; chmod +x $X/$b.test; done
{ cat $B/commit; lscpu | grep -E 'Model name|^Model:|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3|MHz|Flags' | cut -c1-300
  command -v taskset; uptime; echo "start $(ticks)"; } >$O/steps.log 2>&1
vmstat 1 >$O/vmstat.txt 2>&1 & VM=$!
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
sys=/sys/devices/system/cpu
eval "$(sed -n '/^expand() {/,/^}/p; /^pick() {/,/^}/p' $R/scripts/cpu-bench.sh)"
allowed=$(grep -s '^Cpus_allowed_list:' /proc/self/status | awk '{print $2}')
mapfile -t cpus < <(expand "${allowed:-$(cat $sys/online)}" | sort -n)
G=$R/internal/kernels/gemm; Q=${NN14_QUICK:-0}
n() { echo $((Q ? 1 : $1)); }
ALL=main,swap,pfA,packAT,inplace,kc256,units4
for T in 2 1; do
  set=$(pick $T); pre=(); command -v taskset >/dev/null && pre=(taskset -c $set)
  f=$O/bench-$T.txt
  echo "## $T threads on CPUs $set (${pre[*]:-unpinned})" | tee -a $O/steps.log >>$f
  if [ $T = 2 ]; then
    echo "# MatMulGPT round 1" >>$f
    (cd $R/nn && timeout 60 "${pre[@]}" $X/nn.test -test.run '^$' -test.bench 'MatMulGPT/M4096' -test.cpu 2 -test.benchtime $(n 20)x) >>$f 2>&1; st "MatMulGPT 1" $?
  fi
  echo "# NNAB xtg" >>$f
  (cd $G && NN14_WAYS=$ALL NN14_PRODS=xtg timeout 150 "${pre[@]}" $X/gemm.test -test.run '^$' -test.bench 'NNAB/' -test.cpu $T -test.benchtime $(n 12)x) >>$f 2>&1; st "NNAB xtg $T" $?
  if [ $T = 2 ]; then
    echo "# NNAB xW gWt (control)" >>$f
    (cd $G && NN14_WAYS=main,pfA NN14_PRODS=xW,gWt timeout 60 "${pre[@]}" $X/gemm.test -test.run '^$' -test.bench 'NNAB/' -test.cpu 2 -test.benchtime $(n 8)x) >>$f 2>&1; st "NNAB control" $?
    echo "# MatMulGPT round 2" >>$f
    (cd $R/nn && timeout 60 "${pre[@]}" $X/nn.test -test.run '^$' -test.bench 'MatMulGPT/M4096' -test.cpu 2 -test.benchtime $(n 20)x) >>$f 2>&1; st "MatMulGPT 2" $?
  fi
  echo "# Chunks, PeakFMA" >>$f
  (cd $G && timeout 30 "${pre[@]}" $X/gemm.test -test.run '^$' -test.bench 'Chunks/k256|PeakFMA' -test.cpu $T -test.count $(n 3)) >>$f 2>&1; st "Chunks $T" $?
done
kill $VM; uptime >>$O/steps.log; rm -rf $X
cd $O && tar czf ../nn14.tgz . && ls -la $O
