#!/bin/bash
# Fifth session, call 5: main after merging gpubwd (014b43f+): the BF16 backward's tests on the
# merged tree, the machine with the BF16 backward scratch (TestCUDAAttentionPrecisions, new),
# the machine's CUDA suite, and attnbench -prec bf16 with the new defaults and attnbench's
# float64 dK/dV reference.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s5g; O=${OUT:-/tmp/out}/s5g; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 pass=$(grep -c -- '--- PASS' $O/$1.log) fail=$(grep -c -- '--- FAIL' $O/$1.log) $(( $(date +%s)-T0 ))s" | tee -a $O/summary.txt; }
cd $B && xz -d -f -T8 *.xz && chmod +x *.test attnbench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/summary.txt
(cd $R/machine && timeout 90 $B/machine.test -test.v -test.count=1 -test.run 'CUDA') >$O/machine.log 2>&1; st machine
(cd $R/cuda && timeout 120 $B/cuda.test -test.v -test.count=1 -test.run 'MMABwd|BackwardScratch|BwdEmul|AttentionMMADevice|PickMMA') >$O/cuda.log 2>&1; st cuda
(cd $R && timeout 200 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec bf16) >$O/attnbench.log 2>&1; st attnbench
grep -h -- '--- FAIL' $O/*.log | head -20 >>$O/summary.txt
cd $O/.. && tar czf s5g.tgz s5g
