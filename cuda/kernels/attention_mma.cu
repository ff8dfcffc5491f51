// attention_mma.cu: the attention forward on tensor cores (mma.sync, compute capability 8.0+),
// for float32 q, k, v, o in global memory:
//   s_ij = scale * q_i . k_j   over the keys j visible from query i (fg_key_limit)
//   L_i  = log sum_j exp(s_ij)
//   o_i  = sum_j exp(s_ij - L_i) v_j
// with rows of no visible key giving o = 0, L = -Inf, as attention_fwd.cu.
//
// Forward variants 3 to 11 (1 and 2 are attention_fwd.cu's FMA kernels; mmaCfgs in
// cuda/attention_mma.go lists them; 7 to 11 read K and V converted once per call by the
// pre-pass fg_attn_mma_prep, see its section below), precisions of S = Q K^T and O += P V (FG_PREC_*):
//   FG_PREC_BF16:  operands rounded to bfloat16 (round to nearest even), m16n8k16 bf16 products
//                  accumulated in float32;
//   FG_PREC_TF32:  operands rounded to TF32 (cvt.rna: 10 mantissa bits), m16n8k8 products
//                  accumulated in float32;
//   FG_PREC_EXACT: 3xTF32: each operand x is split as hi = tf32(x), lo = tf32(x - hi) and
//                  a b = a_lo b_hi + a_hi b_lo + a_hi b_hi (three m16n8k8 products; the dropped
//                  a_lo b_lo is below float32's rounding): each operand is carried to 22
//                  of float32's 24 bits, close to float32 accuracy on tensor cores.
// Accumulation: the tensor cores appear to add into their float32 accumulator truncating, not
// rounding to nearest, so a long chain of products into one accumulator drifts toward zero
// (measured on the H100 at N = 1025: O off by 1e-5 relative on its largest values, 8x the error
// of a plain float32 loop). EXACT therefore runs each chain over 16 head columns (S) or 16 keys
// (O) only, from a zero accumulator, and adds the chains in float32 with rounding to nearest;
// TF32 and BF16, whose operand rounding is 1000x larger, accumulate in place.
// The softmax (running maximum, exponentials, rescaling) is float32, the row sums double, and L
// is formed in double as in attention_fwd.cu; P enters the second product rounded like the
// other operands.
//
// Work split (FlashAttention-2; variants 3 to 6 and 11 — 7 to 10 are described at
// fg_attn_fwd_mma_pre): a block of BM / 16 warps owns a tile of BM = 64 or 128 query
// rows of one (b, h), a warp per 16 rows, and walks the key tiles of BN rows. The tiles go to
// shared memory as float32 by cp.async (16-byte copies; rows past the valid range are zero-filled
// with a source size of 0: keys from kv_end on and queries from Nq on are never read); each
// operand is converted as the warp loads its fragment (variants 3, 5). Per key tile:
//   wait for K, sync; start V's copy; S = Q K^T (Q from shared memory, or from registers in
//   4 and 6); online softmax in registers; wait for V, sync; start the next K's copy; O += P V
//   with P taken from S's accumulators (the accumulator layout of m16n8 is, register for
//   register, the A-operand layout the next product needs, up to a permutation of k that the
//   B operand's loads repeat).
// So V's copy overlaps S and the softmax, the next K's copy overlaps P V.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 .bf16 and mma.m16n8k8 .tf32; lane = 4 g + t):
//   C (16 x 8, f32):  c0, c1 = (row g, cols 2t, 2t+1); c2, c3 = (row g+8, cols 2t, 2t+1)
//   A bf16 (16 x 16): r0 = (g, k 2t..2t+1), r1 = (g+8, k 2t..2t+1), r2 = (g, k 2t+8..2t+9),
//                     r3 = (g+8, k 2t+8..2t+9), the lower k in the lower half
//   B bf16 (16 x 8):  r0 = (k 2t..2t+1, col g), r1 = (k 2t+8..2t+9, col g)
//   A tf32 (16 x 8):  a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4)
//   B tf32 (8 x 8):   b0 = (k t, col g), b1 = (k t+4, col g)
// A product sums over k, so any bijection between the instruction's k and the problem's index
// serves, as long as A and B use the same one. S = Q K^T: within a chunk of 16 head columns
// lane (g, t) holds columns 4t..4t+3 of its rows of Q and of its key of K (one 16-byte load
// each); bf16 uses them as k (2t, 2t+1) and (2t+8, 2t+9), tf32 as k (t, t+4) of two k8 steps.
// O += P V: S's accumulator gives lane (g, t) the keys 2t, 2t+1 of every 8-key block; bf16 uses
// two blocks as one k16 step exactly as laid out; tf32 takes keys (2t, 2t+1) as k (t, t+4) and
// loads V's rows 2t and 2t+1 for b0 and b1.
//
// Shared memory: Q [BM][D+16], K [BN][D+16], V [BN][D+4] float32. The strides make every
// fragment load conflict-free: 16-byte loads of rows g (8 lanes per phase, 2 rows) need a stride
// of 16 words mod 32; V's 4-byte loads of rows 2t (+0, +1, +8, +9) and columns g need 4 mod 32.
#include "mma.cuh"

