#!/bin/bash
# Fourteenth session, helper x128s: the spills of the d = 128 Exact dK/dV kernel (ws1,
# fg_attn_bwd_wgmma_dkdv_exact_d128_n64_m32_ws_raw_one). 1) ptxas -v on the module (the default
# and its runnable forms _w1 _w0 _w01 _vs _vsw1 _vsw01 _kr _vskr) and on the diagnostic PTX variants
# (variants/x128s_<edit>.ptx, entries x128s_<edit>_v<V>, V = FgWs1 bits 1 W1, 2 W0, 4 VS, 8 KR; for
# ptxas only: wg0only / wg1only = the other warpgroup's branch returns at once, wg0_konly = dP^T's
# A from K hi (V hi's registers dead), wg0_asmem = A hi from shared memory (no K hi/V hi
# registers), wg0_nomask / wg0_nopds = fg_bwd_pds_t without masks / absent, wg1_dvonly = dK's
# chains gone). 2) the backward's device tests for the forms, racecheck and memcheck on
# vsw01 and kr, TestAttentionMMABwdTiming (exact) of the forms beside the default.
# Budget: under 8 minutes.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/x128s; O=${OUT:-/tmp/out}/x128s; mkdir -p $O
T0=$(date +%s)
ONLY='one (w1|w0|w01|vs|vsw1|vsw01|kr|vskr) '
cd $B && xz -d -f -T8 *.xz variants/*.xz 2>/dev/null; chmod +x cuda.test
rm -rf $B/cuda && mkdir -p $B/cuda && tar -C $B/cuda -xf $B/kernels.tar
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
# summary: entry, registers, stack frame, spill stores/loads, per ptxas log
summ() { awk '/Compiling entry function/{e=$0; sub(/.*function .?/,"",e); sub(/.? for .*/,"",e)}
  /bytes stack frame/{st=$1; sp=$5; sl=$9} /Used [0-9]+ registers/{r=$0; sub(/.*Used /,"",r); sub(/ registers.*/,"",r); printf "%-58s regs %3s  stack %4s  spill st %4s ld %4s\n", e, r, st, sp, sl}' "$1"; }
(cd $B && timeout 120 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_exact_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1 &
for f in $B/variants/*.ptx; do n=$(basename $f .ptx); (timeout 150 /usr/local/cuda/bin/ptxas -arch=sm_90a -v $f -o /dev/null >$O/ptxas-$n.log 2>&1) & done
wait
echo "ptxas done $(( $(date +%s)-T0 ))s" >>$O/tools.log
summ $O/ptxas.log | grep -E "dkdv_exact_d128|dq_exact_d128" >>$O/tools.log
for f in $B/variants/*.ptx; do n=$(basename $f .ptx); summ $O/ptxas-$n.log >>$O/tools.log; done
grep -hE "C75|error|rror" $O/ptxas*.log | sort | uniq -c | head >>$O/tools.log
# where the default's spills are: its SASS (ws1-v0.sass.xz comes back), and a map of the local
# loads and stores (LDL, STL) among the landmarks: MUFU.EX2 (warpgroup 0's exponentials), BAR,
# WARPSYNC/EXIT, HGMMA counts between them
(cd $B && timeout 60 /usr/local/cuda/bin/ptxas -arch=sm_90a -e x128s_base_v0 -o $O/ws1-v0.cubin variants/x128s_base.ptx && /usr/local/cuda/bin/cuobjdump -sass $O/ws1-v0.cubin >$O/ws1-v0.sass) >>$O/tools.log 2>&1
if [ -s $O/ws1-v0.sass ]; then
  awk '/HGMMA/{h++; next} /LDL|STL|MUFU.EX2|BAR|EXIT|BRA/{ if (h) {print "    (" h " HGMMA)"; h=0} m=$0; gsub(/  +/," ",m); print NR": "substr(m,1,110)}' $O/ws1-v0.sass | grep -vE "MUFU.EX2" >$O/sassmap.log
  echo "ws1 v0 SASS: $(grep -c LDL $O/ws1-v0.sass) LDL, $(grep -c STL $O/ws1-v0.sass) STL, $(grep -c HGMMA $O/ws1-v0.sass) HGMMA, MUFU.EX2 lines $(grep -n MUFU.EX2 $O/ws1-v0.sass | head -1 | cut -d: -f1)-$(grep -n MUFU.EX2 $O/ws1-v0.sass | tail -1 | cut -d: -f1), EXIT lines $(grep -n EXIT $O/ws1-v0.sass | cut -d: -f1 | tr '\n' ' ')" >>$O/tools.log
  xz -T4 $O/ws1-v0.sass; rm -f $O/ws1-v0.cubin
fi
(cd $B/cuda && timeout 220 $B/cuda.test -test.count=1 -test.v -test.run 'TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestPickMMABwd|TestBackwardScratch' -mmabwd.only "$ONLY") >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:" $O/cuda.log | head -8 >>$O/tools.log
if ! grep -q -- '--- FAIL' $O/cuda.log && grep -q -- '--- PASS: TestAttentionMMABwdDevice' $O/cuda.log; then
  for tool in memcheck racecheck; do
    (cd $B/cuda && timeout 150 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$/B2_H4_Hkv2' -mmabwd.only 'one (vsw01|kr) ') >$O/$tool.log 2>&1 &
  done
  wait
  for tool in memcheck racecheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log; done
  left=$(( 460 - ($(date +%s)-T0) ))
  [ $left -gt 170 ] && left=170
  (cd $B/cuda && timeout $left $B/cuda.test -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs exact -mmabwd.pairs exact -mmabwd.only "$ONLY") >$O/timing.log 2>&1
  echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
fi
echo "done $(( $(date +%s)-T0 ))s" >>$O/tools.log
echo "== SASS map of the default (sassmap.log, first 25 lines)"; head -25 $O/sassmap.log 2>/dev/null | cut -c1-100
# the forms' errors beside the default's: each group of identical consecutive lines (same test
# case) should count 9 (the default pair and the 8 forms, all with the wgmma reg one dQ kernel)
grep -E "exact \[wgmma ws raw one" $O/cuda.log | sed -E 's/^ *attention_mma_bwd_test.go:[0-9]+: //; s/\[[^]]*\]//' | uniq -c >$O/errgroups.log
echo "== error groups (identical consecutive lines of the one pairs): $(wc -l <$O/errgroups.log), of which not 9: $(awk '$1 != 9' $O/errgroups.log | wc -l)"
awk '$1 != 9' $O/errgroups.log | head -5 | cut -c1-160
cat $O/tools.log
echo "== timing, d = 128: shape, then per pair f+b ms and prep/dkdv/dq ms"
sed -n '/^| 128 |/,$p' $O/timing.log | awk -F'|' '/^\| 128/{print "d128 N="$3" causal="$4" default f+b "$7} /exact bwd \[wgmma ws raw one/{n=$5; q=n; sub(/ \+ .*/,"",n); sub(/.*raw one /,"",n); sub(/dkdv.*/,"",n); sub(/.* \+ /,"",q); sub(/\].*/,"",q); printf "   %-8s + %-24s f+b %s %s\n", (n==""?"default":n), q, $7, $11}'
