#!/bin/bash
# The merged main's device suites in one short call (no sanitizers): per-kernel JIT, the Hopper
# modules and the fused cross-entropy together on the H100.
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/final; O=$OUT/final; mkdir -p $O
cd $B && gunzip -f *.gz; chmod +x *.test
(cd $R/ops/attention && timeout 200 $B/ops-attention.test -test.v -test.count=1 -test.run 'Device|Precision') > $O/ops-attention.log 2>&1 &
for p in machine nn cuda; do d=$(echo $p | tr - /); [ $p = examples-gpt ] && d=examples/gpt
  t0=$(date +%s); (cd $R/$d && timeout 200 $B/$p.test -test.v -test.count=1) > $O/$p.log 2>&1; rc=$?
  echo "$p rc=$rc pass=$(grep -c -- '--- PASS' $O/$p.log) fail=$(grep -c -- '--- FAIL' $O/$p.log) $(( $(date +%s)-t0 ))s" | tee -a $O/summary.txt; done
wait; echo "ops-attention pass=$(grep -c -- '--- PASS' $O/ops-attention.log) fail=$(grep -c -- '--- FAIL' $O/ops-attention.log)" | tee -a $O/summary.txt
grep -h -- '--- FAIL' $O/*.log | head -20 | tee -a $O/summary.txt
grep -h "ops run on\|step 1000" $O/machine.log | head -3
cd $OUT && tar czf final.tgz final
