// mma.cuh: the tensor-core primitives shared by the attention kernels on mma.sync (compute
// capability 8.0+): asynchronous 16-byte copies into shared memory, operand conversions to
// bfloat16 and TF32 (and the 3xTF32 split), and the m16n8k16 bf16 / m16n8k8 tf32 products.
// Fragment layouts are described in attention_mma.cu.
#ifndef FLASHGORGON_MMA_CUH
#define FLASHGORGON_MMA_CUH

#include "common.cuh"

// fg_mma_prep_params: the parameters of the pre-passes that convert K and V once per call
// (fg_attn_mma_prep in attention_mma.cu, fg_attn_hopper_prep in attention_hopper.cu; Go:
// mmaPrepParams): the problem src and the scratch buffer dst they write. The persistent
// forward takes them too, and with qplane set (not 0) also writes Q rounded to bfloat16 there,
// [B, H, Nq, d] contiguous, for the backward (cuda: AttentionBuffers.Planes).
typedef struct {
  fg_attn_params src;
  uint64_t dst;
  uint64_t qplane;
} fg_mma_prep_params;

namespace {

__device__ __forceinline__ void fg_cp_async16(float* smem, const float* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void fg_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void fg_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// fg_mma_load_tile starts the copy of rows [0, ROWS) x columns [0, D) of a row-major global
// matrix g (row stride ld_g) into shared memory s (row stride LDS): rows r < nvalid are copied,
// the others are zero-filled without reading global memory.
template <int ROWS, int D, int LDS, int THREADS>
__device__ __forceinline__ void fg_mma_load_tile(float* s, const float* g, int64_t ld_g, int nvalid) {
  constexpr int CH = D / 4;  // 16-byte chunks per row
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const bool ok = r < nvalid;
    fg_cp_async16(s + r * LDS + c * 4, ok ? g + (int64_t)r * ld_g + c * 4 : g, ok);
  }
}

// ---- the products, by precision ---------------------------------------------------------------

__device__ __forceinline__ uint32_t fg_bf16x2(float lo, float hi) {  // lo in the lower half
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// fg_f16x2 and fg_f16x2_float: IEEE half pairs (the Exact backward's 3xF16, mma_bwd.cuh).
__device__ __forceinline__ uint32_t fg_f16x2(float lo, float hi) {  // lo in the lower half
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float2 fg_f16x2_float(uint32_t x) {
  float lo, hi;
  asm("{\n.reg .f16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n" : "=f"(lo), "=f"(hi) : "r"(x));
  return make_float2(lo, hi);
}
// fg_f16_split2 splits (f a, f b) into half hi and lo pairs (a in the lower halves).
__device__ __forceinline__ void fg_f16_split2(float a, float b, float f, uint32_t& hi, uint32_t& lo) {
  a *= f, b *= f;
  hi = fg_f16x2(a, b);
  const float2 h = fg_f16x2_float(hi);
  lo = fg_f16x2(a - h.x, b - h.y);
}

// fg_bf16x8v returns s (a, e) (8 values) rounded to bfloat16, packed in 16 bytes: a chunk of
// 8 columns of a (scaled) row for the bfloat16 tiles and planes.
__device__ __forceinline__ uint4 fg_bf16x8v(float4 a, float4 e, float s = 1.f) {
  return make_uint4(fg_bf16x2(s * a.x, s * a.y), fg_bf16x2(s * a.z, s * a.w), fg_bf16x2(s * e.x, s * e.y),
                    fg_bf16x2(s * e.z, s * e.w));
}
// fg_bf16x8 is fg_bf16x8v of x[0 .. 8) (x 16-byte aligned).
__device__ __forceinline__ uint4 fg_bf16x8(const float* x, float s) {
  return fg_bf16x8v(*(const float4*)x, *(const float4*)(x + 4), s);
}
__device__ __forceinline__ uint32_t fg_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
// fg_split_tf32 splits x into hi = tf32(x) and lo = tf32(x - hi) (x - hi is exact in float32).
__device__ __forceinline__ void fg_split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  hi = fg_tf32(x);
  lo = fg_tf32(x - __uint_as_float(hi));
}

__device__ __forceinline__ void fg_mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void fg_mma_tf32(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// fg_mma_3xtf32_split accumulates c += a b by 3xTF32 for operands split beforehand: A as
// ah, al and B fragment (b0, b1) as (bh0, bl0), (bh1, bl1); the small products first.
__device__ __forceinline__ void fg_mma_3xtf32_split(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4],
                                                    uint32_t bh0, uint32_t bl0, uint32_t bh1, uint32_t bl1) {
  fg_mma_tf32(c, al[0], al[1], al[2], al[3], bh0, bh1);
  fg_mma_tf32(c, ah[0], ah[1], ah[2], ah[3], bl0, bl1);
  fg_mma_tf32(c, ah[0], ah[1], ah[2], ah[3], bh0, bh1);
}

// fg_mma_3xtf32 accumulates c += a b for float32 A fragment a[4] and B fragment b[2] (tf32
// layouts) by 3xTF32: the small products first, then hi·hi.
__device__ __forceinline__ void fg_mma_3xtf32(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4],
                                              float b0, float b1) {
  uint32_t bh0, bl0, bh1, bl1;
  fg_split_tf32(b0, bh0, bl0);
  fg_split_tf32(b1, bh1, bl1);
  fg_mma_3xtf32_split(c, ah, al, bh0, bl0, bh1, bl1);
}

// ==== bfloat16 tiles in shared memory (moved here from attention_mma.cu for the backward,
// attention_mma_bwd.cu, which loads its fragments the same way) ====================================

__device__ __forceinline__ void fg_ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void fg_ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// fg_to_bf16_tile converts a float32 tile [ROWS][D] (row stride D) to bfloat16 with row stride
// LDH, every thread a float4 at a time.
template <int ROWS, int D, int LDH, int THREADS>
__device__ __forceinline__ void fg_to_bf16_tile(uint16_t* __restrict__ dst, const float* __restrict__ src) {
  constexpr int CH = D / 4;
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const float4 x = *(const float4*)&src[r * D + 4 * c];
    *(uint2*)&dst[r * LDH + 4 * c] = make_uint2(fg_bf16x2(x.x, x.y), fg_bf16x2(x.z, x.w));
  }
}

