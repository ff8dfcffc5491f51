// mma_bwd.cuh: the pieces of the attention backward shared by the mma.sync kernels
// (attention_mma_bwd.cu) and the Hopper wgmma kernels (attention_hopper_bwd.cu), whose
// accumulators have the same per-warp layout (the m16n8 C layout: lane (g, t) holds rows g,
// g + 8 and columns 8 j + 2 t, + 1 of each 8-column block j): zeroing and storing a warp's
// 16-row accumulator, the elementwise step from S and dP to P and dS (dK/dV: transposed, a
// column per query; dQ: a row per query), and the copy of the (L2, delta) workspace rows.
#ifndef FLASHGORGON_MMA_BWD_CUH
#define FLASHGORGON_MMA_BWD_CUH

#include "mma.cuh"

namespace {

template <int NB> __device__ __forceinline__ void fg_bwd_zero(float (&c)[NB][4]) {
#pragma unroll
  for (int j = 0; j < NB; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0;
}


// fg_bwd_store writes rows r0, r0 + 8 (below nrows) of a warp's 16 x D accumulator to the
// row-major global matrix dst (row stride ld); rows at or past zero_from get exactly 0.
template <int D>
__device__ __forceinline__ void fg_bwd_store(float* dst, int64_t ld, const float (&o)[D / 8][4], int r0, int nrows,
                                             int zero_from, int t) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = r0 + 8 * r;
    if (i >= nrows) continue;
    const bool zero = i >= zero_from;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      *(float2*)&dst[(int64_t)i * ld + 8 * n + 2 * t] =
          zero ? make_float2(0.f, 0.f) : make_float2(o[n][2 * r], o[n][2 * r + 1]);
  }
}

// The elementwise step of the backward, for one element: P = exp2(s sl2 - L2) from the
// score s, and dS = scale P (dP - delta); fg_bwd_seen_t: whether key jk is visible from query
// row i (a row past Nq sees none). FX (the Hopper kernels' _fx variants): s sl2 - L2 as one
// FFMA and exp2 as one ex2.approx.ftz (P below 2^-126 flushes to 0, as in the forward's
// FgRows), where exp2f adds a denormal fix-up around the same instruction; and dS without
// the factor scale, P (dP - delta), which the kernel applies once to dK and dQ before their
// store (FlashAttention-2's order: dK = scale sum_i dS_ij Q_i).
template <bool FX = false> __device__ __forceinline__ float fg_bwd_p1(float s, float sl2, float l2) {
  return FX ? fg_ex2_ftz(fmaf(s, sl2, -l2)) : exp2f(s * sl2 - l2);
}
template <bool FX = false> __device__ __forceinline__ float fg_bwd_ds1(float pv, float dp, float delta, float scale) {
  return FX ? pv * (dp - delta) : pv * (dp - delta) * scale;
}
// (Bitwise, not short-circuit: no branch, which would serialize the wgmmas in flight around
// the Exact dK/dV kernel's AHEAD step, C7518.)
__device__ __forceinline__ bool fg_bwd_seen(const fg_attn_params& p, int i, int jk, int klen) {
  return (i < p.nq) & (jk < klen) & (!p.causal | (jk <= i + p.causal_offset));
}

// fg_bwd_pds_t turns the dK/dV kernels' S^T and dP^T of one query sub-block (queries
// m0 + sb + 8 j + 2 t + e % 2, keys n0 + kr + 8 (e / 2) for element e of block j) into
// P^T = exp2(S^T sl2 - L2) and dS^T = scale P^T (dP^T - delta) in place, with (L2, delta) of
// the tile's rows in ld; outside the visible region (checked only when mask is set) both are 0.
template <bool FX = false, int NB>
__device__ __forceinline__ void fg_bwd_pds_t(float (&st)[NB][4], float (&dpt)[NB][4], const float2* ld, int sb, int m0,
                                             int n0, int kr, int t, int klen, bool mask, float sl2, float scale,
                                             const fg_attn_params& p) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int qi = sb + 8 * j + 2 * t + (e & 1);
      const float2 x = ld[qi];
      float pv = fg_bwd_p1<FX>(st[j][e], sl2, x.x);
      float ds = fg_bwd_ds1<FX>(pv, dpt[j][e], x.y, scale);
      if (mask) {
        const bool seen = fg_bwd_seen(p, m0 + qi, n0 + kr + 8 * (e >> 1), klen);
        pv = seen ? pv : 0.f;
        ds = seen ? ds : 0.f;
      }
      st[j][e] = pv;
      dpt[j][e] = ds;
    }
}