namespace {

// A block of BM query rows has BM / 16 warps (one per 16 rows), 2 BM threads.
template <int BM> __host__ __device__ constexpr int fg_mma_threads() { return 2 * BM; }

// FgQ<P> holds a warp's Q fragment for one chunk of 16 head columns in the form kept in
// registers across key tiles (x: row g, y: row g+8, columns 4t..4t+3 of the chunk), and
// multiplies it with a K fragment kk (key g of an 8-key block, the same columns):
// c += Q_chunk K_chunk^T: the row operand FgRowA of mma.cuh, with mma_pre for TF32.
template <int P> struct FgQ : FgRowA<P> {
  using FgRowA<P>::FgRowA;
};

template <> struct FgQ<FG_PREC_TF32> : FgRowA<FG_PREC_TF32> {
  using FgRowA<FG_PREC_TF32>::FgRowA;
  // mma_pre: kk already rounded to TF32 (the pre-pass did it).
  __device__ __forceinline__ void mma_pre(float (&c)[4], float4 kk) const {
    fg_mma_tf32(c, a[0], a[1], a[2], a[3], __float_as_uint(kk.x), __float_as_uint(kk.y));
    fg_mma_tf32(c, a[4], a[5], a[6], a[7], __float_as_uint(kk.z), __float_as_uint(kk.w));
  }
};

// The exact form keeps Q in float32 (hi and lo of a whole row tile would take twice the
// registers) and splits it once per chunk and key tile (FgQExact).
template <> struct FgQ<FG_PREC_EXACT> {
  float4 x, y;
  __device__ __forceinline__ FgQ(float4 x_, float4 y_) : x(x_), y(y_) {}
};
struct FgQExact {
  uint32_t h0[4], l0[4], h1[4], l1[4];
  __device__ __forceinline__ explicit FgQExact(const FgQ<FG_PREC_EXACT>& q) {
    fg_split_tf32(q.x.x, h0[0], l0[0]), fg_split_tf32(q.y.x, h0[1], l0[1]);
    fg_split_tf32(q.x.y, h0[2], l0[2]), fg_split_tf32(q.y.y, h0[3], l0[3]);
    fg_split_tf32(q.x.z, h1[0], l1[0]), fg_split_tf32(q.y.z, h1[1], l1[1]);
    fg_split_tf32(q.x.w, h1[2], l1[2]), fg_split_tf32(q.y.w, h1[3], l1[3]);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float4 kk) const {
    fg_mma_3xtf32(c, h0, l0, kk.x, kk.y);
    fg_mma_3xtf32(c, h1, l1, kk.z, kk.w);
  }
  // mma_pre: K split by the pre-pass into kh = tf32(k) and kl = tf32(k - kh).
  __device__ __forceinline__ void mma_pre(float (&c)[4], float4 kh, float4 kl) const {
    fg_mma_3xtf32_split(c, h0, l0, __float_as_uint(kh.x), __float_as_uint(kl.x), __float_as_uint(kh.y), __float_as_uint(kl.y));
    fg_mma_3xtf32_split(c, h1, l1, __float_as_uint(kh.z), __float_as_uint(kl.z), __float_as_uint(kh.w), __float_as_uint(kl.w));
  }
};

// The per-chunk form the S product uses: the kept form itself, or its split for EXACT.
template <int P> __device__ __forceinline__ const FgQ<P>& fg_q_chunk(const FgQ<P>& q) { return q; }
__device__ __forceinline__ FgQExact fg_q_chunk(const FgQ<FG_PREC_EXACT>& q) { return FgQExact(q); }

}  // namespace

