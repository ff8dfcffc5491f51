// attention_fwd.cu: the attention forward pass,
//   s_ij = scale * q_i . k_j   over the keys j visible from query i (fg_key_limit)
//   L_i  = log sum_j exp(s_ij)
//   o_i  = sum_j exp(s_ij - L_i) v_j
// for every batch b and query head h (key/value head h / (H/Hkv)); rows with no visible key get
// o = 0 and L = -Inf.
//
// Two numbered variants, kept because the first is the simplest correct kernel and the second
// is measured against it by the harness (cuda/cmd/attnbench):
//   1. fg_attn_fwd_v1: one thread per query row, online softmax over all keys, the output row
//      accumulated in a local array. No shared memory, no tiling.
//   2. fg_attn_fwd_v2: FlashAttention-2 work split. A thread block owns a tile of BM query rows
//      of one (b, h) and walks the key/value tiles of BN rows: the Q tile stays in shared memory,
//      each K tile is loaded, S = Q K^T is computed into registers, the running maximum m and
//      sum l of every row are updated (online softmax: when m grows, l and the output
//      accumulator are rescaled by exp(m_old - m_new)), P = exp(S - m) goes to shared memory,
//      the V tile replaces the K tile and O += P V. At the end O /= l and L = m + log l. The
//      row sums are kept in double (one update per row and key tile): a float32 sum over a
//      long row would cost L and O about 1e-5 relative.
//      Key tiles that no row of the block sees (causal mask, key lengths) are never visited, and
//      the keys from kv_end on (padding, and keys beyond the causal reach of the block's last
//      row) are never read: the tile loads zero-fill them, so whatever they hold (NaN, ±Inf)
//      cannot reach O through P·V as 0·NaN. A key hidden by the causal mask from some rows of
//      the block but seen by later ones is read, and its P is 0 for the rows that do not see
//      it: a NaN or ±Inf there reaches those rows, as in FlashAttention.
#include "common.cuh"

// fg_write_lse writes row r's log-sum-exp L = m + log l, computed in double, rounded to T, and,
// when asked for, its rounding residual L - (T)L; -Inf (residual 0) when the row saw no key.
template <typename T> __device__ __forceinline__ void fg_write_lse(const fg_attn_params& p, int64_t r, T m, double l) {
  T lse = fg_neg_inf<T>(), res = 0;
  if (l > 0) {
    const double L = (double)m + log(l);
    lse = (T)L;
    res = (T)(L - (double)lse);
  }
  ((T*)p.lse)[r] = lse;
  if (p.lres) ((T*)p.lres)[r] = res;
}

// ---- variant 1 -------------------------------------------------------------------------------

// fg_attn_fwd_v1: grid (ceil(Nq/128), H, B), 128 threads; thread t owns query row
// blockIdx.x*128 + t. D >= d is the size of the local output accumulator.
template <typename T, int D> __device__ void fg_attn_fwd_v1(const fg_attn_params& p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (i >= p.nq) return;
  const int hk = h / (p.h / p.hkv);
  const T* q = (const T*)p.q + b * p.q_batch + h * p.q_head + (int64_t)i * p.q_row;
  const T* k = (const T*)p.k + b * p.k_batch + hk * p.k_head;
  const T* v = (const T*)p.v + b * p.v_batch + hk * p.v_head;
  const T scale = (T)p.scale;
  T acc[D];
  for (int c = 0; c < p.d; ++c) acc[c] = 0;
  T m = fg_neg_inf<T>();
  double l = 0;  // the row sum in double, as the CPU op keeps it
  const int lim = fg_key_limit(p, b, i);
  for (int j = 0; j < lim; ++j) {
    T s = 0;
    for (int c = 0; c < p.d; ++c) s = fma(q[c], k[(int64_t)j * p.k_row + c], s);
    s *= scale;
    const T mn = fmax(m, s);
    const T alpha = fg_exp(m - mn), e = fg_exp(s - mn);  // exp(-Inf) = 0 on the first key
    l = l * (double)alpha + (double)e;
    for (int c = 0; c < p.d; ++c) acc[c] = fma(e, v[(int64_t)j * p.v_row + c], acc[c] * alpha);
    m = mn;
  }
  T* o = (T*)p.o + b * p.o_batch + h * p.o_head + (int64_t)i * p.o_row;
  const T inv = l > 0 ? (T)(1.0 / l) : T(0);
  for (int c = 0; c < p.d; ++c) o[c] = acc[c] * inv;
  fg_write_lse<T>(p, ((int64_t)b * p.h + h) * p.nq + i, m, l);
}