template <int N> __device__ __forceinline__ void fg_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// ==== the online softmax and the output rows of the forward kernels (attention_mma.cu,
// attention_hopper.cu) ==================================================================

__device__ __forceinline__ float fg_ex2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

// FgRowA<P> is a warp's A operand over one chunk of 16 columns, read along its rows: x holds
// row g, y row g + 8, columns 4t..4t+3 of the chunk (lane = 4 g + t). mma(c, kk) adds to the
// 16 x 8 accumulator c the product with the B operand read the same way from 8 rows (row g of
// them in kk): c += A_chunk X_chunk^T.
// The forward's Q fragments (FgQ, attention_mma.cu) and the backward's row operands
// (attention_mma_bwd.cu) are this operand; the exact (3xTF32) forms are each kernel file's own.
template <int P> struct FgRowA;

template <> struct FgRowA<FG_PREC_BF16> {
  uint32_t a[4];
  __device__ __forceinline__ FgRowA(float4 x, float4 y) {
    a[0] = fg_bf16x2(x.x, x.y), a[1] = fg_bf16x2(y.x, y.y), a[2] = fg_bf16x2(x.z, x.w), a[3] = fg_bf16x2(y.z, y.w);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float4 kk) const {
    fg_mma_bf16(c, a[0], a[1], a[2], a[3], fg_bf16x2(kk.x, kk.y), fg_bf16x2(kk.z, kk.w));
  }
};

template <> struct FgRowA<FG_PREC_TF32> {
  uint32_t a[8];  // two k8 steps: columns (4t, 4t+1), then (4t+2, 4t+3)
  __device__ __forceinline__ FgRowA(float4 x, float4 y) {
    a[0] = fg_tf32(x.x), a[1] = fg_tf32(y.x), a[2] = fg_tf32(x.y), a[3] = fg_tf32(y.y);
    a[4] = fg_tf32(x.z), a[5] = fg_tf32(y.z), a[6] = fg_tf32(x.w), a[7] = fg_tf32(y.w);
  }
  __device__ __forceinline__ void mma(float (&c)[4], float4 kk) const {
    fg_mma_tf32(c, a[0], a[1], a[2], a[3], fg_tf32(kk.x), fg_tf32(kk.y));
    fg_mma_tf32(c, a[4], a[5], a[6], a[7], fg_tf32(kk.z), fg_tf32(kk.w));
  }
};

