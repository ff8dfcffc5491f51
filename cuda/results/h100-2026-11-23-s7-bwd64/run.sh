#!/bin/bash
# Seventh session, helper bwd64: one device call (`CALL=n bash .devbin/bwd64/run.sh` from the
# repository root of the lead's checkout; the test binary and attnbench built from branch bwd64
# on the development machine, and that branch's ptx/attention_hopper_bwd.ptx, come in
# .devbin/bwd64). Steps, each with its own timeout, logs to $OUT/bwd64-$CALL (tarred):
#   ptxas -v (CUDA 13, sm_90a) of the Hopper backward module, and the SASS of the default
#     kernels (cuobjdump of ptxas's cubin), in the background;
#   the backward's device tests on the pairs whose names match $ONLY (and each default pair):
#     TestAttentionMMABwdDevice, TestAttentionMMABwdMaskedKeysInert, and $EXTRA tests;
#   compute-sanitizer memcheck of the first two (-test.short);
#   TestAttentionMMABwdTiming -mmabwd.cross (BF16: every Hopper dK/dV x dQ pair matching
#     $ONLY_T, with the per-launch split: pre-pass, dK/dV, dQ);
#   attnbench -prec bf16 beside PyTorch SDPA (the default kernels);
#   with NCU=1, ncu of the first d = 64 dK/dV and dQ launches of attnbench -n 1024 -d 64.
# Call 1: CALL=1 ONLY=fx (ONLY_T = ONLY), no EXTRA, no ncu. Call 2: the regular expressions below.
R=$PWD; B=$R/.devbin/bwd64; O=${OUT:-/tmp/out}/bwd64-${CALL:-1}; mkdir -p $O
if [ "${CALL:-1}" = 2 ]; then
  # Tests: every new kernel that is not a default (the defaults run in every pair), and the
  # mma.sync kernels on the planes (fg_attn_bwd_bf16_prep4 before them too).
  ONLY='^wgmma fx dkdv n128 m128|^wgmma fx (b3|pipe) |\+ wgmma ovl fx dq |\+ wgmma ovl fx pipe dq m128 n64|^pre |\+ pre |^fused'
  # Timing: the sixth session's default pairs (and with the new dQ kernel), every Fx dK/dV
  # kernel with every Fx dQ kernel.
  ONLY_T='^wgmma dkdv n64 m128 s128 \+ wgmma ovl (fx pipe )?dq m128 n128$|^wgmma dkdv n128 m64 s64 \+ wgmma (fx )?dq m128 n128$|^wgmma fx (b3 |pipe )?dkdv [^+]*\+ wgmma (ovl )?fx'
  EXTRA='|TestAttentionMMABwdBuffersScratch|TestBackwardScratch'
fi
ONLY_T=${ONLY_T:-$ONLY}
export CUDA_CACHE_MAXSIZE=4294967296
T0=$(date +%s); st() { echo "$1 rc=$2 pass=$(grep -c -- '--- PASS' $O/$1.log) fail=$(grep -c -- '--- FAIL' $O/$1.log) $(grep 'ERROR SUMMARY' $O/$1.log | tail -1) $(( $(date +%s)-T0 ))s" | tee -a $O/summary.txt; }
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/summary.txt
NV=/usr/local/cuda/bin
( { $NV/ptxas --version | tail -1; timeout 60 $NV/ptxas -arch=sm_90a -v -o /tmp/hb.cubin $B/attention_hopper_bwd.ptx; echo "rc=$?"; } >$O/ptxas.log 2>&1
  for k in fg_attn_bwd_wgmma_dkdv_bf16_d64_n64_m128_fx fg_attn_bwd_wgmma_dq_bf16_d64_m128_n128_ovl_fx_pipe; do
    timeout 20 $NV/cuobjdump -sass -fun $k /tmp/hb.cubin; done >$O/sass.txt 2>&1 ) &
PP=$!
TESTS='^(TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert'${EXTRA:-}')$'
(cd $R/cuda && timeout ${TEST_S:-80} $B/cuda.test -test.v -test.count=1 -test.run "$TESTS" -mmabwd.only="$ONLY") >$O/tests.log 2>&1; st tests $?
wait $PP
echo "ptxas $(tail -1 $O/ptxas.log) $(grep -c 'Used' $O/ptxas.log) kernels, spills: $(grep 'spill' $O/ptxas.log | grep -vc ' 0 bytes spill stores'), serialized: $(grep -c serializ $O/ptxas.log) $(( $(date +%s)-T0 ))s" | tee -a $O/summary.txt
grep -h -- '--- FAIL\|mma_bwd_test.go:2[0-9][0-9]: bf16' $O/tests.log | head -40 >>$O/summary.txt
(cd $R/cuda && FLASHGORGON_CUDA_POOL=off timeout ${MEM_S:-70} $NV/compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda.test -test.short -test.v -test.count=1 -test.run '^(TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert)$' -mmabwd.only="$ONLY") >$O/memcheck.log 2>&1; st memcheck $?
(cd $R/cuda && timeout ${TIME_S:-70} $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs=bf16 -mmabwd.pairs=bf16 -mmabwd.cross -mmabwd.only="$ONLY_T") >$O/timing.log 2>&1; st timing $?
(cd $R && timeout ${BENCH_S:-110} $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16) >$O/attnbench.log 2>&1; st attnbench $?
if [ "${NCU:-0}" = 1 ]; then
  (cd $R && timeout ${NCU_S:-45} $NV/ncu --kernel-name regex:wgmma_d --launch-count 2 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section Occupancy $B/attnbench -n 1024 -d 64 -prec bf16) >$O/ncu.log 2>&1; st ncu $?
fi
cd $O/.. && tar czf bwd64-${CALL:-1}.tgz bwd64-${CALL:-1}
