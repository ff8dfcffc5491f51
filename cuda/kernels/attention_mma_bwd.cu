// attention_mma_bwd.cu: the attention backward on tensor cores (mma.sync, compute capability
// 8.0+), for float32 q, k, v, o, do_ in global memory. With P_ij = exp(s_ij - L_i) recomputed
// from s_ij = scale q_i . k_j and the forward's L (+ its residual lres), 0 where key j is not
// visible from row i (fg_key_limit):
//   dV_j  = sum_i P_ij dO_i
//   dP_ij = dO_i . V_j
//   dS_ij = scale P_ij (dP_ij - delta_i),   delta_i = rowsum(dO_i * O_i) - dL_i
//   dK_j  = sum_i dS_ij Q_i
//   dQ_i  = sum_j dS_ij K_j
// summed over the query heads of a key/value head's group (GQA), as attention_bwd.cu.
//
// Products by precision (FG_PREC_*, see attention_mma.cu): BF16 rounds every operand (q, k, v,
// dO and the probabilities P and dS) to bfloat16 and accumulates in float32; TF32 rounds them
// to TF32; EXACT multiplies by 3xTF32 and, because the tensor cores truncate as they accumulate,
// runs every chain of products over 16 head columns or 16 rows only, from a zero accumulator,
// adding the chains in float32 (as the forward), and adds the hi·hi products of a chain last
// (fg_bwd_3xtf32_k16). The exponentials, dP - delta and dS are
// float32; delta is summed in double.
//
// Three kernels, no atomics, so the result is the same bits on every run:
//   fg_attn_bwd_mma_pre: per query row, the float2 (L2, delta) with L2 = (L + lres) log2 e
//     (0 for rows without a visible key) and delta rounded to float, into the workspace
//     p.delta ([B, H, Nq] of 8 bytes: the FMA path's double delta, here two floats);
//   fg_attn_bwd_mma_dkdv: a block owns BN keys of one (b, key/value head), a warp 16 of them,
//     and walks every query tile of every query head of the group that sees any of its keys,
//     keeping dK and dV of its 16 keys in registers (FlashAttention-2's loop order). Per query
//     tile, in sub-blocks of SB queries: S^T = K Q^T and dP^T = V dO^T (the warp's K and V rows
//     are the A operands), P^T and dS^T in registers, then dV += P^T dO and dK += dS^T Q with
//     P^T and dS^T taken straight from the accumulators as A operands (the m16n8 accumulator
//     layout is the A layout of the next product up to a permutation of k that the B loads
//     repeat). The query tiles (Q, dO, and their (L2, delta)) are double-buffered: the copy of
//     the next overlaps the products of this one.
//   fg_attn_bwd_mma_dq: a block owns BM query rows of one (b, h), a warp 16 of them, and walks
//     the key tiles they see: S = Q K^T, dP = dO V^T, dS in registers, dQ += dS K. It recomputes
//     S and dP (two products more than accumulating dQ with atomics in the dK/dV kernel) and
//     buys determinism. Key tiles are double-buffered.
//
// Padded keys (j >= key_lengths[b]) and rows past Nq are never read: the tile copies zero-fill
// them (cp.async with a source size of 0); P and dS are selected to 0 outside the visible region
// (never computed as 0 * something), and dK, dV of padded keys are written as exactly 0.
//
// Shared memory holds float32 tiles [rows][D] without padding, swizzled in 16-byte chunks:
// chunk q of row r sits at chunk q ^ fg_bwd_sw(r). The fragment loads are then free of bank
// conflicts both ways an operand is read: 16-byte loads along a row (A operands, and B operands
// of S = A B^T: rows g and g + 1 of a phase land in opposite halves of the 32 banks) and 4-byte
// loads down a column (B operands of dV, dK, dQ: lane (g, t) reads rows 2t, 2t+1, 2t+8, 2t+9
// at column g of an 8-column block; rows 0, 2, 4, 6 XOR the chunk pair by 0, 2, 4, 6).
// The BF16 kernels also come in a second form, fg_attn_bwd_mma_ldm_*: the tiles are converted
// to bfloat16 once in shared memory (rows of D + 8 halves) and the fragments loaded by ldmatrix
// (.trans for the B operands read down a column), a quarter of the load instructions.
// And a third form on bfloat16 planes, fg_attn_bwd_mma_pre_* (the BF16 defaults where a scratch
// buffer can be had): the pre-pass fg_attn_bwd_bf16_prep rounds Q, dO, K and V to bfloat16 once
// per call into the scratch (and writes (L2, delta)), and the kernels copy bfloat16 tiles by
// cp.async straight into their shared-memory tiles: half the bytes, no conversion per tile, a
// warp's own A operand optionally kept in registers. The fused dK/dV kernel of that form
// (fg_attn_bwd_mma_fused_dkdv_*) also computes dQ, adding each key tile's share in a fixed
// order under semaphores (no atomics either); it is slower on the H100 (attention_mma_bwd.go).
#include "mma_bwd.cuh"

namespace {

// fg_bwd_sw is the chunk swizzle of row r (D/4 >= 8 chunks per row).
__device__ __forceinline__ int fg_bwd_sw(int r) { return (r & 6) ^ ((r & 1) << 2); }

// fg_bwd_load_tile starts the copy of rows [0, ROWS) of a row-major float32 global matrix g
// (row stride ld_g, D columns) into the swizzled tile s: rows r < nvalid are copied, the others
// zero-filled without a global read.
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void fg_bwd_load_tile(float* s, const float* g, int64_t ld_g, int nvalid) {
  constexpr int CH = D / 4;
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const bool ok = r < nvalid;
    fg_cp_async16(s + r * D + ((c ^ fg_bwd_sw(r)) << 2), ok ? g + (int64_t)r * ld_g + c * 4 : g, ok);
  }
}

// fg_bwd_row4 returns columns 4q..4q+3 of row r of a swizzled tile.
template <int D> __device__ __forceinline__ float4 fg_bwd_row4(const float* s, int r, int q) {
  return *(const float4*)&s[r * D + ((q ^ fg_bwd_sw(r)) << 2)];
}
// fg_bwd_at returns element (r, x) of a swizzled tile.
template <int D> __device__ __forceinline__ float fg_bwd_at(const float* s, int r, int x) {
  return s[r * D + (((x >> 2) ^ fg_bwd_sw(r)) << 2) + (x & 3)];
}

// FgRowA<P> (mma.cuh) is the A operand of the BF16 and TF32 products; the exact form splits it
// into hi and lo parts for 3xTF32.
// fg_bwd_3xtf32_k16 adds to c the 3xTF32 product of a 16-k A operand (k8 steps 0 and 1 split
// into h0 + l0 and h1 + l1) with B values b0, b1 (step 0) and b2, b3 (step 1): the four small
// products first, then the two hi·hi. The tensor cores truncate each addition to the
// accumulator; once the hi·hi terms are in, the accumulator has its full size, so adding
// them last costs two truncations at that size instead of four (fg_mma_3xtf32 twice).
__device__ __forceinline__ void fg_bwd_3xtf32_k16(float (&c)[4], const uint32_t (&h0)[4], const uint32_t (&l0)[4],
                                                  const uint32_t (&h1)[4], const uint32_t (&l1)[4], float b0, float b1,
                                                  float b2, float b3) {
  uint32_t bh0, bl0, bh1, bl1, bh2, bl2, bh3, bl3;
  fg_split_tf32(b0, bh0, bl0), fg_split_tf32(b1, bh1, bl1);
  fg_split_tf32(b2, bh2, bl2), fg_split_tf32(b3, bh3, bl3);
  fg_mma_tf32(c, l0[0], l0[1], l0[2], l0[3], bh0, bh1);
  fg_mma_tf32(c, h0[0], h0[1], h0[2], h0[3], bl0, bl1);
  fg_mma_tf32(c, l1[0], l1[1], l1[2], l1[3], bh2, bh3);
  fg_mma_tf32(c, h1[0], h1[1], h1[2], h1[3], bl2, bl3);
  fg_mma_tf32(c, h0[0], h0[1], h0[2], h0[3], bh0, bh1);
  fg_mma_tf32(c, h1[0], h1[1], h1[2], h1[3], bh2, bh3);
}

template <> struct FgRowA<FG_PREC_EXACT> {
  uint32_t h0[4], l0[4], h1[4], l1[4];
  __device__ __forceinline__ FgRowA(float4 x, float4 y) {
    fg_split_tf32(x.x, h0[0], l0[0]), fg_split_tf32(y.x, h0[1], l0[1]);
    fg_split_tf32(x.y, h0[2], l0[2]), fg_split_tf32(y.y, h0[3], l0[3]);
    fg_split_tf32(x.z, h1[0], l1[0]), fg_split_tf32(y.z, h1[1], l1[1]);
    fg_split_tf32(x.w, h1[2], l1[2]), fg_split_tf32(y.w, h1[3], l1[3]);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float4 kk) const {
    fg_bwd_3xtf32_k16(c, h0, l0, h1, l1, kk.x, kk.y, kk.z, kk.w);
  }
};

// FgAccA<P> is a warp's A operand over 16 k taken from two 16 x 8 accumulators s0, s1 (k 0..7
// and 8..15: lane (g, t) holds k 2t, 2t+1 of rows g, g+8 in each). mma(c, b) adds the product
// with the B operand whose rows k = 2t, 2t+1, 2t+8, 2t+9 at column g the lane passes in b.
template <int P> struct FgAccA;