// FgRows is what a lane keeps of its two query rows r0 and r0 + 8 (r0 = m0 + 16 warp + g)
// across key tiles: the output accumulator O [16 x D] in the m16n8 C layout (o[n] holds
// columns 8n + 2t, 8n + 2t + 1), the running maxima m (log2 units), the lane's share of the row
// sums l (LT: double, or float in the bfloat16 kernels with a pre-pass, whose operand rounding
// dominates their error), and the visible key prefixes lim (fg_key_limit).
template <int OB, typename LT = double> struct FgRows {
  float o[OB][4];
  float m[2];
  LT l[2];
  int r0, t, lim[2], lim_min;

  __device__ __forceinline__ FgRows() {}
  __device__ __forceinline__ FgRows(const fg_attn_params& p, int b, int r0_, int t_) { init(p, b, r0_, t_); }
  __device__ __forceinline__ void init(const fg_attn_params& p, int b, int r0_, int t_) {
    r0 = r0_, t = t_;
#pragma unroll
    for (int n = 0; n < OB; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;
    m[0] = m[1] = fg_neg_inf<float>();
    l[0] = l[1] = 0;
    lim[0] = fg_key_limit(p, b, r0);
    lim[1] = fg_key_limit(p, b, r0 + 8);
    lim_min = min(lim[0], lim[1]);
  }

  // softmax turns the scores s of the key tile at n0 (times sl2 = scale log2 e) into
  // P = exp2(s sl2 - m) in place, updating m, l and rescaling o (online softmax). Element e of
  // block j is row r0 + 8 (e / 2), key n0 + 8 j + 2 t + e % 2; keys at or past a row's lim get
  // P = 0. FTZ: exp2 as one ex2.approx.ftz (results below 2^-126, terms that cannot move a
  // float32 row sum holding its maximum's 1, flush to 0; exp2f adds a rescaling around the
  // same instruction to keep them). FOLD (the caller guarantees sl2 > 0): the maximum is
  // taken over the raw scores and sl2 enters with the subtraction, one FFMA per score
  // instead of an FMUL and an FADD.
  template <bool FTZ, bool FOLD, int NB> __device__ __forceinline__ void softmax(float (&s)[NB][4], int n0, float sl2) {
    float alpha[2];
    probs<FTZ, FOLD>(s, n0, sl2, alpha);
    rescale(alpha);
  }

  // probs is softmax without the rescaling of o: it leaves the factors in alpha (rescale
  // applies them), so that o may still be the target of a product in flight (the Hopper
  // kernels overlap this with the previous tile's P V).
  template <bool FTZ, bool FOLD, int NB>
  __device__ __forceinline__ void probs(float (&s)[NB][4], int n0, float sl2, float (&alpha)[2]) {
    const bool mask = n0 + 8 * NB > lim_min;
    float mx[2] = {fg_neg_inf<float>(), fg_neg_inf<float>()};
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = FOLD ? s[j][e] : s[j][e] * sl2;
        if (mask && n0 + 8 * j + 2 * t + (e & 1) >= lim[e >> 1]) x = fg_neg_inf<float>();
        s[j][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    const auto ex2 = [](float x) { return FTZ ? fg_ex2_ftz(x) : exp2f(x); };
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // The 4 lanes of a quad share their rows.
      float gm = fg_group_max<4>(mx[r]);
      if (FOLD) gm *= sl2;
      const float mn = fmaxf(m[r], gm);
      // While a row has seen no visible key (mn = -Inf) its p are 0 and alpha is irrelevant
      // (o and l are 0): subtracting 0 instead of -Inf avoids -Inf - -Inf.
      const float base = fg_is_neg_inf(mn) ? 0.f : mn;
      alpha[r] = ex2(m[r] - base);
      float rs = 0;
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        s[j][2 * r] = ex2(FOLD ? fmaf(s[j][2 * r], sl2, -base) : s[j][2 * r] - base);
        s[j][2 * r + 1] = ex2(FOLD ? fmaf(s[j][2 * r + 1], sl2, -base) : s[j][2 * r + 1] - base);
        rs += s[j][2 * r] + s[j][2 * r + 1];
      }
      l[r] = l[r] * (LT)alpha[r] + (LT)rs;
      m[r] = mn;
    }
  }

  // rescale multiplies the rows of o by alpha (probs' factors).
  __device__ __forceinline__ void rescale(const float (&alpha)[2]) {
#pragma unroll
    for (int n = 0; n < OB; ++n) o[n][0] *= alpha[0], o[n][1] *= alpha[0], o[n][2] *= alpha[1], o[n][3] *= alpha[1];
  }

  // store writes O = o / l and L = m ln 2 + log l (in double; its rounding residual to lres)
  // of the rows below Nq; rows without a visible key get O = 0, L = -Inf. The quad's lanes
  // hold parts of each row sum. HINT: O's stores under L2 policy pol (fg_st2).
  template <bool HINT = false>
  __device__ __forceinline__ void store(const fg_attn_params& p, int b, int h, uint64_t pol = 0) const {
    float* out = (float*)p.o + b * p.o_batch + h * p.o_head;
    const int64_t lrow = ((int64_t)b * p.h + h) * p.nq;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const double lt = fg_group_sum<4>(l[r]);  // LT float: the quad sums in float
      const int i = r0 + 8 * r;
      if (i >= p.nq) continue;
      const float inv = lt > 0 ? (float)(1.0 / lt) : 0.f;
#pragma unroll
      for (int n = 0; n < OB; ++n)
        fg_st2<HINT>((float2*)&out[(int64_t)i * p.o_row + 8 * n + 2 * t], make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv),
                     pol);
      if (t == 0) {
        float lse = fg_neg_inf<float>(), res = 0;
        if (lt > 0) {
          const double L = (double)m[r] * 0.6931471805599453 + log(lt);
          lse = (float)L;
          res = (float)(L - (double)lse);
        }
        ((float*)p.lse)[lrow + i] = lse;
        if (p.lres) ((float*)p.lres)[lrow + i] = res;
      }
    }
  }
};

}  // namespace

#endif  // FLASHGORGON_MMA_CUH
