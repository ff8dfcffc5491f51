#!/bin/bash
# fwd26 (thirteenth session, helper fwd26): forward variant 26 = variant 25 (Exact and TF32 on
# wgmma, persistent) with the K/V^T pre-pass fused into the kernel (the producer warpgroup's
# warps 1-3 convert the tiles, a flag per tile; setmaxnreg Exact 40/232, TF32 56/224).
#   1. ptxas -v on the tree's cuda/ptx/attention_hopper_exact.ptx (registers, spills, C75 warnings)
#   2. the forward's device tests on variants 24/25/26 only (-mma.only), TestPickMMA etc.
#   3. memcheck and racecheck on the masked-keys test, variant 26 only (both cases: d = 64 and 128)
#   4. BenchmarkAttentionMMA Exact and TF32, v25 and v26 alternating, 5 rounds of 10 runs
# Run from the repository root with $OUT set: bash .devbin/fwd26/run.sh
# Everything lands in $OUT/fwd26.tgz; $OUT/summary.txt is the verdict (also printed at the end).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s13b; L=/tmp/fwd26; O=${OUT:-/tmp/out}
rm -rf $L; mkdir -p $L $O
T0=$(date +%s)
(cd $B && xz -d -f -T8 cuda.test.xz && chmod +x cuda.test) || { echo "no binary" >$O/summary.txt; exit 1; }
T=$B/cuda.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime
  echo "tree's attention_hopper_exact.ptx sha256 $(sha256sum $R/cuda/ptx/attention_hopper_exact.ptx | cut -c1-16) (binary's: $(cat $B/ptx.sha))"; } >$L/tools.log 2>&1
S=()
step() { # name timeout cmd...: run in cuda/, log to $L/name.log, one summary line
  local name=$1 to=$2; shift 2
  local t0=$(date +%s)
  (cd $R/cuda && timeout $to "$@") >$L/$name.log 2>&1
  local rc=$?
  RC=$rc FAILS=$(grep -c -- '--- FAIL' $L/$name.log)
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $L/$name.log) fail=$(grep -c -- '--- FAIL' $L/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$name.log | tail -1)")
  grep -- '--- FAIL' $L/$name.log | head -12 | sed "s/^/  $name: /" >>$L/failures.txt
}
# 1. ptxas
(cd $R && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -v cuda/ptx/attention_hopper_exact.ptx -o /dev/null) >$L/ptxas.log 2>&1
S+=("ptxas: rc=$? $(( $(date +%s)-T0 ))s")
# 2. tests (the FMA kernel runs too in TestAttentionMMADevice: it is the list's first entry)
step cuda 200 $T -test.v -test.count=1 -mma.only '_v2[456]_' -test.run 'TestAttentionMMADevice|TestAttentionMMAMaskedKeysInert|TestAttentionMMADeterminism|TestAttentionMMABuffersScratch|TestPickMMA|TestForwardScratch|TestKeptLayout|TestAttentionKeptPlanes'
CUDA_RC=$RC CUDA_FAILS=$FAILS
# 3. sanitizers, variant 26 only (not after a hang: rc 124)
for tool in memcheck racecheck; do
  [ $CUDA_RC = 124 ] && { S+=("$tool: skipped (the tests hung)"); continue; }
  step $tool $([ $tool = memcheck ] && echo 90 || echo 120) env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $T -test.v -test.count=1 -mma.only '_v26_' -test.run '^TestAttentionMMAMaskedKeysInert$/(B2_H2_Hkv1|B2_H4_Hkv2)/NaN'
done
# 4. timing, alternating (only once the tests have passed)
for r in 1 2 3 4 5; do
  [ $CUDA_RC != 0 -o $CUDA_FAILS != 0 ] && { S+=("timing: skipped (tests rc=$CUDA_RC, $CUDA_FAILS failures)"); break; }
  for v in 25 26; do
    [ $(( $(date +%s)-T0 )) -gt 300 ] && { S+=("timing: stopped before round $r v$v (time)"); break 2; }
    (cd $R/cuda && timeout 60 $T -test.run '^$' -test.bench "AttentionMMA/d(64|128)/.*/.*/(exact|tf32)/^v$v\$" -test.benchtime 10x) 2>&1 | grep -E '^Benchmark|FAIL|panic' | sed "s/^/r$r /" >>$L/fwd.log
  done
done
# summary: ms per call, mean over rounds, v26 / v25
{ echo "==== fwd26 summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $L/tools.log; printf '%s\n' "${S[@]}"; cat $L/failures.txt 2>/dev/null
  echo "---- ptxas (v25, v26 and the pre-passes: registers, spills; any C75 serialization warning)"
  grep -E "Compiling entry|spill|Used|C75|rror" $L/ptxas.log | grep -vE "Compile time" | paste - - - | grep -E "v2[56]|prep|C75|rror" | sed -E 's/ptxas info *: //g; s/Function properties for [^ ]*//; s/for .sm_90a.//'
  grep -iE "C75|error|warning" $L/ptxas.log | head -8
  echo "---- v26 errors against float64 (ratio: to the naive same-precision loop's error, must stay <= 2)"
  echo "v26 error lines: $(grep -cE 'v26 *: O error' $L/cuda.log) (v25: $(grep -cE 'v25 *: O error' $L/cuda.log)); the d = 128 N = 1025 ones:"
  grep -A12 -E "n1025/d128" $L/cuda.log | grep -E "v2[56] *: O error" | sed 's/.*attention_mma_test.go:[0-9]*: //' | head -4
  grep -E "v26" $L/cuda.log | grep -oE "ratio [0-9.]+" | sort -k2 -n | tail -1 | sed 's/^/worst v26 /'
  grep -E "v25" $L/cuda.log | grep -oE "ratio [0-9.]+" | sort -k2 -n | tail -1 | sed 's/^/worst v25 /'
  echo "---- timing: ms per forward (mean over rounds, min-max), v26 / v25"
  awk '{ split($2, a, "/"); key=a[2]" "a[3]" "a[4]" "a[5]; v=a[6]; ms=$4/1e6;
         k=key" "v; n[k]++; s[k]+=ms; if (!(k in mn) || ms<mn[k]) mn[k]=ms; if (ms>mx[k]) mx[k]=ms; keys[key]=1 }
       END { for (key in keys) { x=key" v25"; y=key" v26"; if (n[x] && n[y]) printf "%-32s v25 %8.3f (%.3f-%.3f)  v26 %8.3f (%.3f-%.3f)  v26/v25 %.3f  [%d rounds]\n", key, s[x]/n[x], mn[x], mx[x], s[y]/n[y], mn[y], mx[y], (s[y]/n[y])/(s[x]/n[x]), n[y] } }' $L/fwd.log | sort -V
} >$L/summary.txt 2>&1
cp $L/summary.txt $O/summary.txt
tar czf $O/fwd26.tgz -C /tmp fwd26
cat $O/summary.txt