// fg_bwd_p_t and fg_bwd_ds_t are fg_bwd_pds_t in two steps, for kernels that compute P^T
// while dP^T's product is still running (attention_hopper_bwd.cu): P^T in st, then dS^T in
// dpt from P^T in pt, each 0 outside the visible region. fg_bwd_step_t is the loop of both:
// out = P^T from the scores in out (DS false, c = sl2) or dS^T from pt and dP^T in out (DS
// true, c = scale).
template <int NB, bool DS, bool FX>
__device__ __forceinline__ void fg_bwd_step_t(const float (&pt)[NB][4], float (&out)[NB][4], const float2* ld, int sb,
                                              int m0, int n0, int kr, int t, int klen, bool mask, float c,
                                              const fg_attn_params& p) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int qi = sb + 8 * j + 2 * t + (e & 1);
      const float v = DS ? fg_bwd_ds1<FX>(pt[j][e], out[j][e], ld[qi].y, c) : fg_bwd_p1<FX>(out[j][e], c, ld[qi].x);
      out[j][e] = mask && !fg_bwd_seen(p, m0 + qi, n0 + kr + 8 * (e >> 1), klen) ? 0.f : v;
    }
}
template <bool FX = false, int NB>
__device__ __forceinline__ void fg_bwd_p_t(float (&st)[NB][4], const float2* ld, int sb, int m0, int n0, int kr, int t,
                                           int klen, bool mask, float sl2, const fg_attn_params& p) {
  fg_bwd_step_t<NB, false, FX>(st, st, ld, sb, m0, n0, kr, t, klen, mask, sl2, p);
}
template <bool FX = false, int NB>
__device__ __forceinline__ void fg_bwd_ds_t(const float (&pt)[NB][4], float (&dpt)[NB][4], const float2* ld, int sb,
                                            int m0, int n0, int kr, int t, int klen, bool mask, float scale,
                                            const fg_attn_params& p) {
  fg_bwd_step_t<NB, true, FX>(pt, dpt, ld, sb, m0, n0, kr, t, klen, mask, scale, p);
}

// fg_bwd_ds turns the dQ kernels' S and dP of one key tile (rows r0 + 8 (e / 2), keys
// n0 + 8 j + 2 t + e % 2) into dS = scale P (dP - delta) in dp, with P = exp2(S sl2 - L2);
// keys at or past a row's lim get dS = 0 (checked only when the tile reaches past lim_min).
template <bool FX = false, int NB>
__device__ __forceinline__ void fg_bwd_ds(const float (&s)[NB][4], float (&dp)[NB][4], const float (&l2)[2],
                                          const float (&dl)[2], const int (&lim)[2], int lim_min, int n0, int t,
                                          float sl2, float scale) {
  const bool mask = n0 + 8 * NB > lim_min;
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1;
      float ds = fg_bwd_ds1<FX>(fg_bwd_p1<FX>(s[j][e], sl2, l2[r]), dp[j][e], dl[r], scale);
      if (mask && n0 + 8 * j + 2 * t + (e & 1) >= lim[r]) ds = 0.f;
      dp[j][e] = ds;
    }
}

// fg_bwd_p and fg_bwd_ds_p are fg_bwd_ds in two steps (as fg_bwd_p_t, fg_bwd_ds_t): P in s
// (unmasked: fg_bwd_ds_p masks dS), then dS in dp from P in s; the caller tells whether the
// tile at n0 reaches past this lane's lim_min (mask: n0 + 8 NB > lim_min), or false where no
// row of the warp's has a limit inside it.
template <bool FX = false, int NB>
__device__ __forceinline__ void fg_bwd_p(float (&s)[NB][4], const float (&l2)[2], float sl2) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[j][e] = fg_bwd_p1<FX>(s[j][e], sl2, l2[e >> 1]);
}
template <bool FX = false, int NB>
__device__ __forceinline__ void fg_bwd_ds_p(const float (&s)[NB][4], float (&dp)[NB][4], const float (&dl)[2],
                                            const int (&lim)[2], bool mask, int n0, int t, float scale) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1;
      float ds = fg_bwd_ds1<FX>(s[j][e], dp[j][e], dl[r], scale);
      if (mask && n0 + 8 * j + 2 * t + (e & 1) >= lim[r]) ds = 0.f;
      dp[j][e] = ds;
    }
}

