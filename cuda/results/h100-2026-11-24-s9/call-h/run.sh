#!/bin/bash
# Ninth session, call H: the converters' throttle in the fused persistent forward (variants 20
# and 21: at most 2 G tasks past the producer's key head). The forward's device tests over every
# variant, the kept-planes tests, racecheck and memcheck on the masked-key forward test, ncu on
# v20 at d = 128 N = 1024 causal (DRAM bytes), then attnbench bf16 (no PyTorch) for the times.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9h; O=${OUT:-/tmp/out}/s9h; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
run tests cuda 200 $B/cuda.test -test.v -test.count=1 -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionMMABuffersScratch|TestAttentionKeptPlanes|TestPickMMA'
run racecheck cuda 120 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool racecheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$'
run memcheck cuda 120 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMAMaskedKeysInert$'
(cd $R/cuda && timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:fg_attn_fwd_wgmma_v20_bf16_d128 --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d128/n1024/causal=true/bf16/^v20\$" -test.benchtime 2x) >$O/ncu-v20.log 2>&1
echo "ncu rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt
for r in 1 2; do (cd $R && timeout 90 $B/attnbench -prec bf16 -reps 10) >>$O/attnbench.log 2>&1; echo "attnbench $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/bench.txt; done
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/bench.txt; cat $O/failures.txt 2>/dev/null; } >$O/summary.txt
cat $O/summary.txt
grep -E "Duration|DRAM Throughput|Compute \(SM\)|L2 Hit" $O/ncu-v20.log
grep "bf16  fwd" $O/attnbench.log | sed 's/(fg.*//;s/ours {B:[0-9]* H:16 //;s/, err.*//'
cd $O/.. && tar czf s9h.tgz s9h
