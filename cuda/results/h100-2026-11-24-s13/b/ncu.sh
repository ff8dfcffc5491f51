#!/bin/bash
# ncu on the Exact backward's kernels at d = 64 (the first launch of each at attnbench's N = 4096
# non-causal shape, attnbench -prec exact -d 64 -n 4096): what bounds them (tensor pipe, shared memory,
# L2, DRAM, warp stalls). $1: the test binary, $2: the output directory.
B=$1; O=$2; NCU=$(ls /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}" >$O/ncu.log
[ -z "$NCU" ] && exit 0
for k in dkdv_exact_d64_n64_m32_ws_raw dq_exact_d64_m128_n32 v25_exact_d64 v26_exact_d64; do
  echo "=== $k" >>$O/ncu.log
  timeout 55 $NCU -k regex:"$k" -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    $B/attnbench -prec exact -d 64 -n 4096 -reps 1 >>$O/ncu.log 2>&1
done
