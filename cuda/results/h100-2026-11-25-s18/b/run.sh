#!/bin/bash
# Eighteenth session, call B: the Late backward kernels (the new BF16 Hopper defaults) beside the
# seventh session's pairs: ptxas -v; the backward's device tests on both (memcheck and racecheck
# on the masked keys beside them); two rounds of TestAttentionMMABwdTiming over the four (d = 64)
# and eight (d = 128) pairs of old and new kernels; ncu stall samples of the new d = 64 kernels.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18b; O=${OUT:-/tmp/out}/s18b; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/cuda/ptx && timeout 200 /usr/local/cuda/bin/ptxas -arch=sm_90a -v attention_hopper_bwd.ptx -o /dev/null) >$O/ptxas.log 2>&1
grep -iE "warn|C75" $O/ptxas.log | sort | uniq -c | head -20 >>$O/tools.log
grep -A4 -E "Compiling entry function '(fg_attn_bwd_wgmma_dkdv_bf16_d64_n64_m64_fx_b3|fg_attn_bwd_wgmma_dq_bf16_d64_m128_n128_ovl_fx_pipe|fg_attn_bwd_wgmma_dkdv_bf16_d128_n128_m64|fg_attn_bwd_wgmma_dq_bf16_d128_m128_n128_fx|fg_attn_bwd_wgmma_dq_bf16_d128_m128_n64_ovl_fx_pipe)(_late)?'" $O/ptxas.log | grep -E "Compiling|registers|spill" >>$O/tools.log
ONLY='late|fx b3 dkdv|ovl fx pipe dq|wgmma dkdv n128 m64 s64|wgmma fx dq m128 n128'
for tool in memcheck racecheck; do
  (cd $R/cuda && timeout 200 env FLASHGORGON_CUDA_POOL=off /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdMaskedKeysInert$' -mmabwd.only "$ONLY") >$O/$tool.log 2>&1 &
done
(cd $R/cuda && timeout 240 $B/cuda.test -test.count=1 -test.v -mmabwd.only "$ONLY" -test.run 'TestPickMMABwd|TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestBackwardScratch|TestKeptLayout|TestAttentionKeptPlanes') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -E -- '--- FAIL' $O/cuda.log | head -20 >>$O/tools.log
grep -E "panic|Fatal|illegal|CUDA_ERROR|error:|over |want" $O/cuda.log | head -16 >>$O/tools.log
wait
for tool in memcheck racecheck; do echo "$tool: pass=$(grep -c -- '--- PASS' $O/$tool.log) fail=$(grep -c -- '--- FAIL' $O/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$tool.log | tail -1) $(( $(date +%s)-T0 ))s" >>$O/tools.log; done
TONLY='^wgmma fx b3 (late )?dkdv n64 m64 s64 \+ wgmma ovl fx pipe (late )?dq m128 n128$|^wgmma (late )?dkdv n128 m64 s64 \+ wgmma (fx|ovl fx pipe) (late )?dq m128 n(128|64)$'
for r in 1 2; do
  left=$(( 500 - ($(date +%s)-T0) )); [ $left -lt 60 ] && break
  (cd $R/cuda && timeout $left $B/cuda.test -test.run '^TestAttentionMMABwdTiming$' -test.v -mmabwd.time -mmabwd.precs bf16 -mmabwd.pairs bf16 -mmabwd.cross -mmabwd.only "$TONLY") >$O/timing$r.log 2>&1
  echo "timing $r rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
left=$(( 580 - ($(date +%s)-T0) ))
if [ $left -gt 40 ]; then
  (cd $R && timeout $left /usr/local/cuda/bin/ncu --set full --import-source yes -k 'regex:fg_attn_bwd_wgmma_(dkdv|dq)_bf16_d64' --launch-count 2 \
    -o $O/late64 $B/attnbench -prec bf16 -d 64 -n 4096 -reps 1) >$O/ncu-run.log 2>&1
  echo "ncu rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
  for k in dkdv dq; do /usr/local/cuda/bin/ncu -i $O/late64.ncu-rep -k regex:$k --page source --csv --print-source sass >$O/src-$k.csv 2>/dev/null; done
  /usr/local/cuda/bin/ncu -i $O/late64.ncu-rep --page details >$O/details.txt 2>&1
  rm -f $O/late64.ncu-rep
fi
rm -f $B/cuda.test $B/attnbench
cat $O/tools.log
grep -E "^  fg_attn|Duration|Issue Slots Busy|Registers Per" $O/details.txt
for r in 1 2; do echo "== round $r"; grep -E "^\| (64|128) |bf16 bwd \[" $O/timing$r.log | sed -E 's/\[fg_attn[^]]*\]//' | cut -c1-200; done