// ---- variant 2 -------------------------------------------------------------------------------

// fg_attn_fwd_v2: grid (ceil(Nq/BM), H, B), TR*TC threads arranged as TR row groups of TC
// consecutive lanes. Thread (tr, tc) owns rows tr + a*TR (a < BM/TR) of the tile, score
// columns tc + c*TC (c < BN/TC) and output columns tc + c*TC (c < D/TC); the TC lanes of a row
// group share their rows, so row maxima and sums are butterfly shuffles over TC lanes.
// Shared memory: Q [BM][D+1], K or V [BN][D+1], P [BM][BN+1] (rows padded by one element so
// that threads reading different rows hit different banks). D >= d; columns d..D-1 are zero.
template <typename T, int D, int BM, int BN, int TR, int TC> __device__ void fg_attn_fwd_v2(const fg_attn_params& p) {
  constexpr int THREADS = TR * TC, RM = BM / TR, SC = BN / TC, OC = D / TC;
  constexpr int LD = D + 1, LDP = BN + 1;
  static_assert(RM * TR == BM && SC * TC == BN && OC * TC == D, "tile sizes must divide");
  static_assert(TC <= 32 && (TC & (TC - 1)) == 0 && THREADS % 32 == 0, "row groups must be aligned lane groups");
  constexpr unsigned SMEM = (BM * LD + BN * LD + BM * LDP) * sizeof(T);
  if (fg_dynamic_smem() < SMEM) __trap();
  T* sQ = (T*)fg_smem;
  T* sKV = sQ + BM * LD;
  T* sP = sKV + BN * LD;

  const int m0 = blockIdx.x * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int tr = threadIdx.x / TC, tc = threadIdx.x % TC;
  const T* q = (const T*)p.q + b * p.q_batch + h * p.q_head;
  const T* k = (const T*)p.k + b * p.k_batch + hk * p.k_head;
  const T* v = (const T*)p.v + b * p.v_batch + hk * p.v_head;
  const T scale = (T)p.scale;

  fg_load_tile<T, BM, D, LD, THREADS>(sQ, q + (int64_t)m0 * p.q_row, p.q_row, 0, p.nq - m0, p.d);

  // Keys visible from some row of the tile: [0, kv_end). The mask is a prefix per row and its
  // length grows with the row, so the tile's last row sees the most.
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  int lim[RM];  // per-row visible prefix
#pragma unroll
  for (int a = 0; a < RM; ++a) lim[a] = fg_key_limit(p, b, m0 + tr + a * TR);

  T acc[RM][OC], m[RM];
  double l[RM];  // this lane's share of each row sum, in double as the CPU op keeps it
  fg_zero(acc);
#pragma unroll
  for (int a = 0; a < RM; ++a) m[a] = fg_neg_inf<T>(), l[a] = 0;

  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    __syncthreads();  // the previous tile's readers of sKV (as V) and sP are done
    fg_load_tile<T, BN, D, LD, THREADS>(sKV, k + (int64_t)n0 * p.k_row, p.k_row, 0, kv_end - n0, p.d);
    __syncthreads();

    T s[RM][SC];
    fg_zero(s);
    fg_mm_abt<T, RM, SC, D, LD, LD>(s, sQ, tr, TR, sKV, tc, TC);

#pragma unroll
    for (int a = 0; a < RM; ++a) {
      T mx = fg_neg_inf<T>();
#pragma unroll
      for (int c = 0; c < SC; ++c) {
        const int j = n0 + tc + c * TC;
        s[a][c] = j < lim[a] ? s[a][c] * scale : fg_neg_inf<T>();
        mx = fmax(mx, s[a][c]);
      }
      const T mn = fmax(m[a], fg_group_max<TC>(mx));
      // Every lane of the row group holds the same mn. While a row has seen no visible key
      // (mn = -Inf) it keeps alpha = 1 and p = 0, avoiding exp(-Inf + Inf).
      const bool empty = fg_is_neg_inf(mn);
      const T alpha = empty ? T(1) : fg_exp(m[a] - mn);
      T rs = 0;
#pragma unroll
      for (int c = 0; c < SC; ++c) {
        s[a][c] = empty ? T(0) : fg_exp(s[a][c] - mn);
        rs += s[a][c];
      }
      l[a] = l[a] * (double)alpha + (double)rs;  // summed over the row group's lanes at the end
      m[a] = mn;
#pragma unroll
      for (int c = 0; c < OC; ++c) acc[a][c] *= alpha;
    }

    __syncthreads();  // all threads are done reading sKV as K
#pragma unroll
    for (int a = 0; a < RM; ++a)
#pragma unroll
      for (int c = 0; c < SC; ++c) sP[(tr + a * TR) * LDP + tc + c * TC] = s[a][c];
    fg_load_tile<T, BN, D, LD, THREADS>(sKV, v + (int64_t)n0 * p.v_row, p.v_row, 0, kv_end - n0, p.d);
    __syncthreads();

    fg_mm_ab<T, RM, OC, BN, LDP, LD>(acc, sP, tr, TR, sKV, tc, TC);
  }

  T* o = (T*)p.o + b * p.o_batch + h * p.o_head;
  const int64_t lrow = ((int64_t)b * p.h + h) * p.nq;
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const double lt = fg_group_sum<TC>(l[a]);
    const int i = m0 + tr + a * TR;
    if (i >= p.nq) continue;
    const T inv = lt > 0 ? (T)(1.0 / lt) : T(0);