// fg_bwd_mul multiplies a warp's accumulator by c (the _fx kernels' scale of dK and dQ).
template <int NB> __device__ __forceinline__ void fg_bwd_mul(float (&a)[NB][4], float c) {
#pragma unroll
  for (int j = 0; j < NB; ++j) a[j][0] *= c, a[j][1] *= c, a[j][2] *= c, a[j][3] *= c;
}

// fg_bwd_copy_ld starts the copy of the (L2, delta) of rows [0, ROWS) from the workspace ld
// (8 bytes per row) into s; rows r >= nvalid are zero-filled without a global read.
template <int ROWS, int THREADS> __device__ __forceinline__ void fg_bwd_copy_ld(float* s, const float* ld, int nvalid) {
  for (int r = threadIdx.x; r < ROWS; r += THREADS) {
    const bool ok = r < nvalid;
    const unsigned a = (unsigned)__cvta_generic_to_shared(s + 2 * r);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(a), "l"(ok ? ld + 2 * r : ld), "r"(ok ? 8 : 0));
  }
}

// ---- 3xF16: Exact on half tensor-core products (attention_hopper_bwd.cu, attention_hopper.cu) --
// A float32 x, scaled by a power of two f so that |f x| <= 2^15 (fg_x3_exp), is hi + lo with
// hi = half(f x) and lo = half(f x - hi) (f x - hi is exact in float32): 22 bits of f x, as
// 3xTF32's tf32 hi and lo, and x y = (hi_x hi_y + hi_x lo_y + lo_x hi_y) / (f_x f_y) up to
// lo_x lo_y (2^-22 of |x y|). Half's range is the price: lo keeps its 11 bits only where
// |f x| >= 2^-3 (lo's exponent is 11 below hi's, half's smallest normal is 2^-14), and hi only
// where |f x| >= 2^-14; below, the split's error is at most 2^-25 absolute. So f must put a
// set's largest near 2^15: its elements within 2^-18 of that largest keep 22 bits, and the
// smaller ones carry an error under 2^-40 of it. The backward scales each row of Q, dO, K and
// V by its own factor (fg_attn_bwd_x3_prep4) and each row of a tile's P^T, dS^T (dS), the
// forward K and V per tile of keys (fg_x3_kv_tile), Q per block and P by 2^15. A product
// over d takes its operands' row factors out of each score; a product over keys or queries
// takes the factors of the rows it sums over into the register operand first (dV = P^T dO:
// P^T's column i times dO row i's inverse factor).
// Half products run at twice tf32's rate on the H100, so the three cost 1.5 tf32 products.

// fg_x3_exp is the exponent e of the factor f = 2^e for a set whose largest magnitude is m:
// f m in [2^14, 2^15), e clamped to [-62, 62] (m = 0 or not finite: e = 0). So |f x| <= 2^15 for
// every element (half's largest is 65504). The clamp keeps the factors' products in float32's
// range; elements of 2^77 and more would overflow the half planes (float32 attention itself
// overflows long before).
__device__ __forceinline__ int fg_x3_exp(float m) {
  const int E = (__float_as_int(m) >> 23) & 0xff;  // m >= 0: m in [2^(E - 127), 2^(E - 126)) where E > 0
  if (m == 0.f || E == 0xff) return 0;
  return max(-62, min(62, 141 - E));  // subnormal m (E = 0): 62
}
// fg_pow2 is 2^e for e in [-126, 127], built from its bits.
__device__ __forceinline__ float fg_pow2(int e) { return __int_as_float((e + 127) << 23); }

