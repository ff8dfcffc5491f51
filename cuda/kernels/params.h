// params.h: the kernel parameter structs, passed by value to every kernel (FlashAttention csrc style:
// pointers, strides, sizes). The Go structs of cuda/params.go are the definition and the launcher
// passes their bytes; this header declares the same fields in the same order, with fixed-size
// types only, and TestParamsHeader (cuda/params_test.go) checks it against the Go structs: field
// names, C types, offsets by C's layout rules, sizes. Change the Go struct first, then this header.
//
// Device pointers are carried as 64-bit integers so that the Go mirror holds no pointers.
// Strides count elements, not bytes.
#ifndef FLASHGORGON_PARAMS_H
#define FLASHGORGON_PARAMS_H

#include <stdint.h>

// Softmax-family kinds (fg_softmax_params.kind).
#define FG_SOFTMAX 0
#define FG_LOG_SOFTMAX 1
#define FG_LOG_SUM_EXP 2

// Precisions of the float32 attention kernels (fg_attn_params.precision; cuda.Precision, as
// the launcher resolved it: never 0, the default): FG_PREC_FMA the FMA kernels
// (attention_fwd.cu, attention_bwd.cu), the others the tensor-core kernels of
// attention_mma.cu and attention_mma_bwd.cu (3xTF32, TF32, bfloat16 products with float32
// accumulation).
#define FG_PREC_FMA 1
#define FG_PREC_EXACT 2
#define FG_PREC_TF32 3
#define FG_PREC_BF16 4

// fg_softmax_params describes one softmax-family op over x viewed as [outer, n, inner]:
// element (o, i, j) at o*n*inner + i*inner + j, reduced over i.
//   softmax, log-softmax: y, dy, dx have x's shape;
//   log-sum-exp:          y and dy are [outer, inner], dx has x's shape.
typedef struct {
  uint64_t x, y, dy, dx;  // T*; dy and dx are used by the backward only
  int64_t outer, n, inner;
  int32_t kind;  // FG_SOFTMAX, FG_LOG_SOFTMAX or FG_LOG_SUM_EXP
  int32_t reserved;
} fg_softmax_params;

// fg_attn_params describes one attention problem (see DESIGN.md):
//   q, o, do_, dq  [B, H, Nq, d]   element (b,h,i,c) at b*q_batch + h*q_head + i*q_row + c
//   k, dk          [B, Hkv, Nk, d] likewise with the k_* strides
//   v, dv          [B, Hkv, Nk, d] likewise with the v_* strides
//   lse, lres, dlse, delta [B, H, Nq]  contiguous: element (b,h,i) at (b*H + h)*Nq + i
//   key_lengths    int32 [B] or 0: batch b sees keys j < key_lengths[b]
// o and do_ share the o_* strides, dq the q_* strides, dk the k_* and dv the v_* strides.
// Query head h reads key/value head h / (H/Hkv). With causal set, query i sees key j only when
// j <= i + causal_offset (bottom-right alignment uses causal_offset = Nk - Nq).
// The log-sum-exp is computed in double; with lres set the forward also writes lres = L - (T)L
// rounded to T (0 in double), and the backward recomputes P = exp((s - lse) - lres), so that a
// float32 lse loses nothing of L's accuracy (the CPU op, ops/attention, packs the same residual).
// kv_tiles is 0 except in the BF16 backward's Hopper kernels reading the planes the forward kept
// (cuda: AttentionBuffers.Planes): there k and v are bfloat16 tiles of FG_HOPPER_BN keys in
// wgmma's 128-byte swizzle, as the persistent forward writes them, key j of head (b, hk) in tile
// (b Hkv + hk) ceil(Nk / FG_HOPPER_BN) + j / FG_HOPPER_BN of FG_HOPPER_BN d elements
// (wgmma.cuh, fg_kv_head, fg_load_kv_sw128); the k_* and v_* strides stay dk's and dv's.
typedef struct {
  uint64_t q, k, v, o, lse;     // forward: q, k, v in; o, lse out
  uint64_t lres;                // 0, or lse's rounding residual: forward out, backward in (see below)
  uint64_t do_, dq, dk, dv;     // backward: do_ in; dq, dk, dv out
  uint64_t dlse;                // backward: the gradient reaching lse, or 0 when none does
  uint64_t delta;               // backward workspace, double: rowsum(do_ * o) - dlse, [B, H, Nq]
  uint64_t key_lengths;         // const int32_t* or 0
  int64_t q_batch, q_head, q_row;
  int64_t k_batch, k_head, k_row;
  int64_t v_batch, v_head, v_row;
  int64_t o_batch, o_head, o_row;
  double scale;                 // multiplies q.k
  int32_t b, h, hkv, nq, nk, d;
  int32_t causal, causal_offset;
  int32_t precision;            // FG_PREC_*: which forward kernel the launcher picks (float32 only)
  int32_t kv_tiles;             // the Hopper BF16 backward: 1 when k and v are the forward's tiles (below)
} fg_attn_params;

// fg_fill_params asks fg_debug_fill (debug.cu) to fill n elements at x (float, or double when
// f64 is set) with scale times pseudo-random standard normal values drawn from seed.
typedef struct {
  uint64_t x;
  int64_t n;
  uint64_t seed;
  double scale;
  int32_t f64;
  int32_t reserved;
} fg_fill_params;

#endif
