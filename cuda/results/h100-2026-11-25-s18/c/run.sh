#!/bin/bash
# Eighteenth session, call C (main with the Late backward kernels as the BF16 Hopper defaults):
# attnbench at every precision beside PyTorch SDPA, 5 repetitions; then ncu (full set, stall
# sampling per SASS line) on the BF16 forward variant 38 at d = 128, N = 1024 causal.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18c; O=${OUT:-/tmp/out}/s18c; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R && timeout 300 $B/attnbench -torch cuda/cmd/attnbench/sdpa_bench.py -prec exact,tf32,bf16 -reps 5) >$O/attnbench.log 2>&1
echo "attnbench rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
(cd $R/cuda && timeout 200 /usr/local/cuda/bin/ncu --set full --import-source yes -k regex:fg_attn_fwd_wgmma_v38_bf16_d128 --launch-skip 1 --launch-count 1 \
  -o $O/v38 $B/cuda.test -test.run '^$' -test.bench 'AttentionMMA/d128/n1024/causal=true/bf16/^v38$' -test.benchtime 2x) >$O/ncu-run.log 2>&1
echo "ncu rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
/usr/local/cuda/bin/ncu -i $O/v38.ncu-rep --page details >$O/details.txt 2>&1
/usr/local/cuda/bin/ncu -i $O/v38.ncu-rep --page source --csv --print-source sass >$O/src-v38.csv 2>/dev/null
{ python3 $B/stall.py $O/src-v38.csv 120; python3 $B/instr.py $O/src-v38.csv; } >$O/stalls-v38.txt 2>&1
cat $O/ncu-run.log >>$O/tools.log; rm -f $O/v38.ncu-rep $O/ncu-run.log
rm -f $B/cuda.test $B/attnbench
cat $O/tools.log
grep -E "^  fg_attn|Duration|Issue Slots Busy|Registers Per|DRAM Throughput|Achieved Occ" $O/details.txt
sed -n '/| d | N | causal | BF16\/FLASH/,/^$/p' $O/attnbench.log | head -16
grep -B1 -A14 "Forward+backward" $O/attnbench.log | grep "^|" | head -16
