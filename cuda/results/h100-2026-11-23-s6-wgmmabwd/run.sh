#!/bin/bash
# Sixth session, helper wgmmabwd: one device call (`bash .devbin/wgmmabwd/run.sh` from the
# repository root of the lead's checkout; the binaries and this branch's Hopper backward PTX
# come in .devbin/wgmmabwd). Steps, each with its own timeout, logs to $OUT/wgmmabwd (tarred):
# ptxas -v (CUDA 13, sm_90a) of the new module, the backward's device tests (every kernel pair,
# the Hopper ones included), the backward timing of every BF16 kernel pair at attnbench's
# shapes, and attnbench -prec bf16 against PyTorch (the default kernels). ONLY (optional):
# -mmabwd.only, to run and time only the kernel pairs whose names contain it (and the defaults).
R=$PWD; B=$R/.devbin/wgmmabwd; O=${OUT:-/tmp/out}/wgmmabwd; mkdir -p $O
export CUDA_CACHE_MAXSIZE=4294967296
T0=$(date +%s); st() { echo "$1 rc=$2 pass=$(grep -c -- '--- PASS' $O/$1.log) fail=$(grep -c -- '--- FAIL' $O/$1.log) $(( $(date +%s)-T0 ))s" | tee -a $O/summary.txt; }
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/summary.txt
NV=/usr/local/cuda/bin
{ $NV/ptxas --version | tail -1; timeout 40 $NV/ptxas -arch=sm_90a -v -o /dev/null $B/attention_hopper_bwd.ptx; echo "rc=$?"; } >$O/ptxas.log 2>&1
echo "ptxas $(tail -1 $O/ptxas.log) $(grep -c 'Used' $O/ptxas.log) kernels, spills: $(grep 'spill' $O/ptxas.log | grep -vc ' 0 bytes spill stores'), serialized: $(grep -c serializ $O/ptxas.log) $(( $(date +%s)-T0 ))s" | tee -a $O/summary.txt
(cd $R/cuda && timeout ${TEST_S:-100} $B/cuda.test -test.v -test.count=1 -test.run '^(TestAttentionMMABwdDevice|TestAttentionMMABwdMaskedKeysInert|TestAttentionMMABwdDeterminism|TestAttentionMMABwdBuffersScratch|TestBackwardScratch)$' -mmabwd.only="${ONLY:-}") >$O/tests.log 2>&1; st tests $?
grep -h -- '--- FAIL\|mma_bwd_test.go' $O/tests.log | head -30 >>$O/summary.txt
(cd $R/cuda && timeout ${TIME_S:-60} $B/cuda.test -test.v -test.count=1 -test.run '^TestAttentionMMABwdTiming$' -mmabwd.time -mmabwd.precs=bf16 -mmabwd.pairs=bf16 -mmabwd.only="${ONLY:-}") >$O/timing.log 2>&1; st timing $?
(cd $R && timeout ${BENCH_S:-70} $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16) >$O/attnbench.log 2>&1; st attnbench $?
cd $O/.. && tar czf wgmmabwd.tgz wgmmabwd
