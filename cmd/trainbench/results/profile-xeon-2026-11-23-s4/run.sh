#!/usr/bin/env bash
# The device call that made this folder (2026-11-23 12:16 UTC, H100 machine's 16-core Xeon):
# `bash .devbin/cputrain/run.sh` with carry [".devbin/cputrain"]. nn.test and cpubench were built
# on the development machine from main at 9000449 (CGO_ENABLED=0 go test -c -ldflags='-s -w'
# ./nn; go build ./cmd/cpubench), gpt_twin.py is cmd/trainbench's with --profile.
set -u
D=.devbin/cputrain
L=$OUT/logs; mkdir -p $L
cd $D && xz -d -f -T4 nn.test.xz cpubench.xz; chmod +x nn.test cpubench; cd - >/dev/null
export FLASHGORGON_DEVICE=cpu
{ date -u; lscpu | grep -E 'Model name|^CPU\(s\)'; uptime; } > $L/machine.txt
gcc -O2 -mavx2 -mfma -o $L/peak $D/peak.c -lpthread && for t in 2 16; do echo "## peak $t"; $L/peak $t; done > $L/peak.txt 2>&1
for t in 2 16; do
  $D/nn.test -test.run XXX -test.bench 'TrainStep/L4_D256' -test.benchtime 6x -test.cpu $t -test.cpuprofile $L/train-large-$t.prof > $L/train-large-$t.txt 2>&1
done
$D/nn.test -test.run XXX -test.bench 'TrainStep/L2_D64_H4_T64_B32' -test.benchtime 40x -test.cpu 2,16 > $L/train-small.txt 2>&1
$D/nn.test -test.run XXX -test.bench 'MatMulGPT/M4096' -test.benchtime 10x -test.cpu 1,2,16 > $L/matmul.txt 2>&1
for t in 2 16; do
  timeout 120 python3 $D/gpt_twin.py --device cpu --threads $t --layers 4 --width 256 --heads 8 --context 256 --batch 16 --steps 6 --cpu-profile 3 > $L/torch-large-$t.json 2> $L/torch-large-$t.prof.txt
done
uptime >> $L/machine.txt
timeout 150 $D/cpubench -threads 2,16 -torch cmd/cpubench/sdpa_cpu.py -softmax=false -shapes "32,8,64,32,1;32,4,64,16,1;16,8,256,32,1" > $L/cpubench-gpt.txt 2>&1
for t in 2 16; do echo "## peak $t (end)"; $L/peak $t; done >> $L/peak.txt 2>&1
rm -f $L/peak
tar czf $OUT/logs.tgz -C $OUT logs
