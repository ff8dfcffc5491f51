#!/bin/bash
# Ninth session, call D: the pre-pass with each row's L, lres, dL loaded before its sum and a
# grid of 8 blocks a multiprocessor. The backward's and the kept planes' device tests, memcheck
# on kept planes (d = 64 and 128), the pre-passes by grid (BenchmarkAttentionBwdPrep), then,
# alone on the GPU, attnbench at every precision beside PyTorch SDPA, 10 repetitions each.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9d; O=${OUT:-/tmp/out}/s9d; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
run tests cuda 150 $B/cuda.test -test.v -test.count=1 -test.run 'TestKeptLayout|TestAttentionKeptPlanes|TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestAttentionMisalignedViews|TestParamsHeader'
run memcheck cuda 100 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionKeptPlanes$/(B2_H4|B1_H3)|^TestAttentionMMABwdBuffersScratch$'
(cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench 'AttentionBwdPrep' -test.benchtime 20x) >$O/bwdprep.log 2>&1
echo "bwdprep rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
(cd $R && timeout 420 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 10) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/bench.txt; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
grep -h -- "^--- " $O/tests.log >>$O/summary.txt
cat $O/summary.txt; grep -E "^Benchmark" $O/bwdprep.log | sed 's/BenchmarkAttentionBwdPrep\///;s/ns\/op//'
sed -n '/BF16\/FLASH fwd/,/^$/p' $O/attnbench.log
grep "bf16  fwd" $O/attnbench.log | sed 's/(fg.*//;s/ours {B:[0-9]* H:16 //;s/, err.*//'
cd $O/.. && tar czf s9d.tgz s9d