template <> struct FgAccA<FG_PREC_BF16> {
  uint32_t a[4];
  __device__ __forceinline__ FgAccA(const float (&s0)[4], const float (&s1)[4]) {
    a[0] = fg_bf16x2(s0[0], s0[1]), a[1] = fg_bf16x2(s0[2], s0[3]);
    a[2] = fg_bf16x2(s1[0], s1[1]), a[3] = fg_bf16x2(s1[2], s1[3]);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float b0, float b1, float b2, float b3) const {
    fg_mma_bf16(c, a[0], a[1], a[2], a[3], fg_bf16x2(b0, b1), fg_bf16x2(b2, b3));
  }
};

// TF32: k 2t, 2t+1 of each 8-block as the instruction's k t, t+4: a = (g, 2t), (g+8, 2t),
// (g, 2t+1), (g+8, 2t+1).
template <> struct FgAccA<FG_PREC_TF32> {
  uint32_t a[8];
  __device__ __forceinline__ FgAccA(const float (&s0)[4], const float (&s1)[4]) {
    a[0] = fg_tf32(s0[0]), a[1] = fg_tf32(s0[2]), a[2] = fg_tf32(s0[1]), a[3] = fg_tf32(s0[3]);
    a[4] = fg_tf32(s1[0]), a[5] = fg_tf32(s1[2]), a[6] = fg_tf32(s1[1]), a[7] = fg_tf32(s1[3]);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float b0, float b1, float b2, float b3) const {
    fg_mma_tf32(c, a[0], a[1], a[2], a[3], fg_tf32(b0), fg_tf32(b1));
    fg_mma_tf32(c, a[4], a[5], a[6], a[7], fg_tf32(b2), fg_tf32(b3));
  }
};

template <> struct FgAccA<FG_PREC_EXACT> {
  uint32_t h0[4], l0[4], h1[4], l1[4];
  __device__ __forceinline__ FgAccA(const float (&s0)[4], const float (&s1)[4]) {
    fg_split_tf32(s0[0], h0[0], l0[0]), fg_split_tf32(s0[2], h0[1], l0[1]);
    fg_split_tf32(s0[1], h0[2], l0[2]), fg_split_tf32(s0[3], h0[3], l0[3]);
    fg_split_tf32(s1[0], h1[0], l1[0]), fg_split_tf32(s1[2], h1[1], l1[1]);
    fg_split_tf32(s1[1], h1[2], l1[2]), fg_split_tf32(s1[3], h1[3], l1[3]);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float b0, float b1, float b2, float b3) const {
    fg_bwd_3xtf32_k16(c, h0, l0, h1, l1, b0, b1, b2, b3);
  }
};

// fg_bwd_chain adds one 16-k product (f applied to an accumulator) to c: in place, or for EXACT
// into a zero accumulator whose sum is added to c in float32 (see the top of the file).
template <int P, typename F> __device__ __forceinline__ void fg_bwd_chain(float (&c)[4], const F& f) {
  if constexpr (P == FG_PREC_EXACT) {
    float a[4] = {0, 0, 0, 0};
    f(a);
    c[0] += a[0], c[1] += a[1], c[2] += a[2], c[3] += a[3];
  } else {
    f(c);
  }
}

// fg_bwd_abt accumulates the warp's c[16 x 8 NB] += A B^T over D columns, A rows ar, ar + 8
// (ar = 16 warp + g) of the swizzled tile sA, B rows br0 + 8 j + g of sB (both read along the
// row, 16-byte loads).
template <int P, int D, int NB>
__device__ __forceinline__ void fg_bwd_abt(float (&c)[NB][4], const float* sA, int ar, const float* sB, int br, int t) {
#pragma unroll
  for (int ch = 0; ch < D / 16; ++ch) {
    const FgRowA<P> a(fg_bwd_row4<D>(sA, ar, 4 * ch + t), fg_bwd_row4<D>(sA, ar + 8, 4 * ch + t));
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      const float4 kk = fg_bwd_row4<D>(sB, br + 8 * j, 4 * ch + t);
      fg_bwd_chain<P>(c[j], [&](float (&x)[4]) { a.mma(x, kk); });
    }
  }
}

// fg_bwd_ab accumulates the warp's o[16 x D] += A B over K = 8 NB rows of B: A from the
// accumulators s[NB][4] (16 x 8 NB), B rows br0 .. br0 + 8 NB of the swizzled tile sB, read
// down its columns (lane (g, t): rows 2t, 2t+1, 2t+8, 2t+9 of each 16, column g of each 8).
template <int P, int D, int NB>
__device__ __forceinline__ void fg_bwd_ab(float (&o)[D / 8][4], const float (&s)[NB][4], const float* sB, int br0, int g,
                                          int t) {
#pragma unroll
  for (int kk = 0; kk < NB / 2; ++kk) {
    const FgAccA<P> a(s[2 * kk], s[2 * kk + 1]);
    const int r = br0 + 16 * kk + 2 * t;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int x = 8 * n + g;
      const float b0 = fg_bwd_at<D>(sB, r, x), b1 = fg_bwd_at<D>(sB, r + 1, x);
      const float b2 = fg_bwd_at<D>(sB, r + 8, x), b3 = fg_bwd_at<D>(sB, r + 9, x);
      fg_bwd_chain<P>(o[n], [&](float (&y)[4]) { a.mma(y, b0, b1, b2, b3); });
    }
  }
}

// ---- bfloat16 tiles (the BF16 kernels with ldmatrix) ------------------------------------------

// fg_bwd_load_bf16 loads rows [0, ROWS) of a row-major float32 global matrix g (row stride ld_g,
// D columns) and stores them as bfloat16 with row stride D + 8: rows r < nvalid are read, the
// others zero-filled without a global read. Plain loads: for the tiles a block loads once.
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void fg_bwd_load_bf16(uint16_t* dst, const float* g, int64_t ld_g, int nvalid) {
  constexpr int CH = D / 4;
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const float4 x = r < nvalid ? *(const float4*)&g[(int64_t)r * ld_g + 4 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
    *(uint2*)&dst[r * (D + 8) + 4 * c] = make_uint2(fg_bf16x2(x.x, x.y), fg_bf16x2(x.z, x.w));
  }
}

// fg_bwd_ldm_abt_a is fg_bwd_abt on bfloat16 tiles (row stride D + 8, so the 8 rows of an
// ldmatrix hit distinct banks) with the warp's A operand (16 rows) given chunk by chunk:
// a_of(ch, a) sets a to A's fragment for columns 16 ch .. 16 ch + 15 (fg_bwd_ldm_abt loads it by
// ldmatrix, the pre-pass kernels keep it in registers). B rows br0 + 8 j + g of sB. An
// ldmatrix.x4 gives A's fragment for 16 columns (lane l addresses row l % 16, column
// (l / 16) 8), or B's for two 8-row blocks (row (l / 16) 8 + l % 8, column (l / 8 % 2) 8).
template <int D, int NB, typename AF>
__device__ __forceinline__ void fg_bwd_ldm_abt_a(float (&c)[NB][4], const AF& a_of, const uint16_t* sB, int br0,
                                                 int lane) {
  constexpr int LDH = D + 8;
  const uint16_t* pb = sB + (br0 + (lane / 16) * 8 + lane % 8) * LDH + (lane / 8 % 2) * 8;
#pragma unroll
  for (int ch = 0; ch < D / 16; ++ch) {
    uint32_t a[4];
    a_of(ch, a);
#pragma unroll
    for (int jp = 0; jp < NB / 2; ++jp) {
      uint32_t b[4];
      fg_ldmatrix_x4(b, pb + 16 * jp * LDH + 16 * ch);
      fg_mma_bf16(c[2 * jp], a[0], a[1], a[2], a[3], b[0], b[1]);
      fg_mma_bf16(c[2 * jp + 1], a[0], a[1], a[2], a[3], b[2], b[3]);
    }
  }
}

// fg_bwd_ldm_a_ptr is where lane addresses the A fragments of rows ar0 .. ar0 + 15 of sA.
template <int D> __device__ __forceinline__ const uint16_t* fg_bwd_ldm_a_ptr(const uint16_t* sA, int ar0, int lane) {
  return sA + (ar0 + lane % 16) * (D + 8) + (lane / 16) * 8;
}

// fg_bwd_ldm_abt: fg_bwd_ldm_abt_a with A rows ar0 .. ar0 + 15 of sA loaded by ldmatrix.
template <int D, int NB>
__device__ __forceinline__ void fg_bwd_ldm_abt(float (&c)[NB][4], const uint16_t* sA, int ar0, const uint16_t* sB,
                                               int br0, int lane) {
  const uint16_t* pa = fg_bwd_ldm_a_ptr<D>(sA, ar0, lane);
  fg_bwd_ldm_abt_a<D, NB>(c, [&](int ch, uint32_t (&a)[4]) { fg_ldmatrix_x4(a, pa + 16 * ch); }, sB, br0, lane);
}

