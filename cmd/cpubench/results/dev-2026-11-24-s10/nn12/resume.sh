#!/bin/bash
# steps of a trained model (resumed from its checkpoint) against the same steps of a fresh one
cd /tmp/nn12/sweep
cat /proc/loadavg
for cfg in "w384l1s1050:-layers 1 -width 384 -heads 6:1050" "w128l2s2600lr5:-layers 2 -width 128 -heads 4 -lr 5e-3:2600"; do
  name=${cfg%%:*}; rest=${cfg#*:}; args=${rest%:*}; n=${rest##*:}
  rm -rf r_$name; cp -r o_$name r_$name
  for rep in 1 2; do
    /usr/bin/time -f "  fresh 100 steps: cpu_user=%U wall=%e" /tmp/nn12/gpt0 $args -steps 100 -eval_every 1000 -eval_batches 1 -sample_len 0 -quiet -out /tmp/nn12/sweep/f_$name 2>&1 | grep -E "cpu_user|^result" | sed "s/^/$name /"
    rm -rf r_$name; cp -r o_$name r_$name
    /usr/bin/time -f "  trained +100 steps: cpu_user=%U wall=%e" /tmp/nn12/gpt0 $args -steps $((n+100)) -resume -eval_every 1000 -eval_batches 1 -sample_len 0 -quiet -out /tmp/nn12/sweep/r_$name 2>&1 | grep -E "cpu_user|^result" | sed "s/^/$name /"
  done
done
cat /proc/loadavg