// fg_attn_fwd_mma (variants 3, 5 and 9): grid (ceil(Nq/BM), H, B), 2 BM threads. P is the
// precision (FG_PREC_*), D the head dimension (d == D: the launcher sends other d to the FMA
// kernels), BN the key tile rows. Rows of q, k, v must be 16-byte aligned (strides multiples
// of 4, base pointers aligned). The tiles stay float32 in shared memory; every warp converts
// the operands as it loads its fragments.
// PRE (variant 9, TF32 and EXACT): k and v are the scratch planes of fg_attn_mma_prep, already
// converted once per call: TF32 rounded, EXACT split into hi planes (k, v) and lo planes (at
// k + n, v + n, n = B Hkv Nk D). The warps convert nothing of K and V; EXACT keeps both
// planes in shared memory (K and V tiles twice).
template <int P, int D, int BM, int BN, bool PRE = false> __device__ void fg_attn_fwd_mma(const fg_attn_params& p) {
  constexpr int THREADS = fg_mma_threads<BM>();
  constexpr int LDQ = D + 16, LDK = D + 16, LDV = D + 4;
  constexpr int NB = BN / 8, KC = D / 16, OB = D / 8;  // key blocks, head-column chunks, output blocks
  constexpr bool SPLIT = PRE && P == FG_PREC_EXACT;    // lo planes in shared memory too
  static_assert(D % 16 == 0 && BN % 16 == 0, "tile sizes");
  static_assert(!PRE || P != FG_PREC_BF16, "bf16 pre-converted tiles are fg_attn_fwd_mma_pre's");
  constexpr unsigned SMEM = (BM * LDQ + (SPLIT ? 2 : 1) * (BN * LDK + BN * LDV)) * sizeof(float);
  if (fg_dynamic_smem() < SMEM) __trap();
  float* sQ = (float*)fg_smem;
  float* sK = sQ + BM * LDQ;
  float* sV = sK + BN * LDK;
  float* sKl = sV + BN * LDV;  // SPLIT only
  float* sVl = sKl + BN * LDK;
  const int64_t plane = (int64_t)p.b * p.hkv * p.nk * p.d;

  // The last query tiles first: under the causal mask they see the most keys, and starting
  // them first leaves the short ones to fill the end of the grid.
  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
  const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
  const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
  // Scores in log2 units: exp(s - m) = exp2(s log2e - m log2e).
  const float sl2 = (float)(p.scale * 1.4426950408889634);
  // Keys visible from some row of the tile: [0, kv_end) (the last row sees the most).
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  FgRows<OB> rows(p, b, m0 + 16 * warp + g, t);
  float (&o)[OB][4] = rows.o;

  if (kv_end > 0) {
    fg_mma_load_tile<BM, D, LDQ, THREADS>(sQ, q + (int64_t)m0 * p.q_row, p.q_row, p.nq - m0);
    fg_mma_load_tile<BN, D, LDK, THREADS>(sK, k, p.k_row, kv_end);
    if constexpr (SPLIT) fg_mma_load_tile<BN, D, LDK, THREADS>(sKl, k + plane, p.k_row, kv_end);
    fg_cp_async_commit();
  }

  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    fg_cp_async_wait_all();
    __syncthreads();  // K (and Q) landed; every warp is done reading V of the last tile
    fg_mma_load_tile<BN, D, LDV, THREADS>(sV, v + (int64_t)n0 * p.v_row, p.v_row, kv_end - n0);
    if constexpr (SPLIT) fg_mma_load_tile<BN, D, LDV, THREADS>(sVl, v + plane + (int64_t)n0 * p.v_row, p.v_row, kv_end - n0);
    fg_cp_async_commit();

    // S = Q K^T for this warp's 16 rows and the tile's BN keys.
    float s[NB][4];
#pragma unroll
    for (int j = 0; j < NB; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0;
#pragma unroll
    for (int c = 0; c < KC; ++c) {
      const float* qr = sQ + (16 * warp + g) * LDQ + 16 * c + 4 * t;
      const FgQ<P> qk(*(const float4*)qr, *(const float4*)(qr + 8 * LDQ));
      const auto qc = fg_q_chunk(qk);
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        const float4 kk = *(const float4*)&sK[(8 * j + g) * LDK + 16 * c + 4 * t];
        if constexpr (P == FG_PREC_EXACT) {
          float acc[4] = {0, 0, 0, 0};  // see "Accumulation" above
          if constexpr (SPLIT)
            qc.mma_pre(acc, kk, *(const float4*)&sKl[(8 * j + g) * LDK + 16 * c + 4 * t]);
          else
            qc.mma(acc, kk);
          s[j][0] += acc[0], s[j][1] += acc[1], s[j][2] += acc[2], s[j][3] += acc[3];
        } else if constexpr (PRE) {
          qc.mma_pre(s[j], kk);
        } else {
          qc.mma(s[j], kk);
        }
      }
    }

    rows.template softmax<P != FG_PREC_EXACT, false>(s, n0, sl2);

    fg_cp_async_wait_all();
    __syncthreads();  // V landed; every warp is done reading K
    if (n0 + BN < kv_end) {
      fg_mma_load_tile<BN, D, LDK, THREADS>(sK, k + (int64_t)(n0 + BN) * p.k_row, p.k_row, kv_end - n0 - BN);
      if constexpr (SPLIT)
        fg_mma_load_tile<BN, D, LDK, THREADS>(sKl, k + plane + (int64_t)(n0 + BN) * p.k_row, p.k_row, kv_end - n0 - BN);
      fg_cp_async_commit();
    }

    // O += P V.
    if constexpr (P == FG_PREC_BF16) {
#pragma unroll
      for (int kk = 0; kk < NB / 2; ++kk) {
        const uint32_t a0 = fg_bf16x2(s[2 * kk][0], s[2 * kk][1]), a1 = fg_bf16x2(s[2 * kk][2], s[2 * kk][3]);
        const uint32_t a2 = fg_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), a3 = fg_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        const float* vr = sV + (16 * kk + 2 * t) * LDV + g;
#pragma unroll
        for (int n = 0; n < OB; ++n) {
          const uint32_t b0 = fg_bf16x2(vr[8 * n], vr[LDV + 8 * n]);
          const uint32_t b1 = fg_bf16x2(vr[8 * LDV + 8 * n], vr[9 * LDV + 8 * n]);
          fg_mma_bf16(o[n], a0, a1, a2, a3, b0, b1);
        }
      }
    } else if constexpr (P == FG_PREC_TF32) {
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        // Keys 2t, 2t+1 of block j as k t, t+4: a = (g, 2t), (g+8, 2t), (g, 2t+1), (g+8, 2t+1).
        const float* vr = sV + (8 * j + 2 * t) * LDV + g;
        const uint32_t a0 = fg_tf32(s[j][0]), a1 = fg_tf32(s[j][2]), a2 = fg_tf32(s[j][1]), a3 = fg_tf32(s[j][3]);
#pragma unroll
        for (int n = 0; n < OB; ++n) {
          if constexpr (PRE)
            fg_mma_tf32(o[n], a0, a1, a2, a3, __float_as_uint(vr[8 * n]), __float_as_uint(vr[LDV + 8 * n]));
          else
            fg_mma_tf32(o[n], a0, a1, a2, a3, fg_tf32(vr[8 * n]), fg_tf32(vr[LDV + 8 * n]));
        }
      }
    } else {
      // As TF32, 16 keys (two blocks) at a time into a fresh accumulator added to o in float32.
#pragma unroll
      for (int jj = 0; jj < NB / 2; ++jj) {
        uint32_t ah[2][4], al[2][4];
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const int j = 2 * jj + x;
          fg_split_tf32(s[j][0], ah[x][0], al[x][0]), fg_split_tf32(s[j][2], ah[x][1], al[x][1]);
          fg_split_tf32(s[j][1], ah[x][2], al[x][2]), fg_split_tf32(s[j][3], ah[x][3], al[x][3]);
        }
        const float* vr = sV + (16 * jj + 2 * t) * LDV + g;
        const float* vl = sVl + (16 * jj + 2 * t) * LDV + g;
#pragma unroll
        for (int n = 0; n < OB; ++n) {
          float acc[4] = {0, 0, 0, 0};
          if constexpr (SPLIT) {
            const auto u = [](float x) { return __float_as_uint(x); };
            fg_mma_3xtf32_split(acc, ah[0], al[0], u(vr[8 * n]), u(vl[8 * n]), u(vr[LDV + 8 * n]), u(vl[LDV + 8 * n]));
            fg_mma_3xtf32_split(acc, ah[1], al[1], u(vr[8 * LDV + 8 * n]), u(vl[8 * LDV + 8 * n]), u(vr[9 * LDV + 8 * n]),
                                u(vl[9 * LDV + 8 * n]));
          } else {
            fg_mma_3xtf32(acc, ah[0], al[0], vr[8 * n], vr[LDV + 8 * n]);
            fg_mma_3xtf32(acc, ah[1], al[1], vr[8 * LDV + 8 * n], vr[9 * LDV + 8 * n]);
          }
          o[n][0] += acc[0], o[n][1] += acc[1], o[n][2] += acc[2], o[n][3] += acc[3];
        }
      }
    }
  }

  rows.store(p, b, h);
}

