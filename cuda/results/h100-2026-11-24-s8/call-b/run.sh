#!/bin/bash
# Eighth session, call B: BenchmarkAttentionMMA for variants 15, 17, 19, 20 (each checked by
# call A's tests), racecheck of the persistent kernels, attnbench with variant 20 the BF16
# forward default.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s8b; O=${OUT:-/tmp/out}/s8b; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
}
run bench cuda 150 $B/cuda.test -test.run '^$' -test.bench 'AttentionMMA/d/n/causal/bf16/^v(15|17|19|20)$/' -test.benchtime 5x
CS=/usr/local/cuda/bin/compute-sanitizer
run racecheck-persist cuda 90 env FLASHGORGON_CUDA_POOL=off $CS --tool racecheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$'
(cd $R && timeout 200 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16) >$O/attnbench.log 2>&1
S+=("attnbench rc=$? $(( $(date +%s)-T0 ))s")
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; } | tee $O/summary.txt
grep TFLOP $O/bench.log | awk '{print $1, $(NF-1)}' | sed 's/BenchmarkAttentionMMA\///' >>$O/summary.txt
cd $O/.. && tar czf s8b.tgz s8b