// FgBwdRegA holds a warp's A fragments of 16 rows and D columns in registers (4 D / 16 of
// them) when KEEP, nothing otherwise; abt is fg_bwd_ldm_abt with A from the registers, or
// loaded from sA (rows ar0 ..) when not KEEP.
template <int D, bool KEEP> struct FgBwdRegA {
  uint32_t f[KEEP ? D / 16 : 1][4];
  __device__ __forceinline__ void load(const uint16_t* sA, int ar0, int lane) {
    if constexpr (KEEP) {
      const uint16_t* pa = fg_bwd_ldm_a_ptr<D>(sA, ar0, lane);
#pragma unroll
      for (int ch = 0; ch < D / 16; ++ch) fg_ldmatrix_x4(f[ch], pa + 16 * ch);
    }
  }
  template <int NB>
  __device__ __forceinline__ void abt(float (&c)[NB][4], const uint16_t* sA, int ar0, const uint16_t* sB, int br0,
                                     int lane) const {
    if constexpr (KEEP) {
      fg_bwd_ldm_abt_a<D, NB>(
          c, [&](int ch, uint32_t (&a)[4]) { a[0] = f[ch][0], a[1] = f[ch][1], a[2] = f[ch][2], a[3] = f[ch][3]; }, sB,
          br0, lane);
    } else {
      fg_bwd_ldm_abt<D, NB>(c, sA, ar0, sB, br0, lane);
    }
  }
};

// fg_bwd_ldm_ab is fg_bwd_ab on a bfloat16 tile: B rows br0 .. br0 + 8 NB of sB, read by
// ldmatrix.x4.trans, which gives the B fragments of two 8-column blocks for 16 rows (lane l
// addresses row (l / 8 % 2) 8 + l % 8, column (l / 16) 8).
template <int D, int NB>
__device__ __forceinline__ void fg_bwd_ldm_ab(float (&o)[D / 8][4], const float (&s)[NB][4], const uint16_t* sB, int br0,
                                              int lane) {
  constexpr int LDH = D + 8;
  const uint16_t* pb = sB + (br0 + (lane / 8 % 2) * 8 + lane % 8) * LDH + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < NB / 2; ++kk) {
    const FgAccA<FG_PREC_BF16> a(s[2 * kk], s[2 * kk + 1]);
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t b[4];
      fg_ldmatrix_x4_trans(b, pb + 16 * kk * LDH + 16 * np);
      fg_mma_bf16(o[2 * np], a.a[0], a.a[1], a.a[2], a.a[3], b[0], b[1]);
      fg_mma_bf16(o[2 * np + 1], a.a[0], a.a[1], a.a[2], a.a[3], b[2], b[3]);
    }
  }
}

// fg_bwd_copy_bf16 starts the copy of rows [0, ROWS) of a row-major bfloat16 global matrix g
// (row stride ld_g elements, D columns: the pre-pass's planes) into a tile of row stride D + 8
// (the layout of fg_bwd_ldm_*), 16 bytes per cp.async: rows r < nvalid are copied, the others
// zero-filled without a global read.
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void fg_bwd_copy_bf16(uint16_t* s, const uint16_t* g, int64_t ld_g, int nvalid) {
  constexpr int CH = D / 8;
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const bool ok = r < nvalid;
    fg_cp_async16((float*)(s + r * (D + 8) + 8 * c), ok ? (const float*)(g + r * ld_g + 8 * c) : (const float*)g, ok);
  }
}

// FgBwdRowIn holds what fg_bwd_row_ld reads of a row besides s: L, lres and dL (0 where
// absent), loaded by fg_bwd_row_in before the row's sum so that those loads overlap it (a
// load issued after the planes' stores could not be moved above them: they may alias).
struct FgBwdRowIn {
  float L, lres, dl;
};
__device__ __forceinline__ FgBwdRowIn fg_bwd_row_in(const fg_attn_params& p, int64_t row) {
  return {((const float*)p.lse)[row], p.lres ? ((const float*)p.lres)[row] : 0.f,
          p.dlse ? ((const float*)p.dlse)[row] : 0.f};
}
// fg_bwd_row_ld writes the workspace entry (L2, delta) of query row `row` ((b H + h) Nq + i)
// from s = rowsum(dO * O): L2 = (L + lres) log2 e (0 for a row without a visible key, L = -Inf)
// and delta = s - dL, rounded to float.
__device__ __forceinline__ void fg_bwd_row_ld(const fg_attn_params& p, int64_t row, double s, FgBwdRowIn in) {
  float l2 = 0;
  if (!fg_is_neg_inf(in.L)) {
    if (p.dlse) s -= (double)in.dl;
    const double full = (double)in.L + (p.lres ? (double)in.lres : 0.0);
    l2 = (float)(full * 1.4426950408889634);
  }
  ((float2*)p.delta)[row] = make_float2(l2, (float)s);
}
__device__ __forceinline__ void fg_bwd_row_ld(const fg_attn_params& p, int64_t row, double s) {
  fg_bwd_row_ld(p, row, s, fg_bwd_row_in(p, row));
}

// fg_bwd_sem_wait spins (one thread) until the semaphore *c reads turn (acquire, GPU scope);
// it traps instead of hanging when that takes more than about 2^26 polls (seconds), which
// only a broken order could cause.
__device__ __forceinline__ void fg_bwd_sem_wait(const int* c, int turn) {
  for (int n = 0;; ++n) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(c) : "memory");
    if (v == turn) return;
    if (n > (1 << 26)) __trap();
    __nanosleep(64);
  }
}
__device__ __forceinline__ void fg_bwd_sem_set(int* c, int v) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;\n" ::"l"(c), "r"(v) : "memory");
}

// fg_bwd_dq_partial computes a warp's share of the query tile's dQ partial dS K (BM x D, over
// the BN keys of the block): rows 16 rb .. 16 rb + 15, columns c0 .. c0 + NC - 1, into
// acc[NC / 8][4] (m16n8 C layout). sdS holds dS^T [BN][BM + 8] bfloat16 (key-major): A's
// fragment (m = query, k = key) comes by ldmatrix.x4.trans (lane l addresses key row
// 16 kk + (l / 16) 8 + l % 8, query column 16 rb + (l / 8 % 2) 8); K [BN][D + 8] gives B's
// fragments as in fg_bwd_ldm_ab.
template <int D, int BM, int BN, int NC>
__device__ __forceinline__ void fg_bwd_dq_partial(float (&acc)[NC / 8][4], const uint16_t* sdS, const uint16_t* sK,
                                                  int rb, int c0, int lane) {
  constexpr int LDS = BM + 8, LDH = D + 8;
#pragma unroll
  for (int n = 0; n < NC / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0;
  const uint16_t* pa = sdS + ((lane / 16) * 8 + lane % 8) * LDS + 16 * rb + (lane / 8 % 2) * 8;
  const uint16_t* pb = sK + ((lane / 8 % 2) * 8 + lane % 8) * LDH + c0 + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    uint32_t a[4];
    fg_ldmatrix_x4_trans(a, pa + 16 * kk * LDS);
#pragma unroll
    for (int np = 0; np < NC / 16; ++np) {
      uint32_t b[4];
      fg_ldmatrix_x4_trans(b, pb + 16 * kk * LDH + 16 * np);
      fg_mma_bf16(acc[2 * np], a[0], a[1], a[2], a[3], b[0], b[1]);
      fg_mma_bf16(acc[2 * np + 1], a[0], a[1], a[2], a[3], b[2], b[3]);
    }
  }
}

}  // namespace

// fg_attn_bwd_mma_pre: grid ceil(B*H*Nq / 4), 128 threads, a warp per query row (the lanes sum
// dO * O in double in a fixed order, as attention_bwd_preprocess.cu).
extern "C" __global__ void __launch_bounds__(128) fg_attn_bwd_mma_pre(const fg_attn_params p) {
  const int64_t row = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= (int64_t)p.b * p.h * p.nq) return;  // the whole warp leaves together
  const double s = fg_row_do_o<float>(p, row, lane);
  if (lane == 0) fg_bwd_row_ld(p, row, s);
}

