#!/usr/bin/env python3
"""Times PyTorch's scaled_dot_product_attention for attnbench (cuda/cmd/attnbench).

Usage: sdpa_bench.py '<json list of {"b","h","n","d","causal"}>'

For every shape, every dtype (float32, bfloat16) and every SDPA backend (FLASH, CUDNN,
EFFICIENT, MATH) it times the forward and the forward+backward with CUDA events (one warm-up,
then the median of --reps runs) and prints one JSON object per line:
  {"b", "h", "n", "d", "causal", "dtype", "backend", "fwd_ms", "fwdbwd_ms", "error"}
A backend that does not run a dtype or shape (FLASH and CUDNN take no float32; MATH
materializes the N x N scores and runs out of memory at long N) gets "error" and no times.
Inputs are standard normal, q, k, v [B, H, N, d], the default scale 1/sqrt(d); TF32 is off.
"""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

REPS = 5
BACKENDS = [("FLASH", SDPBackend.FLASH_ATTENTION), ("CUDNN", SDPBackend.CUDNN_ATTENTION),
            ("EFFICIENT", SDPBackend.EFFICIENT_ATTENTION), ("MATH", SDPBackend.MATH)]
DTYPES = [("f32", torch.float32), ("bf16", torch.bfloat16)]


def timed(fn):
    fn()  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    shapes = json.loads(sys.argv[1])
    for s in shapes:
        for dname, dtype in DTYPES:
            gen = torch.Generator(device="cuda").manual_seed(1)
            shape = (s["b"], s["h"], s["n"], s["d"])
            q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=gen).requires_grad_() for _ in range(3))
            do = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)
            for bname, backend in BACKENDS:
                row = dict(s, dtype=dname, backend=bname)
                try:
                    with sdpa_kernel([backend]):
                        def fwd():
                            with torch.no_grad():
                                F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])

                        def fwdbwd():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])
                            torch.autograd.grad(o, (q, k, v), do)

                        row["fwd_ms"] = timed(fwd)
                        row["fwdbwd_ms"] = timed(fwdbwd)
                except Exception as e:  # not supported for this dtype/shape, or out of memory
                    row["error"] = type(e).__name__ + ": " + str(e).split("\n")[0][:120]
                    row.pop("fwd_ms", None)
                torch.cuda.empty_cache()
                print(json.dumps(row), flush=True)
            del q, k, v, do
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