// fg_attn_fwd_mma_ldm (variants 4 and 6, bfloat16 only): as fg_attn_fwd_mma, but each tile is
// converted to bfloat16 once in shared memory and the warps load their fragments with ldmatrix
// (K, and V transposed): a quarter of the shared-memory instructions, no conversion per
// fragment. Shared memory: K and V float32 staging [BN][D] (the cp.async targets; Q is staged
// across both first, so BM <= 2 BN), K and V bfloat16 [BN][D+8] (rows of 2(D+8) bytes, 16 mod
// 128, so the 8 rows of an ldmatrix hit distinct banks). Q's fragments are packed to bfloat16
// in registers once. Per key tile: wait for K, sync; convert K; sync; start V's copy; S;
// softmax; wait for V, sync; start the next K's copy; convert V; sync; O += P V.
template <int D, int BM, int BN> __device__ void fg_attn_fwd_mma_ldm(const fg_attn_params& p) {
  constexpr int THREADS = fg_mma_threads<BM>();
  constexpr int LDH = D + 8;
  constexpr int NB = BN / 8, KC = D / 16, OB = D / 8;
  static_assert(D % 16 == 0 && BN % 16 == 0 && BM <= 2 * BN, "tile sizes (Q is staged in K's and V's buffers)");
  constexpr unsigned SMEM = 2 * BN * D * sizeof(float) + 2 * BN * LDH * sizeof(uint16_t);
  if (fg_dynamic_smem() < SMEM) __trap();
  float* sKf = (float*)fg_smem;
  float* sVf = sKf + BN * D;
  uint16_t* sKh = (uint16_t*)(sVf + BN * D);
  uint16_t* sVh = sKh + BN * LDH;

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
  const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
  const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
  const float sl2 = (float)(p.scale * 1.4426950408889634);
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  FgRows<OB> rows(p, b, m0 + 16 * warp + g, t);
  float (&o)[OB][4] = rows.o;

  // Q's A fragments (bf16 pairs), packed once: Q is staged in the float32 buffers (rows of D),
  // read, and the buffers are free again before K's first copy.
  uint32_t qa[KC][4];
  if (kv_end > 0) {
    fg_mma_load_tile<BM, D, D, THREADS>(sKf, q + (int64_t)m0 * p.q_row, p.q_row, p.nq - m0);
    fg_cp_async_commit();
    fg_cp_async_wait_all();
    __syncthreads();
    const float* qr = sKf + (16 * warp + g) * D + 2 * t;
#pragma unroll
    for (int c = 0; c < KC; ++c) {
      const float2 x0 = *(const float2*)&qr[16 * c], x1 = *(const float2*)&qr[8 * D + 16 * c];
      const float2 x2 = *(const float2*)&qr[16 * c + 8], x3 = *(const float2*)&qr[8 * D + 16 * c + 8];
      qa[c][0] = fg_bf16x2(x0.x, x0.y), qa[c][1] = fg_bf16x2(x1.x, x1.y);
      qa[c][2] = fg_bf16x2(x2.x, x2.y), qa[c][3] = fg_bf16x2(x3.x, x3.y);
    }
    __syncthreads();  // every warp has its Q
    fg_mma_load_tile<BN, D, D, THREADS>(sKf, k, p.k_row, kv_end);
    fg_cp_async_commit();
  }

  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    fg_cp_async_wait_all();
    __syncthreads();  // K landed; every warp is done reading V of the last tile
    fg_to_bf16_tile<BN, D, LDH, THREADS>(sKh, sKf);
    __syncthreads();  // K in bfloat16
    fg_mma_load_tile<BN, D, D, THREADS>(sVf, v + (int64_t)n0 * p.v_row, p.v_row, kv_end - n0);
    fg_cp_async_commit();

    // S = Q K^T: an ldmatrix.x4 gives the B fragments of two 8-key blocks for 16 columns:
    // lane l addresses row (l / 16) 8 + l % 8 of the 16 keys, column (l / 8 % 2) 8 of the chunk.
    float s[NB][4];
#pragma unroll
    for (int j = 0; j < NB; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0;
    const uint16_t* kr = sKh + ((lane / 16) * 8 + lane % 8) * LDH + (lane / 8 % 2) * 8;
#pragma unroll
    for (int c = 0; c < KC; ++c)
#pragma unroll
      for (int jp = 0; jp < NB / 2; ++jp) {
        uint32_t bk[4];
        fg_ldmatrix_x4(bk, kr + 16 * jp * LDH + 16 * c);
        fg_mma_bf16(s[2 * jp], qa[c][0], qa[c][1], qa[c][2], qa[c][3], bk[0], bk[1]);
        fg_mma_bf16(s[2 * jp + 1], qa[c][0], qa[c][1], qa[c][2], qa[c][3], bk[2], bk[3]);
      }
    rows.template softmax<true, false>(s, n0, sl2);

    fg_cp_async_wait_all();
    __syncthreads();  // V landed; every warp is done reading K
    if (n0 + BN < kv_end) {
      fg_mma_load_tile<BN, D, D, THREADS>(sKf, k + (int64_t)(n0 + BN) * p.k_row, p.k_row, kv_end - n0 - BN);
      fg_cp_async_commit();
    }
    fg_to_bf16_tile<BN, D, LDH, THREADS>(sVh, sVf);
    __syncthreads();  // V in bfloat16

    // O += P V: an ldmatrix.x4.trans gives the B fragments of two 8-column output blocks for 16
    // keys: lane l addresses key (l / 8 % 2) 8 + l % 8 of the 16, column (l / 16) 8 of the pair.
    const uint16_t* vr = sVh + ((lane / 8 % 2) * 8 + lane % 8) * LDH + (lane / 16) * 8;
#pragma unroll
    for (int kk = 0; kk < NB / 2; ++kk) {
      const uint32_t a0 = fg_bf16x2(s[2 * kk][0], s[2 * kk][1]), a1 = fg_bf16x2(s[2 * kk][2], s[2 * kk][3]);
      const uint32_t a2 = fg_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), a3 = fg_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int np = 0; np < OB / 2; ++np) {
        uint32_t bv[4];
        fg_ldmatrix_x4_trans(bv, vr + 16 * kk * LDH + 16 * np);
        fg_mma_bf16(o[2 * np], a0, a1, a2, a3, bv[0], bv[1]);
        fg_mma_bf16(o[2 * np + 1], a0, a1, a2, a3, bv[2], bv[3]);
      }
    }
  }
  rows.store(p, b, h);
}