// fg_attn_bwd_bf16_prep: the pre-pass of the BF16 kernels that read bfloat16 planes
// (fg_attn_bwd_mma_pre_*), one launch per call: a warp per row, grid-stride over the B H Nq
// query rows, then the B Hkv Nk key rows. A query row writes Q and dO rounded to bfloat16
// (round to nearest even, as the other BF16 kernels round them) and its workspace entry
// (L2, delta) as fg_attn_bwd_mma_pre (the lanes sum dO * O in double, in a fixed order: lane l
// holds columns 2l, 2l + 1 of every 64); a key row writes K and V rounded to bfloat16, unless
// the key is padding (j >= key_lengths[b]: neither read nor written; the main kernels never
// read it). pp.dst: four contiguous planes, Q, dO [B, H, Nq, d] then K, V [B, Hkv, Nk, d]
// (the launcher requires contiguous layouts, so each plane shares its source's strides), then
// the fused kernel's semaphores, int32 [B, H, ceil(Nq / 16)], which the pre-pass sets to 0;
// it also writes dQ = 0 in the rows without a visible key (L = -Inf), which no key tile of
// the fused kernel adds to (the other dQ kernels write those rows again).
extern "C" __global__ void __launch_bounds__(256) fg_attn_bwd_bf16_prep(const fg_mma_prep_params pp) {
  const fg_attn_params& p = pp.src;
  const int lane = threadIdx.x % 32;
  const int64_t qrows = (int64_t)p.b * p.h * p.nq, krows = (int64_t)p.b * p.hkv * p.nk;
  uint16_t* qh = (uint16_t*)pp.dst;
  uint16_t* doh = qh + qrows * p.d;
  uint16_t* kh = doh + qrows * p.d;
  uint16_t* vh = kh + krows * p.d;
  int* sem = (int*)(vh + krows * p.d);
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < qrows + krows; row += warps) {
    if (row < qrows) {
      const int i = (int)(row % p.nq), h = (int)(row / p.nq % p.h), b = (int)(row / p.nq / p.h);
      const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row;
      const int64_t off = b * p.o_batch + h * p.o_head + (int64_t)i * p.o_row;
      const float* o = (const float*)p.o + off;
      const float* dO = (const float*)p.do_ + off;
      double s = 0;
      for (int c = 2 * lane; c < p.d; c += 64) {
        const float2 x = *(const float2*)(q + c), y = *(const float2*)(dO + c), z = *(const float2*)(o + c);
        *(uint32_t*)(qh + row * p.d + c) = fg_bf16x2(x.x, x.y);
        *(uint32_t*)(doh + row * p.d + c) = fg_bf16x2(y.x, y.y);
        s = fma((double)y.x, (double)z.x, s);
        s = fma((double)y.y, (double)z.y, s);
      }
      s = fg_group_sum<32>(s);
      if (lane == 0) fg_bwd_row_ld(p, row, s);
      // For the fused kernel: the semaphore of each 16 query rows starts at 0, and dQ of a
      // row without a visible key is 0 (no key tile adds to it).
      if (lane == 0 && i % 16 == 0) sem[((int64_t)b * p.h + h) * ((p.nq + 15) / 16) + i / 16] = 0;
      if (fg_is_neg_inf(((const float*)p.lse)[row])) {
        float* dq = (float*)p.dq + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row;
        for (int c = 2 * lane; c < p.d; c += 64) *(float2*)(dq + c) = make_float2(0.f, 0.f);
      }
    } else {
      const int64_t kr = row - qrows;
      const int j = (int)(kr % p.nk), hk = (int)(kr / p.nk % p.hkv), b = (int)(kr / p.nk / p.hkv);
      if (p.key_lengths && j >= ((const int32_t*)p.key_lengths)[b]) continue;  // padding: never read
      const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head + (int64_t)j * p.k_row;
      const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head + (int64_t)j * p.v_row;
      for (int c = 2 * lane; c < p.d; c += 64) {
        const float2 x = *(const float2*)(k + c), y = *(const float2*)(v + c);
        *(uint32_t*)(kh + kr * p.d + c) = fg_bf16x2(x.x, x.y);
        *(uint32_t*)(vh + kr * p.d + c) = fg_bf16x2(y.x, y.y);
      }
    }
  }
}

