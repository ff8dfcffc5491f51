#!/bin/bash
# Ninth session, call G: why the N = 1024 causal BF16 forward is short. ncu on one launch of
# variants 20 and 21 at d = 128, N = 1024, causal (BenchmarkAttentionMMA's shape: B = 32,
# H = 16): speed of light, memory workload, warp state (where the warps wait), scheduler.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9g; O=${OUT:-/tmp/out}/s9g; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
for v in 20 21; do
  (cd $R/cuda && timeout 200 /usr/local/cuda/bin/ncu --kernel-name regex:fg_attn_fwd_wgmma_v${v}_bf16_d128 --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy \
    $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d128/n1024/causal=true/bf16/^v$v\$" -test.benchtime 2x) >$O/ncu-v$v.log 2>&1
  echo "ncu v$v rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
done
cat $O/tools.log
for v in 20 21; do echo "== v$v"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|L2 Cache Throughput|Stall|Warp Cycles Per|Issued Warp|No Eligible|Active Warps|Eligible Warps|One or More" $O/ncu-v$v.log | head -40; done
cd $O/.. && tar czf s9g.tgz s9g
