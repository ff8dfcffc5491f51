#!/bin/bash
# builds the hopper helper's device binaries into /work/main/.devbin/hopper
set -e
cd /work/wt/hopper
D=/work/main/.devbin/hopper
F='-ldflags=-s -w'
CGO_ENABLED=0 go test -c "$F" -o $D/cuda.test ./cuda
CGO_ENABLED=0 go build "$F" -o $D/attnbench ./cuda/cmd/attnbench
xz -T2 -6 -f $D/cuda.test $D/attnbench
tar -czf $D/tree.tgz cuda/kernels cuda/ptx
ls -la $D; du -sh $D