// fg_attn_bwd_bf16_prep4 is fg_attn_bwd_bf16_prep (same outputs, same rows skipped) with
// 16-byte accesses: LPR = 16 lanes per row for d <= 64 (two rows per warp step), 32 above, each
// lane reading 4 columns (4 sub, + 4 LPR, ...) of Q, dO and O (or K and V) at a time and writing
// them as 8 bytes of bfloat16; delta's sum runs in double over a lane's columns in order, then
// over the row's lanes in a fixed order (fg_group_sum). On the H100 at d = 64, B H N = 524288:
// 0.40-0.45 ms, against 0.43-0.46 for fg_attn_bwd_bf16_prep (cuda/attention_mma_bwd.go, bwdPrep).
//
// With QKV false (fg_attn_bwd_bf16_prep4_do: Q, K and V are the planes the forward kept) it
// converts dO only, into dst, and writes no semaphores (the kernels that read them do not run
// on those planes).
template <int LPR, bool QKV> __device__ __forceinline__ void fg_bwd_bf16_prep4(const fg_mma_prep_params& pp) {
  constexpr int RPW = 32 / LPR;  // rows per warp step
  const fg_attn_params& p = pp.src;
  const int lane = threadIdx.x % 32, sub = lane % LPR;
  const int64_t qrows = (int64_t)p.b * p.h * p.nq, krows = (int64_t)p.b * p.hkv * p.nk;
  const int64_t total = QKV ? qrows + krows : qrows;
  uint16_t* qh = (uint16_t*)pp.dst;
  uint16_t* doh = QKV ? qh + qrows * p.d : qh;
  uint16_t* kh = doh + qrows * p.d;
  uint16_t* vh = kh + krows * p.d;
  int* sem = (int*)(vh + krows * p.d);
  const int64_t step = (int64_t)gridDim.x * (blockDim.x / 32) * RPW;
  const auto st8 = [](uint16_t* d, float4 x) { *(uint2*)d = make_uint2(fg_bf16x2(x.x, x.y), fg_bf16x2(x.z, x.w)); };
  for (int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32 * RPW; base < total; base += step) {
    const int64_t row = base + lane / LPR;  // warp-uniform loop: every lane reaches the sum below
    const bool isq = row < qrows;
    double s = 0;
    FgBwdRowIn in{};
    if (isq) {
      in = fg_bwd_row_in(p, row);
      const int i = (int)(row % p.nq), h = (int)(row / p.nq % p.h), b = (int)(row / p.nq / p.h);
      const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row;
      const int64_t off = b * p.o_batch + h * p.o_head + (int64_t)i * p.o_row;
      const float* o = (const float*)p.o + off;
      const float* dO = (const float*)p.do_ + off;
      for (int c = 4 * sub; c < p.d; c += 4 * LPR) {
        const float4 y = *(const float4*)(dO + c), z = *(const float4*)(o + c);
        if constexpr (QKV) st8(qh + row * p.d + c, *(const float4*)(q + c));
        st8(doh + row * p.d + c, y);
        s = fma((double)y.x, (double)z.x, s);
        s = fma((double)y.y, (double)z.y, s);
        s = fma((double)y.z, (double)z.z, s);
        s = fma((double)y.w, (double)z.w, s);
      }
    } else if (QKV && row < total) {
      const int64_t kr = row - qrows;
      const int j = (int)(kr % p.nk), hk = (int)(kr / p.nk % p.hkv), b = (int)(kr / p.nk / p.hkv);
      if (!p.key_lengths || j < ((const int32_t*)p.key_lengths)[b]) {  // padding: never read
        const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head + (int64_t)j * p.k_row;
        const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head + (int64_t)j * p.v_row;
        for (int c = 4 * sub; c < p.d; c += 4 * LPR) {
          const float4 x = *(const float4*)(k + c), y = *(const float4*)(v + c);
          st8(kh + kr * p.d + c, x);
          st8(vh + kr * p.d + c, y);
        }
      }
    }
    s = fg_group_sum<LPR>(s);
    if (isq) {
      const int i = (int)(row % p.nq), h = (int)(row / p.nq % p.h), b = (int)(row / p.nq / p.h);
      if (sub == 0) {
        fg_bwd_row_ld(p, row, s, in);
        if (QKV && i % 16 == 0) sem[((int64_t)b * p.h + h) * ((p.nq + 15) / 16) + i / 16] = 0;
      }
      if (fg_is_neg_inf(in.L)) {
        float* dq = (float*)p.dq + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row;
        for (int c = 4 * sub; c < p.d; c += 4 * LPR) *(float4*)(dq + c) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  }
}
// Rows on 16 bytes (d and every stride a multiple of 4, as pickMMABwd requires).
extern "C" __global__ void __launch_bounds__(256) fg_attn_bwd_bf16_prep4(const fg_mma_prep_params pp) {
  if (pp.src.d <= 64)
    fg_bwd_bf16_prep4<16, true>(pp);
  else
    fg_bwd_bf16_prep4<32, true>(pp);
}
extern "C" __global__ void __launch_bounds__(256) fg_attn_bwd_bf16_prep4_do(const fg_mma_prep_params pp) {
  if (pp.src.d <= 64)
    fg_bwd_bf16_prep4<16, false>(pp);
  else
    fg_bwd_bf16_prep4<32, false>(pp);
}
// fg_attn_bwd_x3_prep4 is fg_attn_bwd_bf16_prep4's work (the rows, the workspace, dQ of rows
// without a visible key) for the Exact 3xF16 kernels at d = 4 LPR (64 or 128: one float4 of
// each tensor per lane): each row of Q, dO, K and V scaled by its own power of two (fg_x3_exp
// of the row's largest magnitude, over its LPR lanes) and written as half hi and lo planes,
// and the inverse factors as a float2 per row (FgX3Planes: (Q, dO) per query row, (K, V) per
// key row). Padded keys are neither read nor written.
template <int LPR> __device__ __forceinline__ void fg_bwd_x3_prep4(const fg_mma_prep_params& pp) {
  constexpr int RPW = 32 / LPR;  // rows per warp step
  const fg_attn_params& p = pp.src;
  if (p.d != 4 * LPR) __trap();
  const int lane = threadIdx.x % 32, sub = lane % LPR, c = 4 * sub;
  const int64_t qrows = (int64_t)p.b * p.h * p.nq, krows = (int64_t)p.b * p.hkv * p.nk;
  const int64_t qe = qrows * p.d, ke = krows * p.d, total = qrows + krows;
  uint16_t* qh = (uint16_t*)pp.dst;  // Q hi, Q lo, dO hi, dO lo, K hi, K lo, V hi, V lo
  uint16_t* kh = qh + 4 * qe;
  float2* qf = (float2*)(kh + 4 * ke);  // (Q, dO) inverse factors per query row, then (K, V) per key row
  float2* kf = qf + qrows;
  const int64_t step = (int64_t)gridDim.x * (blockDim.x / 32) * RPW;
  // split writes x times 2^e (e from the row's largest magnitude m) as hi at d, lo at d + lo.
  const auto split = [](uint16_t* d, int64_t lo, float4 x, int e) {
    const float f = fg_pow2(e);
    uint32_t h0, l0, h1, l1;
    fg_f16_split2(x.x, x.y, f, h0, l0);
    fg_f16_split2(x.z, x.w, f, h1, l1);
    *(uint2*)d = make_uint2(h0, h1);
    *(uint2*)(d + lo) = make_uint2(l0, l1);
  };
  const auto amax = [](float4 x) { return fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(x.z), fabsf(x.w))); };
  for (int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32 * RPW; base < total; base += step) {
    const int64_t row = base + lane / LPR;  // warp-uniform loop: every lane reaches the group operations
    const bool isq = row < qrows;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f), y = a;  // Q and dO, or K and V
    double s = 0;
    FgBwdRowIn in{};
    int b = 0, h = 0, i = 0;
    bool keep = false;
    if (isq) {
      in = fg_bwd_row_in(p, row);
      i = (int)(row % p.nq), h = (int)(row / p.nq % p.h), b = (int)(row / p.nq / p.h);
      const int64_t off = b * p.o_batch + h * p.o_head + (int64_t)i * p.o_row;
      a = *(const float4*)((const float*)p.q + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row + c);
      y = *(const float4*)((const float*)p.do_ + off + c);
      const float4 z = *(const float4*)((const float*)p.o + off + c);
      s = fma((double)y.x, (double)z.x, s);
      s = fma((double)y.y, (double)z.y, s);
      s = fma((double)y.z, (double)z.z, s);
      s = fma((double)y.w, (double)z.w, s);
      keep = true;
    } else if (row < total) {
      const int64_t kr = row - qrows;
      const int j = (int)(kr % p.nk), hk = (int)(kr / p.nk % p.hkv), bk = (int)(kr / p.nk / p.hkv);
      if (!p.key_lengths || j < ((const int32_t*)p.key_lengths)[bk]) {  // padding: never read
        a = *(const float4*)((const float*)p.k + bk * p.k_batch + hk * p.k_head + (int64_t)j * p.k_row + c);
        y = *(const float4*)((const float*)p.v + bk * p.v_batch + hk * p.v_head + (int64_t)j * p.v_row + c);
        keep = true;
      }
    }
    s = fg_group_sum<LPR>(s);
    const int ea = fg_x3_exp(fg_group_max<LPR>(amax(a))), ey = fg_x3_exp(fg_group_max<LPR>(amax(y)));
    if (keep) {
      const int64_t r = isq ? row : row - qrows;
      uint16_t* at = (isq ? qh : kh) + r * p.d + c;
      const int64_t pe = isq ? qe : ke;  // elements of one plane
      split(at, pe, a, ea);
      split(at + 2 * pe, pe, y, ey);
      if (sub == 0) (isq ? qf : kf)[r] = make_float2(fg_pow2(-ea), fg_pow2(-ey));
    }
    if (isq) {
      if (sub == 0) fg_bwd_row_ld(p, row, s, in);
      if (fg_is_neg_inf(in.L)) {
        float* dq = (float*)p.dq + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row;
        *(float4*)(dq + c) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  }
}
extern "C" __global__ void __launch_bounds__(256) fg_attn_bwd_x3_prep4(const fg_mma_prep_params pp) {
  if (pp.src.d <= 64)
    fg_bwd_x3_prep4<16>(pp);
  else
    fg_bwd_x3_prep4<32>(pp);
}

// fg_attn_bwd_mma_dkdv: grid (ceil(Nk/BN), Hkv, B), 2 BN threads (BN/16 warps). D: the head
// dimension (d == D), BM: the query tile rows, SB: the queries per sub-block (registers for
// S^T and dP^T: SB/2 each). Shared memory: K, V [BN][D], and two stages of Q, dO [BM][D] and
// (L2, delta) [BM].
template <int P, int D, int BN, int BM, int SB> __device__ void fg_attn_bwd_mma_dkdv(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BN, NB = SB / 8, OB = D / 8;
  static_assert(D % 32 == 0 && BN % 16 == 0 && BM % SB == 0 && SB % 16 == 0, "tile sizes");
  constexpr int STAGE = 2 * BM * D + 2 * BM;  // floats per stage: Q, dO, (L2, delta)
  constexpr unsigned SMEM = (2 * BN * D + 2 * STAGE) * sizeof(float);
  if (fg_dynamic_smem() < SMEM) __trap();
  float* sK = (float*)fg_smem;
  float* sV = sK + BN * D;
  float* sStage = sV + BN * D;

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.h / p.hkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0, group);
  const int klen = walk.klen, total = walk.total;

  auto load_stage = [&](int it) {
    const int hq = walk.hq(it), m0 = walk.m0(it);
    float* st = sStage + (it & 1) * STAGE;
    const int nvalid = p.nq - m0;
    fg_bwd_load_tile<BM, D, THREADS>(st, (const float*)p.q + b * p.q_batch + hq * p.q_head + (int64_t)m0 * p.q_row,
                                     p.q_row, nvalid);
    fg_bwd_load_tile<BM, D, THREADS>(st + BM * D,
                                     (const float*)p.do_ + b * p.o_batch + hq * p.o_head + (int64_t)m0 * p.o_row,
                                     p.o_row, nvalid);
    // (L2, delta): 8 bytes per row, rows past Nq zero-filled.
    const float* ld = (const float*)p.delta + 2 * (((int64_t)b * p.h + hq) * p.nq + m0);
    for (int r = threadIdx.x; r < BM; r += THREADS) {
      const bool ok = r < nvalid;
      const unsigned s = (unsigned)__cvta_generic_to_shared(st + 2 * BM * D + 2 * r);
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(ok ? ld + 2 * r : ld), "r"(ok ? 8 : 0));
    }
  };

  if (total > 0) {
    const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
    const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
    fg_bwd_load_tile<BN, D, THREADS>(sK, k + (int64_t)n0 * p.k_row, p.k_row, klen - n0);
    fg_bwd_load_tile<BN, D, THREADS>(sV, v + (int64_t)n0 * p.v_row, p.v_row, klen - n0);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  const int kr = 16 * warp + g;  // the lane's key rows in the tile: kr, kr + 8
  for (int it = 0; it < total; ++it) {
    fg_cp_async_wait_all();
    __syncthreads();  // this tile landed; every warp is done with the other stage
    if (it + 1 < total) {
      load_stage(it + 1);
      fg_cp_async_commit();
    }
    const int m0 = walk.m0(it);
    const float* sQ = sStage + (it & 1) * STAGE;
    const float* sdO = sQ + BM * D;
    const float2* sLD = (const float2*)(sdO + BM * D);
    // Masks matter where the tile reaches past Nq or the key length, or crosses the diagonal.
    const bool mask = fg_dkdv_masked<BM, BN>(p, m0, n0, klen);
#pragma unroll 1
    for (int sb = 0; sb < BM; sb += SB) {
      float st[NB][4], dpt[NB][4];
      fg_bwd_zero(st);
      fg_bwd_zero(dpt);
      fg_bwd_abt<P, D, NB>(st, sK, kr, sQ, sb + g, t);
      fg_bwd_abt<P, D, NB>(dpt, sV, kr, sdO, sb + g, t);
      fg_bwd_pds_t(st, dpt, sLD, sb, m0, n0, kr, t, klen, mask, sl2, scale, p);
      fg_bwd_ab<P, D, NB>(dv, st, sdO, sb, g, t);
      fg_bwd_ab<P, D, NB>(dk, dpt, sQ, sb, g, t);
    }
  }

  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_mma_dq: grid (ceil(Nq/BM), H, B), 2 BM threads (BM/16 warps). BN: the key tile
// rows. Shared memory: Q, dO [BM][D], two stages of K, V [BN][D].
template <int P, int D, int BM, int BN> __device__ void fg_attn_bwd_mma_dq(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BM, NB = BN / 8, OB = D / 8;
  static_assert(D % 32 == 0 && BM % 16 == 0 && BN % 16 == 0, "tile sizes");
  constexpr int STAGE = 2 * BN * D;
  constexpr unsigned SMEM = (2 * BM * D + 2 * STAGE) * sizeof(float);
  if (fg_dynamic_smem() < SMEM) __trap();
  float* sQ = (float*)fg_smem;
  float* sdO = sQ + BM * D;
  float* sStage = sdO + BM * D;

  // The last query tiles first: under the causal mask they see the most keys.
  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
  const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);

  const FgDqRows rows(p, b, h, m0 + 16 * warp + g, t);

  auto load_stage = [&](int n0) {
    float* st = sStage + ((n0 / BN) & 1) * STAGE;
    fg_bwd_load_tile<BN, D, THREADS>(st, k + (int64_t)n0 * p.k_row, p.k_row, kv_end - n0);
    fg_bwd_load_tile<BN, D, THREADS>(st + BN * D, v + (int64_t)n0 * p.v_row, p.v_row, kv_end - n0);
  };
  if (kv_end > 0) {
    fg_bwd_load_tile<BM, D, THREADS>(sQ, (const float*)p.q + b * p.q_batch + h * p.q_head + (int64_t)m0 * p.q_row,
                                     p.q_row, p.nq - m0);
    fg_bwd_load_tile<BM, D, THREADS>(sdO, (const float*)p.do_ + b * p.o_batch + h * p.o_head + (int64_t)m0 * p.o_row,
                                     p.o_row, p.nq - m0);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dq[OB][4];
  fg_bwd_zero(dq);
  const int qr = 16 * warp + g;
  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    fg_cp_async_wait_all();
    __syncthreads();  // this tile landed; every warp is done with the other stage
    if (n0 + BN < kv_end) {
      load_stage(n0 + BN);
      fg_cp_async_commit();
    }
    const float* sK = sStage + ((n0 / BN) & 1) * STAGE;
    const float* sV = sK + BN * D;
    float s[NB][4], dp[NB][4];
    fg_bwd_zero(s);
    fg_bwd_zero(dp);
    fg_bwd_abt<P, D, NB>(s, sQ, qr, sK, g, t);
    fg_bwd_abt<P, D, NB>(dp, sdO, qr, sV, g, t);
    rows.ds(s, dp, n0, sl2, scale);
    fg_bwd_ab<P, D, NB>(dq, dp, sK, 0, g, t);
  }

  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, dq, qr, p.nq - m0, p.nq - m0, t);
}

