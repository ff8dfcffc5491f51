#!/bin/bash
# throughput of configs: 80 steps each, eval only at the end (1 batch)
cd /tmp/nn12/sweep
uptime
for c in "2 256 8" "2 256 4" "2 192 6" "3 192 6" "2 128 4" "4 128 4" "3 256 8" "1 384 6"; do
  set -- $c
  /tmp/nn12/gpt0 -layers $1 -width $2 -heads $3 -steps 80 -eval_every 1000 -eval_batches 1 -sample_len 0 -quiet -out /tmp/nn12/sweep/o_tput 2>&1 | grep -E "^model|^result" | tr '\n' ' '; echo
done
uptime
