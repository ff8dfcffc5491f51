#!/bin/bash
# Thirteenth session, call B (main at the merge of fwd26): helper fwd26's script (ptxas on the
# Exact forward's module, the forward's device tests on variants 24-26, memcheck and racecheck on
# variant 26, v25 against v26 alternating) with the merged binary; then ncu on the Exact
# backward's dK/dV (Raw) and dQ kernels and the forwards v25 and v26 at d = 64, N = 4096.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s13b; O=${OUT:-/tmp/out}; T0=$(date +%s)
(cd $B && xz -d -f -T8 attnbench.xz && chmod +x attnbench)
OUT=$O bash $B/fwd26.sh >/dev/null 2>&1
mkdir -p /tmp/ncu && bash $B/ncu.sh $B /tmp/ncu; cp /tmp/ncu/ncu.log $O/
echo "total $(( $(date +%s)-T0 ))s" >>$O/summary.txt
cat $O/summary.txt; grep -E "^===|Duration|Throughput|Compute \(SM\)|Memory Throughput|Shared|L1/TEX Hit|L2 Hit|Stall|Warp Cycles|Issued|Registers|Achieved Occ|ncu:" $O/ncu.log | head -90