// fg_attn_bwd_mma_ldm_dkdv (BF16 only): fg_attn_bwd_mma_dkdv with bfloat16 tiles in shared
// memory and fragments loaded by ldmatrix: a quarter of the shared-memory instructions of the
// float32 tiles and half their bytes, no conversion per fragment. K and V are converted once as
// the block loads them; each query tile is copied as float32 by cp.async into one of two
// staging buffers (with its (L2, delta)) and converted to bfloat16 when it is its turn.
// Shared memory: two stages of Q, dO [BM][D] float32 and (L2, delta) [BM]; K, V [BN][D+8] and
// Q, dO [BM][D+8] bfloat16.
template <int D, int BN, int BM, int SB> __device__ void fg_attn_bwd_mma_ldm_dkdv(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BN, NB = SB / 8, OB = D / 8, LDH = D + 8;
  static_assert(D % 16 == 0 && BN % 16 == 0 && BM % SB == 0 && SB % 16 == 0, "tile sizes");
  constexpr int STAGE = 2 * BM * D + 2 * BM;  // floats per stage: Q, dO, (L2, delta)
  constexpr unsigned SMEM = 2 * STAGE * sizeof(float) + (2 * BN + 2 * BM) * LDH * sizeof(uint16_t);
  if (fg_dynamic_smem() < SMEM) __trap();
  float* sStage = (float*)fg_smem;
  uint16_t* sKh = (uint16_t*)(sStage + 2 * STAGE);
  uint16_t* sVh = sKh + BN * LDH;
  uint16_t* sQh = sVh + BN * LDH;
  uint16_t* sdOh = sQh + BM * LDH;

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.h / p.hkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0, group);
  const int klen = walk.klen, total = walk.total;

  auto load_stage = [&](int it) {
    const int hq = walk.hq(it), m0 = walk.m0(it);
    float* st = sStage + (it & 1) * STAGE;
    const int nvalid = p.nq - m0;
    fg_mma_load_tile<BM, D, D, THREADS>(st, (const float*)p.q + b * p.q_batch + hq * p.q_head + (int64_t)m0 * p.q_row,
                                        p.q_row, nvalid);
    fg_mma_load_tile<BM, D, D, THREADS>(
        st + BM * D, (const float*)p.do_ + b * p.o_batch + hq * p.o_head + (int64_t)m0 * p.o_row, p.o_row, nvalid);
    const float* ld = (const float*)p.delta + 2 * (((int64_t)b * p.h + hq) * p.nq + m0);
    for (int r = threadIdx.x; r < BM; r += THREADS) {
      const bool ok = r < nvalid;
      const unsigned s = (unsigned)__cvta_generic_to_shared(st + 2 * BM * D + 2 * r);
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(ok ? ld + 2 * r : ld), "r"(ok ? 8 : 0));
    }
  };

  if (total > 0) {
    load_stage(0);
    fg_cp_async_commit();
    const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
    const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
    fg_bwd_load_bf16<BN, D, THREADS>(sKh, k + (int64_t)n0 * p.k_row, p.k_row, klen - n0);
    fg_bwd_load_bf16<BN, D, THREADS>(sVh, v + (int64_t)n0 * p.v_row, p.v_row, klen - n0);
  }

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  const int kr = 16 * warp + g;
  for (int it = 0; it < total; ++it) {
    fg_cp_async_wait_all();
    __syncthreads();  // this tile landed; every warp is done with the last tile's sQh, sdOh
    if (it + 1 < total) {
      load_stage(it + 1);
      fg_cp_async_commit();
    }
    const int m0 = walk.m0(it);
    const float* st = sStage + (it & 1) * STAGE;
    fg_to_bf16_tile<BM, D, LDH, THREADS>(sQh, st);
    fg_to_bf16_tile<BM, D, LDH, THREADS>(sdOh, st + BM * D);
    const float2* sLD = (const float2*)(st + 2 * BM * D);
    __syncthreads();  // Q, dO in bfloat16
    const bool mask = fg_dkdv_masked<BM, BN>(p, m0, n0, klen);
#pragma unroll 1
    for (int sb = 0; sb < BM; sb += SB) {
      float sT[NB][4], dpT[NB][4];
      fg_bwd_zero(sT);
      fg_bwd_zero(dpT);
      fg_bwd_ldm_abt<D, NB>(sT, sKh, 16 * warp, sQh, sb, lane);
      fg_bwd_ldm_abt<D, NB>(dpT, sVh, 16 * warp, sdOh, sb, lane);
      fg_bwd_pds_t(sT, dpT, sLD, sb, m0, n0, kr, t, klen, mask, sl2, scale, p);
      fg_bwd_ldm_ab<D, NB>(dv, sT, sdOh, sb, lane);
      fg_bwd_ldm_ab<D, NB>(dk, dpT, sQh, sb, lane);
    }
  }

  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_mma_ldm_dq (BF16 only): fg_attn_bwd_mma_dq with bfloat16 tiles and ldmatrix, as
// fg_attn_bwd_mma_ldm_dkdv: Q and dO converted once as the block loads them, each key tile
// staged as float32 by cp.async (two stages) and converted when it is its turn. Shared memory:
// two stages of K, V [BN][D] float32; Q, dO [BM][D+8] and K, V [BN][D+8] bfloat16.
template <int D, int BM, int BN> __device__ void fg_attn_bwd_mma_ldm_dq(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BM, NB = BN / 8, OB = D / 8, LDH = D + 8;
  static_assert(D % 16 == 0 && BM % 16 == 0 && BN % 16 == 0, "tile sizes");
  constexpr int STAGE = 2 * BN * D;
  constexpr unsigned SMEM = 2 * STAGE * sizeof(float) + (2 * BM + 2 * BN) * LDH * sizeof(uint16_t);
  if (fg_dynamic_smem() < SMEM) __trap();
  float* sStage = (float*)fg_smem;
  uint16_t* sQh = (uint16_t*)(sStage + 2 * STAGE);
  uint16_t* sdOh = sQh + BM * LDH;
  uint16_t* sKh = sdOh + BM * LDH;
  uint16_t* sVh = sKh + BN * LDH;

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
  const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  const FgDqRows rows(p, b, h, m0 + 16 * warp + g, t);

  auto load_stage = [&](int n0) {
    float* st = sStage + ((n0 / BN) & 1) * STAGE;
    fg_mma_load_tile<BN, D, D, THREADS>(st, k + (int64_t)n0 * p.k_row, p.k_row, kv_end - n0);
    fg_mma_load_tile<BN, D, D, THREADS>(st + BN * D, v + (int64_t)n0 * p.v_row, p.v_row, kv_end - n0);
  };
  if (kv_end > 0) {
    load_stage(0);
    fg_cp_async_commit();
    fg_bwd_load_bf16<BM, D, THREADS>(sQh, (const float*)p.q + b * p.q_batch + h * p.q_head + (int64_t)m0 * p.q_row,
                                     p.q_row, p.nq - m0);
    fg_bwd_load_bf16<BM, D, THREADS>(sdOh, (const float*)p.do_ + b * p.o_batch + h * p.o_head + (int64_t)m0 * p.o_row,
                                     p.o_row, p.nq - m0);
  }

  float dq[OB][4];
  fg_bwd_zero(dq);
  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    fg_cp_async_wait_all();
    __syncthreads();  // this tile landed; every warp is done with the last tile's sKh, sVh
    if (n0 + BN < kv_end) {
      load_stage(n0 + BN);
      fg_cp_async_commit();
    }
    const float* st = sStage + ((n0 / BN) & 1) * STAGE;
    fg_to_bf16_tile<BN, D, LDH, THREADS>(sKh, st);
    fg_to_bf16_tile<BN, D, LDH, THREADS>(sVh, st + BN * D);
    __syncthreads();  // K, V in bfloat16
    float s[NB][4], dp[NB][4];
    fg_bwd_zero(s);
    fg_bwd_zero(dp);
    fg_bwd_ldm_abt<D, NB>(s, sQh, 16 * warp, sKh, 0, lane);
    fg_bwd_ldm_abt<D, NB>(dp, sdOh, 16 * warp, sVh, 0, lane);
    rows.ds(s, dp, n0, sl2, scale);
    fg_bwd_ldm_ab<D, NB>(dq, dp, sKh, 0, lane);
  }

  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, dq, 16 * warp + g, p.nq - m0, p.nq - m0, t);
}

