#!/usr/bin/env python3
"""PyTorch twin of nn.GPT (examples/gpt's model) for training-throughput comparisons.

Usage: gpt_twin.py --device cpu|cuda --threads T --layers L --width W --heads H --context C
                   --batch B --steps S [--vocab V] [--compile default|reduce-overhead] [--profile]

Same architecture and sizes as nn.NewGPT with LayerNorm: token and learned position embeddings;
L pre-norm blocks x += proj(attn(ln1(x))) with one fused QKV projection (bias) and causal
scaled-dot-product attention, x += fc2(gelu_tanh(fc1(ln2(x)))) with hidden 4·W; final LayerNorm;
a head without bias (no weight tying); cross-entropy; AdamW (betas 0.9, 0.95, eps 1e-8, decay 0.1
on matrices and embeddings) with global-norm clipping at 1.0; float32, eager mode. Random tokens
(the throughput does not depend on them). Prints one JSON line: {"tokens_per_s", ...}, timed over
all S steps after one warm-up step (three with --compile: torch.compile(model, mode=...) compiles
forward and backward on the first calls; the optimizer step stays eager in both modes). (The logits were not cross-checked against a checkpoint of
ours in this script's first version: it measures the same work, not the same numbers.)
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, w, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(w), nn.LayerNorm(w)
        self.qkv, self.proj = nn.Linear(w, 3 * w), nn.Linear(w, w)
        self.fc, self.fc2 = nn.Linear(w, 4 * w), nn.Linear(4 * w, w)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(w, dim=2)
        q, k, v = (z.view(b, t, self.h, w // self.h).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, w))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, layers, w, h):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, w), nn.Embedding(ctx, w)
        self.blocks = nn.ModuleList(Block(w, h) for _ in range(layers))
        self.lnf, self.head = nn.LayerNorm(w), nn.Linear(w, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.lnf(x))


def print_profile(prof, steps, dt):
    """Prints to stderr the device time per step by kernel (torch.profiler's CUDA events: kernels,
    memsets and copies, those replayed from CUDA graphs included) beside the wall time per step."""
    rows = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        r = rows.setdefault(e.name, [0, 0.0])
        r[0] += 1
        r[1] += e.time_range.elapsed_us()
    total = sum(r[1] for r in rows.values())
    out = [f"wall {dt / steps * 1e3:.3f} ms/step, device busy {total / steps / 1e3:.3f} ms/step, "
           f"{sum(r[0] for r in rows.values()) / steps:.1f} device ops/step", "",
           "| kernel | ops/step | µs/step | µs each | share |", "|---|---|---|---|---|"]
    for name, (n, t) in sorted(rows.items(), key=lambda x: -x[1][1])[:45]:
        out.append(f"| {name[:100].replace('|', '/')} | {n / steps:.1f} | {t / steps:.1f} | {t / n:.2f} | {100 * t / total:.1f}% |")
    print("\n".join(out), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("threads", 0), ("layers", 2), ("width", 64), ("heads", 4), ("context", 64),
                          ("batch", 32), ("steps", 50), ("vocab", 128)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", default="", help="torch.compile mode: default or reduce-overhead")
    ap.add_argument("--profile", action="store_true",
                    help="profile the timed steps (torch.profiler) and print the device time by kernel to stderr")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    dev = torch.device(a.device)
    m = GPT(a.vocab, a.context, a.layers, a.width, a.heads).to(dev)
    decay = [p for n, p in m.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in m.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    fwd = torch.compile(m, mode=a.compile) if a.compile else m
    x = torch.randint(0, a.vocab, (a.batch, a.context), device=dev)
    y = torch.randint(0, a.vocab, (a.batch, a.context), device=dev)

    def step():
        loss = F.cross_entropy(fwd(x).view(-1, a.vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(3 if a.compile else 1):  # warm-up (and compilation)
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    prof = None
    if a.profile and dev.type == "cuda":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    loss.item()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if prof is not None:
        prof.__exit__(None, None, None)
        print_profile(prof, a.steps, dt)
    print(json.dumps({"device": a.device, "threads": a.threads, "layers": a.layers, "width": a.width,
                      "heads": a.heads, "compile": a.compile, "context": a.context, "batch": a.batch, "steps": a.steps,
                      "params": sum(p.numel() for p in m.parameters()),
                      "tokens_per_s": a.steps * a.batch * a.context / dt}))


if __name__ == "__main__":
    main()
