#!/bin/bash
# Eighteenth session, call A: where the d = 64 BF16 backward's time goes. ncu (full set, stall
# sampling) on one launch each of prep4_do, the dK/dV kernel and the dQ kernel at attnbench's
# d = 64, N = 4096 non-causal shape; the per-SASS-line stall samples summarized; the per-kernel
# timing of the default BF16 backward at every attnbench shape (TestAttentionMMABwdTiming).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s18a; O=${OUT:-/tmp/out}/s18a; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x cuda.test attnbench
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } >$O/tools.log
NCU=/usr/local/cuda/bin/ncu
(cd $R && timeout 240 $NCU --set full --import-source yes -k 'regex:fg_attn_bwd_(bf16_prep4_do|wgmma_dkdv_bf16_d64|wgmma_dq_bf16_d64)' --launch-count 3 \
  -o $O/bwd64 $B/attnbench -prec bf16 -d 64 -n 4096 -reps 1 -tokens 32768) >$O/ncu-run.log 2>&1
echo "ncu rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
$NCU -i $O/bwd64.ncu-rep --page details >$O/details.txt 2>&1
for k in dkdv dq prep4; do
  $NCU -i $O/bwd64.ncu-rep -k regex:$k --page source --csv --print-source sass >$O/src-$k.csv 2>$O/src-$k.err
done
python3 - $O >$O/stalls.txt 2>&1 <<'PY'
import csv, sys, glob, os
o = sys.argv[1]
for f in sorted(glob.glob(o + '/src-*.csv')):
    rows = list(csv.reader(open(f)))
    if len(rows) < 2: print(f, 'empty'); continue
    h = rows[0]; print('==', os.path.basename(f), len(rows), 'rows'); print('columns:', h)
    def col(name):
        for i, c in enumerate(h):
            if c.strip() == name: return i
        return None
    si = col('Warp Stall Sampling (All Samples)'); src = col('Source')
    if si is None: continue
    def num(x):
        try: return float(x.replace(',', ''))
        except: return 0.0
    tot = sum(num(r[si]) for r in rows[1:])
    top = sorted(rows[1:], key=lambda r: -num(r[si]))[:45]
    for r in top: print('%6.2f%%  %s' % (100 * num(r[si]) / max(tot, 1), r[src][:110]))
PY
rm -f $O/src-*.err
(cd $R/cuda && timeout 300 $B/cuda.test -test.run '^TestAttentionMMABwdTiming$' -test.v -mmabwd.time -mmabwd.precs bf16 -mmabwd.pairs none) >$O/timing.log 2>&1
echo "timing rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
rm -f $B/cuda.test $B/attnbench
cat $O/tools.log; ls -la $O
grep -E "^ *(Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|DRAM Throughput|Shared Memory Configuration Size|Dynamic Shared)|^  fg_attn" $O/details.txt | head -80
head -60 $O/stalls.txt
grep -E "bf16 *\|" $O/timing.log | head -20