// ---- the pre-pass: K and V converted once per call ------------------------------------------

// fg_mma_prep_params: the pre-pass's parameters (Go: attention_mma.go's mmaPrepParams). src is
// the problem (k, v, their strides, sizes, key lengths); dst the scratch: planes of
// n = B Hkv Nk D elements, each [B][Hkv][Nk][D] contiguous:
//   FG_PREC_BF16:  K, V in bfloat16 (round to nearest even)                 2 n bf16
//   FG_PREC_TF32:  K, V rounded to TF32 (cvt.rna), float32 bits             2 n float32
//   FG_PREC_EXACT: K hi, K lo, V hi, V lo (hi = tf32(x), lo = tf32(x - hi))  4 n float32
// Keys at or past a batch's key length are neither read nor written (the main kernels never
// read them either: their tile copies zero-fill past kv_end).
// (fg_mma_prep_params is declared in mma.cuh: attention_hopper.cu's pre-pass takes it too.)

namespace {
__device__ __forceinline__ void fg_prep_store(const fg_mma_prep_params& pp, int prec, int64_t n, int plane, int64_t at,
                                              float4 x0, float4 x1) {
  if (prec == FG_PREC_BF16) {
    uint4 h = make_uint4(fg_bf16x2(x0.x, x0.y), fg_bf16x2(x0.z, x0.w), fg_bf16x2(x1.x, x1.y), fg_bf16x2(x1.z, x1.w));
    *(uint4*)((uint16_t*)pp.dst + plane * n + at) = h;
    return;
  }
  const float xs[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  uint32_t hi[8], lo[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) fg_split_tf32(xs[e], hi[e], lo[e]);
  const int hp = prec == FG_PREC_EXACT ? 2 * plane : plane;
  uint32_t* d = (uint32_t*)pp.dst + hp * n + at;
  ((uint4*)d)[0] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  ((uint4*)d)[1] = make_uint4(hi[4], hi[5], hi[6], hi[7]);
  if (prec == FG_PREC_EXACT) {
    d += n;
    ((uint4*)d)[0] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    ((uint4*)d)[1] = make_uint4(lo[4], lo[5], lo[6], lo[7]);
  }
}
}  // namespace

// fg_attn_mma_prep: grid-stride over the 8-element groups of K and V (d a multiple of 8, rows
// 16-byte aligned), one thread per group.
extern "C" __global__ void __launch_bounds__(256) fg_attn_mma_prep(const fg_mma_prep_params pp) {
  const fg_attn_params& p = pp.src;
  const int prec = p.precision, G = p.d / 8;
  const int64_t n = (int64_t)p.b * p.hkv * p.nk * p.d, groups = (int64_t)p.b * p.hkv * p.nk * G;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < groups; i += (int64_t)gridDim.x * blockDim.x) {
    const int c = (int)(i % G) * 8;
    const int64_t row = i / G;  // (b, hk, j)
    const int j = (int)(row % p.nk), hk = (int)(row / p.nk % p.hkv), b = (int)(row / ((int64_t)p.nk * p.hkv));
    if (p.key_lengths && j >= ((const int32_t*)p.key_lengths)[b]) continue;  // a padded key: never read
    const float* kr = (const float*)p.k + b * p.k_batch + hk * p.k_head + j * p.k_row + c;
    const float* vr = (const float*)p.v + b * p.v_batch + hk * p.v_head + j * p.v_row + c;
    const int64_t at = row * p.d + c;
    fg_prep_store(pp, prec, n, 0, at, *(const float4*)kr, *(const float4*)(kr + 4));
    fg_prep_store(pp, prec, n, 1, at, *(const float4*)vr, *(const float4*)(vr + 4));
  }
}

