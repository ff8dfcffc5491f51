#!/bin/bash
# gputrain call 3: train-bench (GPU rows with eager and both torch.compile modes; CPU at 16 threads),
# the per-op profile after the changes, the device tests of the touched kernels, compute-sanitizer
# memcheck on the new kernels and a training step. Kept as the record of the call that the device
# pause prevented (see ../gputrain-2026-11-23.md for how to build what it runs).
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/gputrain; O=${OUT:-/tmp/out}/p3; mkdir -p $O
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
st() { echo "$1 rc=$2 $(el)s" >>$O/steps.log; }
cd $B && unxz -f *.xz && gunzip -f corpus.txt.gz; chmod +x gpt *.test
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/steps.log
# A quick run of the large config: with cuBLASLt, or (if that fails) with it switched off.
timeout 40 $B/gpt -data $B/corpus.txt -layers 4 -width 256 -heads 8 -context 256 -batch 16 -steps 20 -lr 1e-3 -min_lr 1e-4 -warmup 0 \
  -eval_every 1000000 -eval_batches 1 -sample_len 1 -quiet -out /tmp/q >$O/quick.log 2>&1; rc=$?; st quick $rc
if [ $rc != 0 ]; then export FLASHGORGON_CUBLASLT=/nonexistent; echo "cuBLASLt switched off" >>$O/steps.log; fi
(cd $R && timeout 250 scripts/train-bench.sh $B/gpt $B/corpus.txt 16) >$O/train-bench.md 2>&1; st train-bench $?
(cd $R/nn && timeout 40 $B/nn.test -test.run '^$' -test.bench 'CUDAStepProfile|CUDAStepModes/.*/graph' -test.benchtime 5x -test.v) >$O/profile-after.log 2>&1; st profile $?
(cd $R/cuda && timeout 60 $B/cuda.test -test.v -test.count=1 -test.run 'Heads|Affine|ColSum|Elementwise|GemmBias|GemmDevice|GemmFloat32|CrossEntropy|NormDevice|NNDeterminism|NNNoAllocation|Capture|ParamGroup|Embedding') >$O/cuda.log 2>&1; st cuda $?
(cd $R/machine && timeout 60 $B/machine.test -test.v -test.count=1 -test.run 'CUDA') >$O/machine.log 2>&1; st machine $?
(cd $R/nn && timeout 60 $B/nn.test -test.v -test.count=1 -test.run 'Device') >$O/nn.log 2>&1; st nn $?
CS=/usr/local/cuda/bin/compute-sanitizer
(cd $R/machine && timeout 70 env FLASHGORGON_CUDA_POOL=off $CS --tool memcheck --error-exitcode 3 $B/machine.test -test.count=1 -test.run 'TestCUDATraining$|TestCUDAHostOps$') >$O/memcheck-trainstep.log 2>&1; st memcheck-trainstep $?
[ $(el) -lt 340 ] && { (cd $R/cuda && timeout $((385-$(el))) env FLASHGORGON_CUDA_POOL=off $CS --tool memcheck --error-exitcode 3 $B/cuda.test -test.count=1 -test.short -test.run 'Heads|Affine|ColSum|Elementwise|GemmBias') >$O/memcheck-kernels.log 2>&1; st memcheck-kernels $?; }
for f in $O/*.log; do echo "$(basename $f): pass=$(grep -c -- '--- PASS' $f) fail=$(grep -c -- '--- FAIL' $f) $(grep -E 'ERROR SUMMARY' $f | tail -1)"; done >>$O/steps.log
echo "done $(el)s" >>$O/steps.log
cd $O/.. && tar czf p3.tgz p3
