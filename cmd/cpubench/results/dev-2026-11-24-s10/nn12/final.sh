#!/bin/bash
# the new default, no flags, as `go run ./examples/gpt` runs it (binary built from the branch)
cd /tmp/nn12/final
echo "start $(date -u +%T) $(cat /proc/loadavg)"
/usr/bin/time -f "cpu_user=%U cpu_sys=%S wall=%e" /tmp/nn12/gpt1 -quiet 2>&1
echo "end $(date -u +%T) $(cat /proc/loadavg)"