// ---- variants 7 and 8: bfloat16 K and V from the pre-pass, swizzled tiles, two stages ---------

namespace {

// fg_swz returns the 16-byte chunk of shared memory that holds chunk c of row r of a tile with
// CH chunks per row (CH >= 8): the chunk index is XORed with r mod 8, so the 8 rows of an
// ldmatrix (same logical chunk) and the chunks of a row written by cp.async all land in
// distinct banks, with no padding.
template <int CH> __device__ __forceinline__ int fg_swz(int r, int c) { return r * CH + (c ^ (r & 7)); }

// fg_load_bf16_tile starts the copy of rows [0, ROWS) of a contiguous bfloat16 matrix with
// rows of CH 16-byte chunks into a swizzled tile; rows r >= nvalid are zero-filled unread.
template <int ROWS, int CH, int THREADS>
__device__ __forceinline__ void fg_load_bf16_tile(uint4* s, const uint4* g, int nvalid) {
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const bool ok = r < nvalid;
    fg_cp_async16((float*)(s + fg_swz<CH>(r, c)), ok ? (const float*)(g + r * CH + c) : (const float*)g, ok);
  }
}

}  // namespace

// fg_attn_fwd_mma_pre (variants 7 and 8, bfloat16): grid (ceil(Nq/BM), H, B), 2 BM / (WM / 16)
// threads: BM / WM warps of WM query rows each (variant 7: WM = 16; variant 8: WM = 32, every
// B fragment loaded from shared memory serves two 16-row products). k and v are the pre-pass's
// bfloat16 planes (contiguous rows of D). Shared memory: Q [BM][D], K [2][BN][D],
// V [2][BN][D] bfloat16, swizzled (fg_swz), no padding; Q is converted from float32 as it is
// stored. Fragments come by ldmatrix (V transposed). Pipeline (two buffers each of K and V;
// cp.async groups committed in the order K0 V0 K1 V1 ...):
//   iteration j: start K_{j+1}; wait for K_j; sync; S = Q K_j; softmax; start V_{j+1};
//                wait for V_j; sync; O += P V_j
// so V_j and K_{j+1} are in flight during S, K_{j+1} and V_{j+1} during P V. A buffer is
// refilled only after the sync that follows every warp's last read of it.
template <int D, int BM, int WM, int BN> __device__ void fg_attn_fwd_mma_pre(const fg_attn_params& p) {
  constexpr int MT = WM / 16, WARPS = BM / WM, THREADS = 32 * WARPS;
  constexpr int NB = BN / 8, KC = D / 16, OB = D / 8, CH = D / 8;
  constexpr bool QREG = MT == 1;  // Q's fragments kept in registers (16-row warps only)
  static_assert(D % 64 == 0 && BN % 16 == 0 && BM % WM == 0 && WM % 16 == 0, "tile sizes");
  constexpr unsigned SMEM = (BM + 4 * BN) * D * 2;
  if (fg_dynamic_smem() < SMEM) __trap();
  uint4* sQ = (uint4*)fg_smem;
  uint4* sK = sQ + BM * CH;      // [2][BN * CH]
  uint4* sV = sK + 2 * BN * CH;  // [2][BN * CH]

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
  const uint4* k = (const uint4*)((const uint16_t*)p.k + b * p.k_batch + hk * p.k_head);
  const uint4* v = (const uint4*)((const uint16_t*)p.v + b * p.v_batch + hk * p.v_head);
  // The softmax folds sl2 > 0 into its FFMA: a negative scale is carried by Q's sign instead
  // (negating is exact in bfloat16).
  const float sl2 = (float)(fabs(p.scale) * 1.4426950408889634), qs = p.scale < 0 ? -1.f : 1.f;
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  FgRows<OB, float> rows[MT];  // row sums in float: bfloat16 operands dominate the error
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) rows[mt].init(p, b, m0 + WM * warp + 16 * mt + g, t);
  if (kv_end <= 0) {  // no key visible from any row of the tile
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) rows[mt].store(p, b, h);
    return;
  }

  // Q: float32 rows to bfloat16 chunks (8 elements per thread and step); rows past Nq zero.
  for (int idx = threadIdx.x; idx < BM * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (m0 + r < p.nq) x = fg_bf16x8(q + (int64_t)(m0 + r) * p.q_row + 8 * c, qs);
    sQ[fg_swz<CH>(r, c)] = x;
  }
  fg_load_bf16_tile<BN, CH, THREADS>(sK, k, kv_end);
  fg_cp_async_commit();
  fg_load_bf16_tile<BN, CH, THREADS>(sV, v, kv_end);
  fg_cp_async_commit();

  // ldmatrix lane addressing (lane l): A (Q) row l % 16, chunk l / 16 of a 16-column step;
  // B of S (K, non-transposed) key (l / 16) 8 + l % 8, chunk (l / 8) % 2; B of P V (V,
  // transposed) key (l / 8 % 2) 8 + l % 8, column chunk l / 16 of a pair of 8-column blocks.
  const int qrow = WM * warp + lane % 16, qch = lane / 16;
  const int krow = (lane / 16) * 8 + lane % 8, kch = (lane / 8) % 2;
  const int vrow = (lane / 8 % 2) * 8 + lane % 8, vch = lane / 16;
  uint32_t qa[QREG ? KC : 1][4];

  for (int n0 = 0, st = 0; n0 < kv_end; n0 += BN, st ^= 1) {
    const bool more = n0 + BN < kv_end;
    if (more) fg_load_bf16_tile<BN, CH, THREADS>(sK + (st ^ 1) * BN * CH, k + (int64_t)(n0 + BN) * CH, kv_end - n0 - BN);
    fg_cp_async_commit();
    fg_cp_async_wait<2>();
    __syncthreads();  // K_j (and Q) landed; every warp is done with P V_{j-1}
    if constexpr (QREG) {
      if (n0 == 0) {
#pragma unroll
        for (int c = 0; c < KC; ++c) fg_ldmatrix_x4(qa[c], sQ + fg_swz<CH>(qrow, 2 * c + qch));
      }
    }

    // S = Q K_j^T for the warp's MT row tiles.
    float s[MT][NB][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < NB; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0;
    const uint4* kt = sK + st * BN * CH;
#pragma unroll
    for (int c = 0; c < KC; ++c) {
      uint32_t a[MT][4];
      if constexpr (QREG) {
#pragma unroll
        for (int x = 0; x < 4; ++x) a[0][x] = qa[c][x];
      } else {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) fg_ldmatrix_x4(a[mt], sQ + fg_swz<CH>(qrow + 16 * mt, 2 * c + qch));
      }
#pragma unroll
      for (int jp = 0; jp < NB / 2; ++jp) {
        uint32_t bk[4];
        fg_ldmatrix_x4(bk, kt + fg_swz<CH>(16 * jp + krow, 2 * c + kch));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          fg_mma_bf16(s[mt][2 * jp], a[mt][0], a[mt][1], a[mt][2], a[mt][3], bk[0], bk[1]);
          fg_mma_bf16(s[mt][2 * jp + 1], a[mt][0], a[mt][1], a[mt][2], a[mt][3], bk[2], bk[3]);
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) rows[mt].template softmax<true, true>(s[mt], n0, sl2);

    if (more) fg_load_bf16_tile<BN, CH, THREADS>(sV + (st ^ 1) * BN * CH, v + (int64_t)(n0 + BN) * CH, kv_end - n0 - BN);
    fg_cp_async_commit();
    fg_cp_async_wait<2>();
    __syncthreads();  // V_j landed; every warp is done with S (K_j)

    // O += P V_j.
    const uint4* vt = sV + st * BN * CH;
#pragma unroll
    for (int kk = 0; kk < NB / 2; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = fg_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]), a[mt][1] = fg_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = fg_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = fg_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int np = 0; np < OB / 2; ++np) {
        uint32_t bv[4];
        fg_ldmatrix_x4_trans(bv, vt + fg_swz<CH>(16 * kk + vrow, 2 * np + vch));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          fg_mma_bf16(rows[mt].o[2 * np], a[mt][0], a[mt][1], a[mt][2], a[mt][3], bv[0], bv[1]);
          fg_mma_bf16(rows[mt].o[2 * np + 1], a[mt][0], a[mt][1], a[mt][2], a[mt][3], bv[2], bv[3]);
        }
      }
    }
  }
  fg_cp_async_wait<0>();
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) rows[mt].store(p, b, h);
}

