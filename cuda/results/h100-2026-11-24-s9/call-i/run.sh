#!/bin/bash
# Ninth session, call I: the review's mends (Planes' launch plumbing in attention_buffers.go and
# startMMA, the machine's qkvKeys, BenchmarkAttentionBwdPrep on devOut): the kept-planes and
# Buffers scratch tests, the machine's attention precision tests, and the pre-pass benchmark.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9i; O=${OUT:-/tmp/out}/s9i; mkdir -p $O
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/summary.txt
(cd $R/cuda && timeout 120 $B/cuda.test -test.v -test.count=1 -test.run 'TestKeptLayout|TestAttentionKeptPlanes|TestAttentionMMABuffersScratch|TestAttentionMMABwdBuffersScratch|TestAttentionMisalignedViews|TestPickMMA') >$O/cuda.log 2>&1
echo "cuda rc=$? pass=$(grep -c -- '--- PASS' $O/cuda.log) fail=$(grep -c -- '--- FAIL' $O/cuda.log)" >>$O/summary.txt
(cd $R/machine && timeout 60 $B/machine.test -test.v -test.count=1 -test.run 'TestCUDAAttention') >$O/machine.log 2>&1
echo "machine rc=$? pass=$(grep -c -- '--- PASS' $O/machine.log) fail=$(grep -c -- '--- FAIL' $O/machine.log)" >>$O/summary.txt
(cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench 'AttentionBwdPrep/d64' -test.benchtime 10x) >$O/bwdprep.log 2>&1
echo "bwdprep rc=$?" >>$O/summary.txt
grep -- '--- FAIL' $O/*.log >>$O/summary.txt
cat $O/summary.txt; grep -E "^--- " $O/cuda.log $O/machine.log; grep ^Benchmark $O/bwdprep.log
