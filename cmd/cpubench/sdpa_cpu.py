#!/usr/bin/env python3
"""Times PyTorch's CPU scaled_dot_product_attention for cpubench (cmd/cpubench).

Usage: sdpa_cpu.py --threads T [--reps R] '<json list of {"b","h","n","d","causal"}>'
       sdpa_cpu.py --threads T [--reps R] -    (one such JSON list per line of stdin, answered in turn)

With torch.set_num_threads(T), for every shape and the FLASH and MATH backends, float32, it
times the forward (no grad) and the forward+backward (gradient of sum(o*w)) the way cpubench
times ours: one warm-up, then the median of R runs. One JSON object per line:
  {"b", "h", "n", "d", "causal", "threads", "backend", "fwd_ms", "fwdbwd_ms", "error"}
With "-" it reads the lists from stdin and answers each before reading the next, so that a
caller can time its own kernels on the same shape right after (cpubench interleaves them: a
shared machine's load then weighs on both sides of a ratio alike).
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = [("FLASH", SDPBackend.FLASH_ATTENTION), ("MATH", SDPBackend.MATH)]


def timed(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("shapes")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.shapes == "-":
        while True:
            line = sys.stdin.readline()
            if not line:
                break
            if line.strip():
                run(json.loads(line), args)
    else:
        run(json.loads(args.shapes), args)


def run(shapes, args):
    for s in shapes:
        gen = torch.Generator().manual_seed(1)
        shape = (s["b"], s["h"], s["n"], s["d"])
        q, k, v = (torch.randn(shape, generator=gen).requires_grad_() for _ in range(3))
        w = torch.randn(shape, generator=gen)
        for name, backend in BACKENDS:
            row = dict(s, threads=args.threads, backend=name)
            try:
                with sdpa_kernel([backend]):
                    def fwd():
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])

                    def fwdbwd():
                        q.grad = k.grad = v.grad = None
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])
                        (o * w).sum().backward()

                    row["fwd_ms"] = timed(fwd, args.reps)
                    row["fwdbwd_ms"] = timed(fwdbwd, args.reps)
            except Exception as e:  # a backend that refuses the shape
                row["error"] = type(e).__name__
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