// ---- entry points ----------------------------------------------------------------------------
// Names encode the variant and every template parameter; the Go launch table
// (cuda/attention_mma.go, mmaCfgs) builds the same names.

#define FG_FWD_MMA(P, PN, D, BM, BN)                                                      \
  extern "C" __global__ void __launch_bounds__(fg_mma_threads<BM>())                      \
      fg_attn_fwd_mma_##PN##_d##D##_m##BM##_n##BN(const fg_attn_params p) {                \
    fg_attn_fwd_mma<P, D, BM, BN>(p);                                                      \
  }
FG_FWD_MMA(FG_PREC_BF16, bf16, 64, 64, 64)
FG_FWD_MMA(FG_PREC_BF16, bf16, 128, 64, 64)
FG_FWD_MMA(FG_PREC_TF32, tf32, 64, 64, 64)
FG_FWD_MMA(FG_PREC_TF32, tf32, 128, 64, 64)
FG_FWD_MMA(FG_PREC_TF32, tf32, 64, 128, 64)
FG_FWD_MMA(FG_PREC_TF32, tf32, 128, 128, 64)
FG_FWD_MMA(FG_PREC_EXACT, exact, 64, 64, 64)
FG_FWD_MMA(FG_PREC_EXACT, exact, 128, 64, 64)
FG_FWD_MMA(FG_PREC_EXACT, exact, 64, 128, 64)
FG_FWD_MMA(FG_PREC_EXACT, exact, 128, 128, 64)

