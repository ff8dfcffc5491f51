#!/bin/bash
# Fifth session, call 2 (GPU benchmarks on main merged with gputrain): train-bench's GPU rows
# (ours, PyTorch eager, torch.compile default and reduce-overhead), the step profile by op, and
# attnbench at every precision against PyTorch SDPA (f32 EFFICIENT, bf16 FLASH, bf16 cuDNN).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s5b; A=$R/.devbin/s5b; O=${OUT:-/tmp/out}/s5c2; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz 2>/dev/null; gunzip -kf corpus.txt.gz; chmod +x gpt *.test); (cd $A && xz -d -f attnbench.xz; chmod +x attnbench)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >$O/steps.log; uptime >>$O/steps.log
(cd $R && timeout 220 scripts/train-bench.sh $B/gpt $B/corpus.txt " ") >$O/train-bench.md 2>&1; st train-bench $?
(cd $R/nn && timeout 50 $B/nn.test -test.run '^$' -test.bench 'CUDAStepProfile' -test.benchtime 5x -test.v) >$O/profile.log 2>&1; st profile $?
(cd $R && timeout 220 $A/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16) >$O/attnbench.log 2>&1; st attnbench $?
cd $O/.. && tar czf s5c2.tgz s5c2
