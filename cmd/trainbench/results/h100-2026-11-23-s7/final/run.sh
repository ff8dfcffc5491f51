#!/bin/bash
# Seventh session, call H: issue 10's table again from one run, after merging cpuattn (the CPU attention's output products in one FMA chain), main at the
# commit named in steps.log: scripts/train-bench.sh with three alternating rounds (ours,
# PyTorch eager, …; medians) for every CPU row at 2 and 16 threads, then the GPU rows
# (ours, PyTorch eager, torch.compile default and reduce-overhead), both configs.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s7f; O=${OUT:-/tmp/out}/s7h; mkdir -p $O
T0=$(date +%s); st() { echo "$1 rc=$2 $(( $(date +%s)-T0 ))s" | tee -a $O/steps.log; }
(cd $B && xz -d -f -T8 *.xz; gunzip -kf corpus.txt.gz; chmod +x gpt)
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-400; python3 -c 'import torch; print("torch", torch.__version__)'; uptime; } >$O/steps.log 2>&1
(cd $R && ROUNDS=3 timeout 560 scripts/train-bench.sh $B/gpt $B/corpus.txt 2,16) >$O/train-bench.md 2>&1; st train-bench $?
uptime >> $O/steps.log
