#!/bin/bash
# builds the gpubwd helper's device binaries into /work/main/.devbin/gpubwd (run from anywhere)
set -e
cd /work/wt/gpubwd
D=/work/main/.devbin/gpubwd
mkdir -p $D
F='-ldflags=-s -w'
CGO_ENABLED=0 go test -c "$F" -o $D/cuda.test ./cuda
CGO_ENABLED=0 go build "$F" -o $D/attnbench ./cuda/cmd/attnbench
xz -T2 -6 -f $D/cuda.test $D/attnbench
tar -czf $D/tree.tgz cuda/kernels cuda/ptx
cp cuda/results/h100-2026-11-23-s5-bwd/run.sh $D/run.sh
ls -la $D; du -sh $D
