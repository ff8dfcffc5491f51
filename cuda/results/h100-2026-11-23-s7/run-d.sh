#!/bin/bash
# Seventh session, call D: main after merging bwd64, the suites that train on the GPU (machine,
# nn: the new default backward kernels inside training steps, memory flat from step 1 to 1000),
# then racecheck over the default Hopper backward pairs (the new B3 dK/dV and Pipe/Fx dQ
# kernels; call C's racecheck over every wgmma pair ran past its 60 s).
R=$(cd "$(dirname "$0")/../.." && pwd); B=$R/.devbin/s7d; O=${OUT:-/tmp/out}/s7d; mkdir -p $O
T0=$(date +%s)
cd $B && xz -d -f -T8 *.xz && chmod +x *.test
C=$R/.devbin/s7c; (cd $C && xz -d -f -T8 *.xz 2>/dev/null; chmod +x *.test)
{ cat $B/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } >$O/tools.log
S=()
run() { # name dir timeout args...
  local name=$1 dir=$2 to=$3; shift 3
  local t0=$(date +%s)
  (cd $R/$dir && timeout $to "$@") >$O/$name.log 2>&1
  local rc=$?
  S+=("$name: rc=$rc pass=$(grep -c -- '--- PASS' $O/$name.log) fail=$(grep -c -- '--- FAIL' $O/$name.log) skip=$(grep -c -- '--- SKIP' $O/$name.log) $(( $(date +%s)-t0 ))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/$name.log | tail -1)")
  grep -- '--- FAIL' $O/$name.log | head -12 | sed "s/^/  $name: /" >>$O/failures.txt
}
run machine machine 130 $B/machine.test -test.v -test.count=1
run nn nn 170 $B/nn.test -test.v -test.count=1
CS=/usr/local/cuda/bin/compute-sanitizer
run racecheck-hopper-bwd-defaults cuda 200 env FLASHGORGON_CUDA_POOL=off $CS --tool racecheck --error-exitcode 3 $C/cuda.test -test.short -test.v -test.count=1 -test.run '^TestAttentionMMABwdDevice$' -mmabwd.only='^$'
{ echo "==== summary $(date -u) $(( $(date +%s)-T0 ))s"; cat $O/tools.log; printf '%s\n' "${S[@]}"; cat $O/failures.txt 2>/dev/null; } | tee $O/summary.txt
grep -h "MemoryFlat" $O/machine.log | grep -- "---" >>$O/summary.txt
cd $O/.. && tar czf s7d.tgz s7d
