#!/bin/bash
# Fourteenth session, call D: ws1 (d = 128 Exact dK/dV) with quarters (call C) and fg_fresh on its one-stage
# tiles' base addresses (descriptors not hoisted out of the loop): ptxas -v, the exact backward device
# tests, racecheck, timing alternating with call C's binary.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s14d; X=$R/.devbin/x128; O=${OUT:-/tmp/out}/s14d; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test
(cd $R/.devbin/s14c && xz -d -f cuda.test.xz; chmod +x cuda.test)
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $B && timeout 90 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_exact_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -A2 -E "Compiling entry function 'fg_attn_bwd_wgmma_dkdv_exact_d128" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
grep -hE "C75|error" $O/ptxas.log | sort | uniq -c | head >>$O/tools.log
(cd $R/cuda && timeout 150 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism' -mmabwd.only 'one') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head >>$O/tools.log
if ! grep -q -- '--- FAIL' $O/cuda.log; then
  (cd $R/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool racecheck --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H4_Hkv2' -mmabwd.only 'one') >$O/racecheck.log 2>&1
  echo "racecheck: $(grep -E 'RACECHECK SUMMARY' $O/racecheck.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log
  for r in 1 2; do for v in s14c s14d; do
    (cd $R/cuda && timeout 100 $R/.devbin/$v/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs none) >$O/timing-$v-$r.log 2>&1
    echo "timing $v $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
  done; done
fi
cat $O/tools.log
for f in $O/timing-*.log; do echo "== $f"; sed -n '/^| 128 |/,$p' $f | grep -E "^\| 128" | sed -E "s/\[fg_attn[^]]*\]//" | awk -F'|' '{print $2,$3,$4,$7,$8,$11}'; done