// FgX3Kv is where the forward's K and V half planes are (fg_attn_x3_kv, or variant 30's
// converters, both through fg_x3_kv_tile): K hi, K lo, V hi, V lo [B, Hkv, Nk, d] from kh
// (each lo plane ke elements after its hi plane), then exps, an int2 per tile of BN keys of
// each (b, key/value head) (tile u = (b Hkv + hk) nt + j, nt = ceil(Nk / BN)): the exponents
// of the powers of two the tile's K and V rows were scaled by; then, in 16 bytes, variant 30's
// flags, a uint32 per tile (cuda/attention_mma.go, mmaCfg.scratchBytes).
struct FgX3Kv {
  uint16_t* kh;
  int64_t ke;  // elements of a plane
  int nt;      // tiles of a head
  int2* exps;
  uint32_t* flags;
  __device__ __forceinline__ FgX3Kv(const fg_attn_params& p, uint64_t base, int BN) {
    kh = (uint16_t*)base;
    ke = (int64_t)p.b * p.hkv * p.nk * p.d;
    nt = (p.nk + BN - 1) / BN;
    exps = (int2*)(kh + 4 * ke);
    const int64_t tiles = (int64_t)p.b * p.hkv * nt;
    flags = (uint32_t*)(exps + (tiles + 1) / 2 * 2);
  }
  // tile sets b, hk and the first key j0 of tile u.
  __device__ __forceinline__ void tile(int64_t u, int hkv, int BN, int& b, int& hk, int& j0) const {
    const int64_t head = u / nt;
    b = (int)(head / hkv), hk = (int)(head % hkv), j0 = (int)(u % nt) * BN;
  }
};

// fg_absmax_bits is the largest |x| of x's elements as float bits (NaN above every number).
__device__ __forceinline__ unsigned fg_absmax_bits(float4 x) {
  return max(max(__float_as_uint(fabsf(x.x)), __float_as_uint(fabsf(x.y))),
             max(__float_as_uint(fabsf(x.z)), __float_as_uint(fabsf(x.w))));
}

// fg_x3_kv_tile writes tile u of the forward's planes (FgX3Kv): the keys j BN .. j BN + BN - 1
// of (b, key/value head) below the batch's key length (padding neither read nor written).
// Pass 1 finds the largest magnitudes of the tile's K and of its V; pass 2 writes each x of
// them times 2^e (e = fg_x3_exp of its tensor's largest) as half hi and lo; thread 0 writes
// the two exponents. Threads tid of N (whole warps, N a multiple of D / 4, N <= 256) share the
// maxima through part (N / 16 unsigned in shared memory) and named barrier bar; thread tid
// takes the float4 tid mod D/4 of rows tid / (D/4) + N/(D/4) i, with U rows of K and of V in
// flight; where U rows a thread cover the tile, it reads them once and keeps them for pass 2.
// The caller puts a barrier of the N threads between two tiles (part is reused).
template <int D, int BN, int N, int U>
__device__ __forceinline__ void fg_x3_kv_tile(const fg_attn_params& p, const FgX3Kv& kv, int64_t u, int tid, int bar,
                                              unsigned* part) {
  constexpr int C4 = D / 4, RS = N / C4;  // float4 per row; rows apart of a thread's rows
  static_assert(N % C4 == 0 && N % 32 == 0, "converter threads");
  int b, hk, j0;
  kv.tile(u, p.hkv, BN, b, hk, j0);
  const int rows = max(0, min(BN, fg_key_length(p, b) - j0)), r0 = tid / C4, c4 = 4 * (tid % C4);
  const float* const k = (const float*)p.k + b * p.k_batch + hk * p.k_head + (j0 + r0) * p.k_row + c4;
  const float* const v = (const float*)p.v + b * p.v_batch + hk * p.v_head + (j0 + r0) * p.v_row + c4;
  const int64_t ks = RS * p.k_row, vs = RS * p.v_row;
  // The loads of a round: rows r0 + RS (i + e) of K and of V (zeros past the tile's keys).
  const auto load = [&](int i, float4 (&x)[U], float4 (&y)[U]) {
#pragma unroll
    for (int e = 0; e < U; ++e) {
      x[e] = y[e] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (r0 + RS * (i + e) < rows) x[e] = *(const float4*)(k + (i + e) * ks), y[e] = *(const float4*)(v + (i + e) * vs);
    }
  };
  // KEEP: a round covers the tile, whose rows then stay in registers for pass 2 (one read).
  constexpr bool KEEP = U * RS >= BN;
  float4 x[U], y[U];
  unsigned mk = 0, mv = 0;
  for (int i = 0; r0 + RS * i < rows; i += U) {
    load(i, x, y);
#pragma unroll
    for (int e = 0; e < U; ++e) mk = max(mk, fg_absmax_bits(x[e])), mv = max(mv, fg_absmax_bits(y[e]));
  }
  mk = __reduce_max_sync(0xffffffffu, mk), mv = __reduce_max_sync(0xffffffffu, mv);
  if (tid % 32 == 0) part[2 * (tid / 32)] = mk, part[2 * (tid / 32) + 1] = mv;
  asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "n"(N) : "memory");