#pragma unroll
    for (int c = 0; c < OC; ++c) {
      const int col = tc + c * TC;
      if (col < p.d) o[(int64_t)i * p.o_row + col] = acc[a][c] * inv;
    }
    if (tc == 0) fg_write_lse<T>(p, lrow + i, m[a], lt);
  }
}

// ---- entry points ----------------------------------------------------------------------------
// Names encode every template parameter; the Go launch table (cuda/launch_gpu.go) builds the
// same names, so a configuration missing here fails cleanly at function lookup.

#define FG_FWD_V1(T, SUF, D) \
  extern "C" __global__ void __launch_bounds__(128) fg_attn_fwd_v1_##SUF##_d##D(const fg_attn_params p) { fg_attn_fwd_v1<T, D>(p); }
FG_FWD_V1(float, f32, 256)
FG_FWD_V1(double, f64, 256)

#define FG_FWD_V2(T, SUF, D, BM, BN, TR, TC)                                                    \
  extern "C" __global__ void __launch_bounds__(TR * TC)                                          \
      fg_attn_fwd_v2_##SUF##_d##D##_m##BM##_n##BN##_r##TR##_c##TC(const fg_attn_params p) { \
    fg_attn_fwd_v2<T, D, BM, BN, TR, TC>(p);                                                     \
  }
FG_FWD_V2(float, f32, 32, 64, 64, 16, 8)
FG_FWD_V2(float, f32, 64, 64, 64, 16, 8)
FG_FWD_V2(float, f32, 128, 64, 32, 16, 8)
FG_FWD_V2(float, f32, 256, 32, 32, 8, 16)
FG_FWD_V2(double, f64, 32, 32, 32, 8, 16)
FG_FWD_V2(double, f64, 64, 32, 32, 8, 16)
FG_FWD_V2(double, f64, 128, 32, 32, 8, 16)
FG_FWD_V2(double, f64, 256, 32, 32, 8, 32)