#define FG_FWD_MMA_LDM(D, BM, BN)                                                         \
  extern "C" __global__ void __launch_bounds__(fg_mma_threads<BM>())                      \
      fg_attn_fwd_mma_ldm_bf16_d##D##_m##BM##_n##BN(const fg_attn_params p) {              \
    fg_attn_fwd_mma_ldm<D, BM, BN>(p);                                                     \
  }
FG_FWD_MMA_LDM(64, 64, 64)
FG_FWD_MMA_LDM(128, 64, 64)
FG_FWD_MMA_LDM(64, 128, 64)
FG_FWD_MMA_LDM(128, 128, 64)

// Variants 7 (WM = 16) and 8 (WM = 32): bfloat16 K and V from the pre-pass.
#define FG_FWD_MMA_PRE(D, BM, WM, BN)                                                     \
  extern "C" __global__ void __launch_bounds__(2 * BM / (WM / 16))                        \
      fg_attn_fwd_mma_pre_bf16_d##D##_m##BM##_w##WM##_n##BN(const fg_attn_params p) {      \
    fg_attn_fwd_mma_pre<D, BM, WM, BN>(p);                                                 \
  }
FG_FWD_MMA_PRE(64, 64, 16, 64)
FG_FWD_MMA_PRE(64, 128, 16, 64)
FG_FWD_MMA_PRE(64, 128, 32, 64)
FG_FWD_MMA_PRE(64, 128, 32, 128)
FG_FWD_MMA_PRE(128, 64, 16, 64)
FG_FWD_MMA_PRE(128, 128, 16, 64)
FG_FWD_MMA_PRE(128, 128, 32, 64)
FG_FWD_MMA_PRE(128, 128, 32, 32)

// Variant 9: TF32 and EXACT on K and V converted by the pre-pass.
#define FG_FWD_MMA_SPLIT(P, PN, D, BM, BN)                                                \
  extern "C" __global__ void __launch_bounds__(fg_mma_threads<BM>())                      \
      fg_attn_fwd_mma_split_##PN##_d##D##_m##BM##_n##BN(const fg_attn_params p) {          \
    fg_attn_fwd_mma<P, D, BM, BN, true>(p);                                                \
  }
FG_FWD_MMA_SPLIT(FG_PREC_TF32, tf32, 64, 128, 64)
FG_FWD_MMA_SPLIT(FG_PREC_TF32, tf32, 128, 128, 64)
FG_FWD_MMA_SPLIT(FG_PREC_EXACT, exact, 64, 64, 64)
FG_FWD_MMA_SPLIT(FG_PREC_EXACT, exact, 128, 128, 64)