#pragma unroll
  for (int w = 0; w < N / 32; ++w) mk = max(mk, part[2 * w]), mv = max(mv, part[2 * w + 1]);
  const int ek = fg_x3_exp(__uint_as_float(mk)), ev = fg_x3_exp(__uint_as_float(mv));
  const float fk = fg_pow2(ek), fv = fg_pow2(ev);
  // This thread's first K hi element (rows D apart; lo ke elements on, V 2 ke).
  uint16_t* const kh = kv.kh + ((int64_t)b * p.hkv + hk) * p.nk * D + (int64_t)(j0 + r0) * D + c4;
  // put writes x f at the plane element at (hi; lo ke elements on).
  const auto put = [&](uint16_t* at, float4 x, float f) {
    uint32_t h0, l0, h1, l1;
    fg_f16_split2(x.x, x.y, f, h0, l0);
    fg_f16_split2(x.z, x.w, f, h1, l1);
    *(uint2*)at = make_uint2(h0, h1);
    *(uint2*)(at + kv.ke) = make_uint2(l0, l1);
  };
  for (int i = 0; r0 + RS * i < rows; i += U) {
    if (!KEEP) load(i, x, y);
#pragma unroll
    for (int e = 0; e < U; ++e)
      if (r0 + RS * (i + e) < rows) put(kh + (i + e) * RS * D, x[e], fk), put(kh + 2 * kv.ke + (i + e) * RS * D, y[e], fv);
  }
  if (tid == 0) kv.exps[u] = make_int2(ek, ev);
}

// fg_x3_row_factors returns, for a warp's accumulator rows g and g + 8 (elements e < 2 and
// e >= 2) whose largest magnitudes in this lane are m[0], m[1], the factors 2^e of fg_x3_exp
// over the row (its four lanes t) and their inverses.
__device__ __forceinline__ void fg_x3_row_factors(float (&m)[2], float (&f)[2], float (&inv)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    m[r] = fmaxf(m[r], __shfl_xor_sync(0xffffffffu, m[r], 1));
    m[r] = fmaxf(m[r], __shfl_xor_sync(0xffffffffu, m[r], 2));
    const int e = fg_x3_exp(m[r]);
    f[r] = fg_pow2(e), inv[r] = fg_pow2(-e);
  }
}

// FgX3Planes is where the pre-passes put the half planes in the scratch buffer: the
// backward's fg_attn_bwd_x3_prep4 Q hi, Q lo, dO hi, dO lo [B, H, Nq, d], K hi, K lo, V hi,
// V lo [B, Hkv, Nk, d] (each lo plane right after its hi plane), then the inverse row factors,
// a float2 per query row (Q, dO) and per key row (K, V) (the forward's planes: FgX3Kv). The
// kernels' parameters point q, do_, k, v at the hi planes (cuda/attention_mma_bwd.go).
struct FgX3Planes {
  int64_t qlo, klo;   // elements from a hi plane to its lo plane
  const float* tail;  // what follows V lo
  __device__ __forceinline__ FgX3Planes(const fg_attn_params& p) {
    qlo = (int64_t)p.b * p.h * p.nq * p.d, klo = (int64_t)p.b * p.hkv * p.nk * p.d;
    tail = (const float*)((const uint16_t*)p.v + 2 * klo);
  }
  __device__ __forceinline__ const float2* qf() const { return (const float2*)tail; }
  __device__ __forceinline__ const float2* kf(const fg_attn_params& p) const {
    return (const float2*)tail + (int64_t)p.b * p.h * p.nq;
  }
};