// fg_attn_bwd_mma_pre_dkdv (BF16 only): fg_attn_bwd_mma_ldm_dkdv on the bfloat16 planes of
// fg_attn_bwd_bf16_prep (p.q, p.do_, p.k, p.v point at them): every tile is copied by cp.async
// straight into its bfloat16 tile, half the bytes of the float32 tiles and no conversion pass
// (nor the block sync after it) per tile. With KREG the warp keeps its 16 rows of K and V as
// A fragments in registers for the whole walk (4 D / 8 registers) instead of reloading them
// for every query sub-block. Shared memory: K, V [BN][D+8] bfloat16, and two stages of Q, dO
// [BM][D+8] bfloat16 with (L2, delta) [BM].
//
// FUSE: the kernel also computes dQ, without the dQ kernel's second S and dP (FlashAttention-3's
// deterministic mode): per query tile the warps store dS^T in bfloat16 in shared memory, each
// warp computes a 16-row, D/(W/(BM/16))-column share of the tile's partial dQ = dS K over the
// block's BN keys, and the block adds it to dQ (float32, in global memory) in a fixed order:
// key tile 0 first (it stores), then 1, 2, ...: a semaphore per 16 query rows (in the scratch
// after the V plane, zeroed by the pre-pass) counts the key tiles that have added, and the
// block of key tile jt waits until it reads jt, adds with L2-only loads and stores, and sets
// it to jt + 1. Every key tile below jt adds to every query tile jt adds to (they start at or
// before its first), so the order is total and the bits the same on every run. The grid is
// (B Hkv, ceil(Nk / BN)): key tile jt's blocks come after key tile jt - 1's in launch order,
// so a block only waits for blocks already running or done. Shared memory: and dS^T
// [BN][BM + 8] bfloat16.
template <int D, int BN, int BM, int SB, bool KREG, bool FUSE>
__device__ void fg_attn_bwd_mma_pre_dkdv(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BN, NB = SB / 8, OB = D / 8, LDH = D + 8, W = BN / 16;
  static_assert(D % 16 == 0 && BN % 16 == 0 && BM % SB == 0 && SB % 16 == 0, "tile sizes");
  constexpr int RB = BM / 16, CS = FUSE ? W / RB : 1, NC = D / CS;  // the dQ shares
  static_assert(!FUSE || (W % RB == 0 && NC % 16 == 0), "dQ shares");
  constexpr int STAGE = 2 * BM * LDH + 4 * BM;  // uint16 per stage: Q, dO, (L2, delta)
  constexpr int LDS = BM + 8;
  constexpr unsigned SMEM = (2 * BN * LDH + 2 * STAGE + (FUSE ? BN * LDS : 0)) * sizeof(uint16_t);
  if (fg_dynamic_smem() < SMEM) __trap();
  uint16_t* sKh = (uint16_t*)fg_smem;
  uint16_t* sVh = sKh + BN * LDH;
  uint16_t* sStage = sVh + BN * LDH;
  uint16_t* sdS = sStage + 2 * STAGE;  // FUSE only

  const int jt = FUSE ? blockIdx.y : blockIdx.x;
  const int n0 = jt * BN, hk = FUSE ? blockIdx.x % p.hkv : blockIdx.y, b = FUSE ? blockIdx.x / p.hkv : blockIdx.z;
  const int group = p.h / p.hkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0, group);
  const int klen = walk.klen, total = walk.total;

  auto load_stage = [&](int it) {
    const int hq = walk.hq(it), m0 = walk.m0(it);
    uint16_t* st = sStage + (it & 1) * STAGE;
    const int nvalid = p.nq - m0;
    fg_bwd_copy_bf16<BM, D, THREADS>(st, (const uint16_t*)p.q + b * p.q_batch + hq * p.q_head + (int64_t)m0 * p.q_row,
                                     p.q_row, nvalid);
    fg_bwd_copy_bf16<BM, D, THREADS>(
        st + BM * LDH, (const uint16_t*)p.do_ + b * p.o_batch + hq * p.o_head + (int64_t)m0 * p.o_row, p.o_row, nvalid);
    fg_bwd_copy_ld<BM, THREADS>((float*)(st + 2 * BM * LDH), (const float*)p.delta + 2 * (((int64_t)b * p.h + hq) * p.nq + m0),
                                nvalid);
  };

  if (total > 0) {
    fg_bwd_copy_bf16<BN, D, THREADS>(sKh, (const uint16_t*)p.k + b * p.k_batch + hk * p.k_head + (int64_t)n0 * p.k_row,
                                     p.k_row, klen - n0);
    fg_bwd_copy_bf16<BN, D, THREADS>(sVh, (const uint16_t*)p.v + b * p.v_batch + hk * p.v_head + (int64_t)n0 * p.v_row,
                                     p.v_row, klen - n0);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  FgBwdRegA<D, KREG> ka, va;
  const int kr = 16 * warp + g;
  for (int it = 0; it < total; ++it) {
    fg_cp_async_wait_all();
    __syncthreads();  // this tile landed; every warp is done with the other stage
    if (it == 0) ka.load(sKh, 16 * warp, lane), va.load(sVh, 16 * warp, lane);
    if (it + 1 < total) {
      load_stage(it + 1);
      fg_cp_async_commit();
    }
    const int m0 = walk.m0(it);
    const uint16_t* sQh = sStage + (it & 1) * STAGE;
    const uint16_t* sdOh = sQh + BM * LDH;
    const float2* sLD = (const float2*)(sdOh + BM * LDH);
    const bool mask = fg_dkdv_masked<BM, BN>(p, m0, n0, klen);
#pragma unroll 1
    for (int sb = 0; sb < BM; sb += SB) {
      float sT[NB][4], dpT[NB][4];
      fg_bwd_zero(sT);
      fg_bwd_zero(dpT);
      ka.abt(sT, sKh, 16 * warp, sQh, sb, lane);
      va.abt(dpT, sVh, 16 * warp, sdOh, sb, lane);
      fg_bwd_pds_t(sT, dpT, sLD, sb, m0, n0, kr, t, klen, mask, sl2, scale, p);
      if constexpr (FUSE) {
        // dS^T in bfloat16 (the rounding the dK product applies): keys kr, kr + 8, queries
        // sb + 8 j + 2 t, + 1.
#pragma unroll
        for (int j = 0; j < NB; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            *(uint32_t*)&sdS[(kr + 8 * r) * LDS + sb + 8 * j + 2 * t] = fg_bf16x2(dpT[j][2 * r], dpT[j][2 * r + 1]);
      }
      fg_bwd_ldm_ab<D, NB>(dv, sT, sdOh, sb, lane);
      fg_bwd_ldm_ab<D, NB>(dk, dpT, sQh, sb, lane);
    }
    if constexpr (FUSE) {
      __syncthreads();  // dS^T of the whole tile stored
      const int rb = warp % RB, c0 = warp / RB * NC;
      float acc[NC / 8][4];
      fg_bwd_dq_partial<D, BM, BN, NC>(acc, sdS, sKh, rb, c0, lane);
      const int hq = walk.hq(it);
      int* sem = (int*)((const uint16_t*)p.v + (int64_t)p.b * p.hkv * p.nk * p.d) +
                 ((int64_t)b * p.h + hq) * ((p.nq + 15) / 16) + m0 / 16;
      if (threadIdx.x == 0) fg_bwd_sem_wait(sem, jt);
      __syncthreads();  // our turn; also: every warp is done reading sdS
      float* dq = (float*)p.dq + b * p.q_batch + hq * p.q_head;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int i = m0 + 16 * rb + g + 8 * r;
        if (i >= p.nq) continue;
#pragma unroll
        for (int n = 0; n < NC / 8; ++n) {
          float2* at = (float2*)&dq[(int64_t)i * p.q_row + c0 + 8 * n + 2 * t];
          float2 x = make_float2(acc[n][2 * r], acc[n][2 * r + 1]);
          if (jt > 0) {
            const float2 y = __ldcg(at);
            x.x += y.x, x.y += y.y;
          }
          __stcg(at, x);
        }
      }
      __syncthreads();  // every add issued
      if (threadIdx.x == 0) {
        __threadfence();
        fg_bwd_sem_set(sem, jt + 1);
      }
    }
  }

  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_mma_pre_dq (BF16 only): fg_attn_bwd_mma_ldm_dq on the bfloat16 planes of
// fg_attn_bwd_bf16_prep: Q and dO copied once, the key tiles in two stages, all by cp.async
// straight into bfloat16 tiles. With QREG the warp keeps its 16 rows of Q and dO as A
// fragments in registers. Shared memory: Q, dO [BM][D+8] and two stages of K, V [BN][D+8],
// bfloat16.
template <int D, int BM, int BN, bool QREG> __device__ void fg_attn_bwd_mma_pre_dq(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BM, NB = BN / 8, OB = D / 8, LDH = D + 8;
  static_assert(D % 16 == 0 && BM % 16 == 0 && BN % 16 == 0, "tile sizes");
  constexpr int STAGE = 2 * BN * LDH;
  constexpr unsigned SMEM = (2 * BM * LDH + 2 * STAGE) * sizeof(uint16_t);
  if (fg_dynamic_smem() < SMEM) __trap();
  uint16_t* sQh = (uint16_t*)fg_smem;
  uint16_t* sdOh = sQh + BM * LDH;
  uint16_t* sStage = sdOh + BM * LDH;

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const uint16_t* k = (const uint16_t*)p.k + b * p.k_batch + hk * p.k_head;
  const uint16_t* v = (const uint16_t*)p.v + b * p.v_batch + hk * p.v_head;
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  const FgDqRows rows(p, b, h, m0 + 16 * warp + g, t);

  auto load_stage = [&](int n0) {
    uint16_t* st = sStage + ((n0 / BN) & 1) * STAGE;
    fg_bwd_copy_bf16<BN, D, THREADS>(st, k + (int64_t)n0 * p.k_row, p.k_row, kv_end - n0);
    fg_bwd_copy_bf16<BN, D, THREADS>(st + BN * LDH, v + (int64_t)n0 * p.v_row, p.v_row, kv_end - n0);
  };
  if (kv_end > 0) {
    fg_bwd_copy_bf16<BM, D, THREADS>(sQh, (const uint16_t*)p.q + b * p.q_batch + h * p.q_head + (int64_t)m0 * p.q_row,
                                     p.q_row, p.nq - m0);
    fg_bwd_copy_bf16<BM, D, THREADS>(sdOh, (const uint16_t*)p.do_ + b * p.o_batch + h * p.o_head + (int64_t)m0 * p.o_row,
                                     p.o_row, p.nq - m0);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dq[OB][4];
  fg_bwd_zero(dq);
  FgBwdRegA<D, QREG> qa, doa;
  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    fg_cp_async_wait_all();
    __syncthreads();  // this tile landed; every warp is done with the other stage
    if (n0 == 0) qa.load(sQh, 16 * warp, lane), doa.load(sdOh, 16 * warp, lane);
    if (n0 + BN < kv_end) {
      load_stage(n0 + BN);
      fg_cp_async_commit();
    }
    const uint16_t* sKh = sStage + ((n0 / BN) & 1) * STAGE;
    const uint16_t* sVh = sKh + BN * LDH;
    float s[NB][4], dp[NB][4];
    fg_bwd_zero(s);
    fg_bwd_zero(dp);
    qa.abt(s, sQh, 16 * warp, sKh, 0, lane);
    doa.abt(dp, sdOh, 16 * warp, sVh, 0, lane);
    rows.ds(s, dp, n0, sl2, scale);
    fg_bwd_ldm_ab<D, NB>(dq, dp, sKh, 0, lane);
  }

  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, dq, 16 * warp + g, p.nq - m0, p.nq - m0, t);
}

