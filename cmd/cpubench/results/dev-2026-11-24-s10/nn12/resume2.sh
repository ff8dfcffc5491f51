#!/bin/bash
# W384 L1 H6: 100 steps resumed from the 1050-step checkpoint against 100 fresh steps, with the
# GELU-gradient flush (gpt2) and without (gpt0: main's code), in turn
cd /tmp/nn12/sweep
cat /proc/loadavg
args="-layers 1 -width 384 -heads 6 -batch 32 -lr 3e-3"
for rep in 1 2; do
  for bin in gpt0 gpt2; do
    rm -rf f_r2; /usr/bin/time -f "  $bin fresh 100 steps: cpu_user=%U wall=%e" /tmp/nn12/$bin $args -steps 100 -eval_every 1000 -eval_batches 1 -sample_len 0 -quiet -out /tmp/nn12/sweep/f_r2 2>&1 | grep -E "cpu_user|^result" | sed "s/^/$bin /"
    rm -rf r_r2; cp -r o_w384l1s1050 r_r2
    /usr/bin/time -f "  $bin trained +100 steps: cpu_user=%U wall=%e" /tmp/nn12/$bin $args -steps 1150 -resume -eval_every 1000 -eval_batches 1 -sample_len 0 -quiet -out /tmp/nn12/sweep/r_r2 2>&1 | grep -E "cpu_user|^result" | sed "s/^/$bin /"
  done
done
cat /proc/loadavg