// fg_dkdv_masked reports whether the tile of BM queries from m0 and BN keys from n0 of a dK/dV
// kernel needs the masks (rows past Nq, keys past the batch's length klen, the causal limit).
template <int BM, int BN> __device__ __forceinline__ bool fg_dkdv_masked(const fg_attn_params& p, int m0, int n0, int klen) {
  return m0 + BM > p.nq || n0 + BN > klen || (p.causal && n0 + BN - 1 > m0 + p.causal_offset);
}

// FgKvWalk is the walk of a dK/dV block (keys [n0, n0 + BN) of K/V head hk, batch b) over the
// query tiles of BM rows: klen, the batch's key length (keys from klen on are padding); from
// m_start, the tile of the first query row that sees key n0 (causal: rows i >= n0 - offset), to
// Nq, ntiles tiles for each of the group's query heads, total steps in all (none when every
// key of the block is padding); step it is tile m0(it) of query head hq(it).
template <int BM> struct FgKvWalk {
  int hk, group, klen, m_start, ntiles, total;

  __device__ __forceinline__ FgKvWalk(const fg_attn_params& p, int b, int hk_, int n0, int group_) {
    hk = hk_, group = group_;
    klen = fg_key_length(p, b);
    const int i_first = p.causal ? max(0, n0 - p.causal_offset) : 0;
    m_start = i_first / BM * BM;
    ntiles = (n0 < klen && m_start < p.nq) ? (p.nq - m_start + BM - 1) / BM : 0;
    total = group * ntiles;
  }
  __device__ __forceinline__ int hq(int it) const { return hk * group + it / ntiles; }
  __device__ __forceinline__ int m0(int it) const { return m_start + (it % ntiles) * BM; }
};

// FgKvCursor is a step of a FgKvWalk without the division of hq(it) and m0(it): from step 0
// (query head hk group, tile m_start), step moves it to the next step's (hq, m0).
struct FgKvCursor {
  int hq, m0;

  template <int BM>
  __device__ __forceinline__ FgKvCursor(const FgKvWalk<BM>& w, int hk) : hq(hk * w.group), m0(w.m_start) {}
  template <int BM> __device__ __forceinline__ void step(const FgKvWalk<BM>& w, int nq) {
    const bool wrap = m0 + BM >= nq;  // the head's last tile: the group's next head, from m_start
    hq += wrap;
    m0 = wrap ? w.m_start : m0 + BM;
  }
};

// FgDqRows is what a lane of the dQ kernels keeps of its two query rows r0 and r0 + 8
// (r0 = m0 + 16 warp + g) of head h, batch b, across key tiles: the visible key prefixes lim
// (fg_key_limit; lim_min the smaller) and (L2, delta) from the workspace, with lim = 0 and
// (0, 0) for rows past Nq.
struct FgDqRows {
  int t, lim[2], lim_min;
  float l2[2], dl[2];

  __device__ __forceinline__ FgDqRows(const fg_attn_params& p, int b, int h, int r0, int t_) {
    t = t_;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = r0 + 8 * r;
      lim[r] = i < p.nq ? fg_key_limit(p, b, i) : 0;
      const float2 x = i < p.nq ? ((const float2*)p.delta)[((int64_t)b * p.h + h) * p.nq + i] : make_float2(0.f, 0.f);
      l2[r] = x.x, dl[r] = x.y;
    }
    lim_min = min(lim[0], lim[1]);
  }

  // ds is fg_bwd_ds on these rows: dS of the key tile at n0 in dp.
  template <bool FX = false, int NB>
  __device__ __forceinline__ void ds(const float (&s)[NB][4], float (&dp)[NB][4], int n0, float sl2, float scale) const {
    fg_bwd_ds<FX>(s, dp, l2, dl, lim, lim_min, n0, t, sl2, scale);
  }
};

}  // namespace

#endif  // FLASHGORGON_MMA_BWD_CUH
