#!/bin/bash
# Ninth session, call F: main's final commit. BenchmarkAttentionBwdPrep (the three pre-passes by
# grid), then BenchmarkAttentionMMA for variants 20 and 21 at d = 64 (the MinNk rule: 21 from
# N = 4096), five rounds alternating the two, 5 launches each.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s9f; O=${OUT:-/tmp/out}/s9f; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
(cd $R/cuda && timeout 90 $B/cuda.test -test.run '^$' -test.bench 'AttentionBwdPrep' -test.benchtime 20x) >$O/bwdprep.log 2>&1
echo "bwdprep rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
for r in 1 2 3 4 5; do
  for v in 20 21; do
    (cd $R/cuda && timeout 60 $B/cuda.test -test.run '^$' -test.bench "AttentionMMA/d64/.*/.*/bf16/^v$v\$" -test.benchtime 5x) 2>&1 | grep -E '^Benchmark' | sed "s/^/r$r /" >>$O/fwd.log
  done
done
echo "fwd rc=$? $(( $(date +%s)-T0 ))s" >>$O/tools.log
cat $O/tools.log; grep -E '^Benchmark' $O/bwdprep.log | sed 's/BenchmarkAttentionBwdPrep\///;s/ns\/op//'; cat $O/fwd.log | awk '{print $1, $2, $(NF-3), $(NF-2), $(NF-1), $NF}'
cd $O/.. && tar czf s9f.tgz s9f
