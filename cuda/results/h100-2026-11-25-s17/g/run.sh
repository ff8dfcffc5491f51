#!/bin/bash
# Seventeenth session, call G: ops/attention's device tests at the final commit (split from calls D and E:
# the payload of both did not fit one call).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s17g; O=${OUT:-/tmp/out}/s17g; mkdir -p $O; T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x attn.test
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/tools.log
(cd $R/ops/attention && timeout 500 $B/attn.test -test.v -test.count=1 -test.run 'Device') >$O/attn.log 2>&1
echo "ops/attention rc=$? pass=$(grep -c -- '--- PASS' $O/attn.log) fail=$(grep -c -- '--- FAIL' $O/attn.log) skip=$(grep -c -- '--- SKIP' $O/attn.log) $(tail -1 $O/attn.log) $(( $(date +%s)-T0 ))s" >>$O/tools.log
grep -- '--- FAIL' $O/attn.log | head >>$O/tools.log
cat $O/tools.log
