#!/bin/bash
# one.sh NAME GPTBIN args... : one training run under the lock, log in sweep/NAME.log
name=$1; bin=$2; shift 2
flock /work/bench.lock bash -c '
  log=/tmp/nn12/sweep/'$name'.log
  { echo "start $(date -u +%T) $(cat /proc/loadavg)"; echo "args: $*";
    /usr/bin/time -f "cpu_user=%U cpu_sys=%S wall=%e" '$bin' -quiet -out /tmp/nn12/sweep/o_'$name' "$@" 2>&1;
    echo "end $(date -u +%T) $(cat /proc/loadavg)"; } > $log 2>&1' _ "$@"
