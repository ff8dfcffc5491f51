#!/bin/bash
# Twelfth session, helper nn14, second run (CPU only): are the 2-thread readings of nn's products
# bound by one slow CPU of the pair? The first run (run.sh) showed, on CPUs 1,2, the kernel alone
# in L1 at 53-77% of the FMA peak with GOMAXPROCS 2 and 77-94% pinned to CPU 1, and the same
# MatMulGPT readings 2x apart in two rounds. Same binaries as run.sh (branch nn14 at 742dec7).
#  (1) per-CPU sweep: each CPU alone, the AVX-512 FMA peak loop and the 6x64 kernel alone in L1
#      (BenchmarkPeakFMA/avx512, BenchmarkChunks/k256/chain), 0.2 s each;
#  (2) BenchmarkMatMulGPT/M4096 at 2 threads, alternating pick()'s pair (as run.sh: CPUs 1,2) and
#      the two CPUs fastest in (1) on the kernel (P F P F);
#  (3) BenchmarkMatMulGPT/M4096 at 1 thread on the fastest CPU;
#  (4) the per-CPU sweep again (did the fast CPUs stay fast?).
# NN14_QUICK=1: short runs. About 1.5 minutes; logs under $OUT/nn14b, tarred to $OUT/nn14b.tgz.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/nn14; O=${OUT:-/tmp/out}/nn14b; mkdir -p $O
T0=$(date +%s)
ticks() { awk '/^cpu /{printf "user %s sys %s idle %s steal %s", $2, $4, $5, $9}' /proc/stat; }
st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s $(ticks)" | tee -a $O/steps.log; }
X=$(mktemp -d)
for b in gemm nn; do xz -dc -T8 $B/$b.test.xz >$X/$b.test; chmod +x $X/$b.test; done
{ cat $B/commit; lscpu | grep -E 'Model name|^CPU\(s\)|MHz'; uptime; echo "start $(ticks)"; } >$O/steps.log 2>&1
vmstat 1 >$O/vmstat.txt 2>&1 & VM=$!
export CUDA_VISIBLE_DEVICES= FLASHGORGON_DEVICE=cpu
sys=/sys/devices/system/cpu
eval "$(sed -n '/^expand() {/,/^}/p; /^pick() {/,/^}/p' $R/scripts/cpu-bench.sh)"
allowed=$(grep -s '^Cpus_allowed_list:' /proc/self/status | awk '{print $2}')
mapfile -t cpus < <(expand "${allowed:-$(cat $sys/online)}" | sort -n)
G=$R/internal/kernels/gemm; Q=${NN14_QUICK:-0}
n() { echo $((Q ? 1 : $1)); }
sweep() { # $1: output file; prints "cpu peak_GFLOP/cpu-s chain_GFLOP/s"
  for c in "${cpus[@]}"; do
    out=$(cd $G && timeout 10 taskset -c $c $X/gemm.test -test.run '^$' -test.bench 'PeakFMA/avx512$|Chunks/k256/chain$' -test.cpu 1 -test.benchtime $((Q ? 20 : 200))ms 2>&1)
    echo "$out" | sed "s/^/cpu$c /" >>$1.raw
    pk=$(echo "$out" | awk '/PeakFMA/{for(i=1;i<=NF;i++) if($(i+1)=="GFLOP/cpu-s") print $i}')
    ch=$(echo "$out" | awk '/Chunks/{for(i=1;i<=NF;i++) if($(i+1)=="GFLOP/s") print $i}')
    echo "$c $pk $ch"
  done >$1
}
sweep $O/sweep1.txt; st "sweep 1" $?
fast=$(sort -k3 -gr $O/sweep1.txt | head -2 | awk '{print $1}' | sort -n | paste -sd,)
best=$(sort -k3 -gr $O/sweep1.txt | head -1 | awk '{print $1}')
pair=$(pick 2)
echo "pick()'s pair $pair, fastest pair on the kernel $fast, fastest CPU $best" | tee -a $O/steps.log
f=$O/bench.txt
for r in 1 2; do
  for set in $pair $fast; do
    echo "# MatMulGPT 2 threads on CPUs $set, round $r" >>$f
    (cd $R/nn && timeout 60 taskset -c $set $X/nn.test -test.run '^$' -test.bench 'MatMulGPT/M4096' -test.cpu 2 -test.benchtime $(n 20)x) >>$f 2>&1; st "MatMulGPT $set $r" $?
  done
done
echo "# MatMulGPT 1 thread on CPU $best" >>$f
(cd $R/nn && timeout 60 taskset -c $best $X/nn.test -test.run '^$' -test.bench 'MatMulGPT/M4096' -test.cpu 1 -test.benchtime $(n 10)x) >>$f 2>&1; st "MatMulGPT 1 $best" $?
sweep $O/sweep2.txt; st "sweep 2" $?
kill $VM; uptime >>$O/steps.log; rm -rf $X
paste $O/sweep1.txt $O/sweep2.txt >$O/sweeps.txt; cat $O/sweeps.txt
cd $O && tar czf ../nn14b.tgz . && ls -la $O