// ---- entry points ----------------------------------------------------------------------------
// Names encode every template parameter; cuda/attention_mma_bwd.go (mmaBwdCfgs) builds the same.

#define FG_BWD_MMA_DKDV(P, PN, D, BN, BM, SB)                                                   \
  extern "C" __global__ void __launch_bounds__(2 * BN)                                          \
      fg_attn_bwd_mma_dkdv_##PN##_d##D##_n##BN##_m##BM##_s##SB(const fg_attn_params p) {         \
    fg_attn_bwd_mma_dkdv<P, D, BN, BM, SB>(p);                                                   \
  }
#define FG_BWD_MMA_DQ(P, PN, D, BM, BN)                                                         \
  extern "C" __global__ void __launch_bounds__(2 * BM)                                          \
      fg_attn_bwd_mma_dq_##PN##_d##D##_m##BM##_n##BN(const fg_attn_params p) {                   \
    fg_attn_bwd_mma_dq<P, D, BM, BN>(p);                                                         \
  }
// The kernels of mmaBwdCfgs (cuda/attention_mma_bwd.go): float32 tiles, every precision.
FG_BWD_MMA_DKDV(FG_PREC_TF32, tf32, 64, 64, 64, 64)
FG_BWD_MMA_DQ(FG_PREC_TF32, tf32, 64, 64, 64)
FG_BWD_MMA_DKDV(FG_PREC_TF32, tf32, 128, 128, 32, 16)
FG_BWD_MMA_DQ(FG_PREC_TF32, tf32, 128, 128, 32)
FG_BWD_MMA_DKDV(FG_PREC_EXACT, exact, 64, 64, 32, 16)
FG_BWD_MMA_DQ(FG_PREC_EXACT, exact, 64, 64, 64)
FG_BWD_MMA_DKDV(FG_PREC_EXACT, exact, 128, 64, 16, 16)
FG_BWD_MMA_DQ(FG_PREC_EXACT, exact, 128, 64, 16)
FG_BWD_MMA_DKDV(FG_PREC_BF16, bf16, 64, 64, 64, 64)
FG_BWD_MMA_DQ(FG_PREC_BF16, bf16, 64, 64, 64)
FG_BWD_MMA_DKDV(FG_PREC_BF16, bf16, 128, 64, 32, 32)
FG_BWD_MMA_DQ(FG_PREC_BF16, bf16, 128, 64, 32)

#define FG_BWD_MMA_LDM_DKDV(D, BN, BM, SB)                                                      \
  extern "C" __global__ void __launch_bounds__(2 * BN)                                          \
      fg_attn_bwd_mma_ldm_dkdv_bf16_d##D##_n##BN##_m##BM##_s##SB(const fg_attn_params p) {       \
    fg_attn_bwd_mma_ldm_dkdv<D, BN, BM, SB>(p);                                                  \
  }
#define FG_BWD_MMA_LDM_DQ(D, BM, BN)                                                            \
  extern "C" __global__ void __launch_bounds__(2 * BM)                                          \
      fg_attn_bwd_mma_ldm_dq_bf16_d##D##_m##BM##_n##BN(const fg_attn_params p) {                 \
    fg_attn_bwd_mma_ldm_dq<D, BM, BN>(p);                                                        \
  }
// bfloat16 tiles and ldmatrix (mmaBwdCfg.LDM).
FG_BWD_MMA_LDM_DKDV(64, 64, 64, 64)
FG_BWD_MMA_LDM_DQ(64, 128, 32)
FG_BWD_MMA_LDM_DKDV(128, 64, 16, 16)
FG_BWD_MMA_LDM_DQ(128, 128, 16)

#define FG_BWD_MMA_PRE_DKDV(D, BN, BM, SB, R)                                                   \
  extern "C" __global__ void __launch_bounds__(2 * BN)                                          \
      fg_attn_bwd_mma_pre_dkdv_bf16_d##D##_n##BN##_m##BM##_s##SB##_r##R(const fg_attn_params p) { \
    fg_attn_bwd_mma_pre_dkdv<D, BN, BM, SB, (R) != 0, false>(p);                                 \
  }
#define FG_BWD_MMA_FUSED_DKDV(D, BN, BM, SB, R)                                                   \
  extern "C" __global__ void __launch_bounds__(2 * BN)                                            \
      fg_attn_bwd_mma_fused_dkdv_bf16_d##D##_n##BN##_m##BM##_s##SB##_r##R(const fg_attn_params p) { \
    fg_attn_bwd_mma_pre_dkdv<D, BN, BM, SB, (R) != 0, true>(p);                                   \
  }
#define FG_BWD_MMA_PRE_DQ(D, BM, BN, R)                                                         \
  extern "C" __global__ void __launch_bounds__(2 * BM)                                          \
      fg_attn_bwd_mma_pre_dq_bf16_d##D##_m##BM##_n##BN##_r##R(const fg_attn_params p) {          \
    fg_attn_bwd_mma_pre_dq<D, BM, BN, (R) != 0>(p);                                                     \
  }
// bfloat16 planes from the pre-pass fg_attn_bwd_bf16_prep (mmaBwdCfg.Pre; R: A fragments kept
// in registers).
FG_BWD_MMA_PRE_DKDV(64, 128, 64, 64, 1)
FG_BWD_MMA_PRE_DKDV(64, 64, 64, 64, 1)
FG_BWD_MMA_PRE_DQ(64, 128, 64, 1)
FG_BWD_MMA_PRE_DQ(64, 128, 32, 0)
FG_BWD_MMA_PRE_DKDV(128, 128, 32, 16, 0)
FG_BWD_MMA_PRE_DKDV(128, 64, 32, 32, 0)
FG_BWD_MMA_PRE_DQ(128, 128, 32, 1)
FG_BWD_MMA_PRE_DQ(128, 128, 16, 0)
FG_BWD_MMA_FUSED_DKDV(64, 128, 64, 64, 1)
FG_BWD_MMA_FUSED_DKDV(64, 128, 64, 32, 1)
FG_BWD_MMA_FUSED_DKDV(64, 128, 128, 32, 1)
FG_BWD_MMA_FUSED_DKDV(128, 128, 32, 16, 0)
FG_BWD_MMA_FUSED_DKDV(128, 64, 32, 32, 0)
