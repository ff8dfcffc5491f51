#!/usr/bin/env python3
"""Times PyTorch's scaled_dot_product_attention for attnbench (cuda/cmd/attnbench), on the
inputs attnbench's own kernels get, and measures each backend's error against float64.

Usage: sdpa_bench.py '<json list of {"b","h","n","d","causal"}>' [reps]

For every shape and every backend of COMBOS (f32 EFFICIENT, bf16 FLASH, bf16 cuDNN) it times
the forward and the forward+backward with CUDA events (one warm-up, then the median of REPS
runs: reps, attnbench's -reps, or 3) and prints one JSON object per line:
  {"b", "h", "n", "d", "causal", "dtype", "backend", "fwd_ms", "fwdbwd_ms", "err_o",
   "err_grad", "in_sum", "error"}
A backend that does not run a shape gets "error" and no times.

Inputs: q, k, v, dO [B, H, N, d] float32, element i of tensor x drawn as cuda.FillNormal draws
it (kernels/debug.cu's fg_debug_fill) with attnbench's seed N*1000 + d*10 + x: SplitMix64 bits
of seed*0x632be59bd9b4e019 + i, Box-Muller in float64 (cos(2 pi u) here, cospi(2u) there: the
float32 values agree but for rare last-bit ties), rounded to float32; the bf16 backends get
them rounded to bf16. in_sum is the float64 sum of q's first 2^20 elements (attnbench compares
it with its own). The default scale 1/sqrt(d); TF32 is off.

Errors: err_o is the largest |o - o64| / max(1, |o64|) over O's checked rows, err_grad the same
over dQ's checked rows and dK's and dV's checked key rows, against float64 (computed here on
the device from the float32 inputs, for the last head): rows N-1 and (2k+1)N/16 (k = 0..6),
key rows 0 and (2k+1)N/16, as attnbench's checkRows.
"""
import json
import math
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

REPS = 3
COMBOS = [("f32", torch.float32, "EFFICIENT", SDPBackend.EFFICIENT_ATTENTION),
          ("bf16", torch.bfloat16, "FLASH", SDPBackend.FLASH_ATTENTION),
          ("bf16", torch.bfloat16, "CUDNN", SDPBackend.CUDNN_ATTENTION)]
M64 = 1 << 64


def s64(c):
    """The int64 with the bits of the unsigned 64-bit c."""
    c %= M64
    return c - M64 if c >= 1 << 63 else c


def srl(z, s):
    """Logical right shift of int64 bits."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def splitmix64(z):
    z = z + s64(0x9e3779b97f4a7c15)
    z = (z ^ srl(z, 30)) * s64(0xbf58476d1ce4e5b9)
    z = (z ^ srl(z, 27)) * s64(0x94d049bb133111eb)
    return z ^ srl(z, 31)


def fill_normal(shape, seed):
    n = math.prod(shape)
    out = torch.empty(n, dtype=torch.float32, device="cuda")
    base = s64(seed * 0x632be59bd9b4e019)
    step = 1 << 24
    for lo in range(0, n, step):
        i = torch.arange(lo, min(n, lo + step), dtype=torch.int64, device="cuda")
        r = splitmix64(i + base)
        u1 = (srl(r, 11) + 1).double() * (1.0 / 9007199254740992.0)
        u2 = srl(splitmix64(r), 11).double() * (1.0 / 9007199254740992.0)
        out[lo:lo + len(i)] = (torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)).float()
    return out.view(shape)


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


def check_rows(n):
    rows = [n - 1] + [(2 * k + 1) * n // 16 for k in range(7) if (2 * k + 1) * n // 16 < n]
    keys = [0] + [(2 * k + 1) * n // 16 for k in range(7) if (2 * k + 1) * n // 16 < n]
    return rows, keys


def reference(q, k, v, do, causal):
    """float64 O, dQ, dK, dV of one head (q, k, v, do [N, d])."""
    q, k, v, do = (x.double() for x in (q, k, v, do))
    n, d = q.shape
    s = (q @ k.T) / math.sqrt(d)
    if causal:
        s.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=q.device).triu_(1), float("-inf"))
    p = torch.softmax(s, dim=-1)
    del s
    o = p @ v
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - (do * o).sum(-1, keepdim=True))
    del dp, p
    dq = (ds @ k) / math.sqrt(d)
    dk = (ds.T @ q) / math.sqrt(d)
    return o, dq, dk, dv


def rel_err(got, want):
    return ((got.double() - want).abs() / want.abs().clamp(min=1)).max().item()


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    global REPS
    shapes = json.loads(sys.argv[1])
    if len(sys.argv) > 2:
        REPS = int(sys.argv[2])
    for s in shapes:
        shape = (s["b"], s["h"], s["n"], s["d"])
        x32 = [fill_normal(shape, s["n"] * 1000 + s["d"] * 10 + x) for x in range(4)]
        in_sum = x32[0].reshape(-1)[:1 << 20].double().sum().item()
        rows, keys = check_rows(s["n"])
        ro, rdq, rdk, rdv = reference(*(x[-1, -1] for x in x32), s["causal"])
        for dname, dtype, bname, backend in COMBOS:
            row = dict(s, dtype=dname, backend=bname, in_sum=in_sum)
            try:
                q, k, v = (x.to(dtype).requires_grad_() for x in x32[:3])
                do = x32[3].to(dtype)
                with sdpa_kernel([backend]):
                    def fwd():
                        with torch.no_grad():
                            return F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])

                    def fwdbwd():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])
                        return o, torch.autograd.grad(o, (q, k, v), do)

                    o, (dq, dk, dv) = fwdbwd()
                    row["err_o"] = rel_err(o[-1, -1, rows], ro[rows])
                    row["err_grad"] = max(rel_err(dq[-1, -1, rows], rdq[rows]), rel_err(dk[-1, -1, keys], rdk[keys]),
                                          rel_err(dv[-1, -1, keys], rdv[keys]))
                    del o, dq, dk, dv
                    row["fwd_ms"] = timed(fwd)
                    row["fwdbwd_ms"] = timed(fwdbwd)
                del q, k, v, do
            except Exception as e:  # not supported for this dtype/shape, or out of memory
                row["error"] = type(e).__name__ + ": " + str(e).split("\n")[0][:120]
                row.pop("fwd_ms", None)
            torch.cuda.empty_cache()
            print(json.dumps(row), flush=True)
        del x32, ro, rdq, rdk, rdv
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
