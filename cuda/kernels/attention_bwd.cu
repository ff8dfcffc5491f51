// attention_bwd.cu: the attention backward pass from the saved log-sum-exp L, given dO and
// delta = rowsum(dO * O) (attention_bwd_preprocess.cu). With P_ij = exp(s_ij - L_i) recomputed
// from Q, K and L (0 where key j is masked for row i; L's rounding residual lres is subtracted
// too when given, see params.h):
//   dV_j = sum_i P_ij dO_i
//   dP_ij = dO_i . V_j
//   dS_ij = P_ij (dP_ij - delta_i)
//   dK_j = scale * sum_i dS_ij Q_i
//   dQ_i = scale * sum_j dS_ij K_j
// summed over the query heads that share a key/value head (GQA).
//
// dP and delta are summed in double whatever T, and dS is formed in double: where a row's
// gradient is small, dP_ij - delta_i cancels and a float32 dP would leave only its rounding
// (the CPU op also keeps these sums in float64).
//
// Padded keys (j >= key_lengths[b]) are never read: both kernels zero-fill them in their tile
// loads, and dS is selected (set to 0) where P is masked rather than computed as 0 * (dP - delta),
// so whatever padded keys hold has no effect and their dK, dV are exactly 0. A key hidden by the
// causal mask from some rows of a tile and seen by later ones is read (as in FlashAttention):
// a NaN or +-Inf there reaches the dQ of the earlier rows through dS K (0 * NaN).
//
// Two kernels, neither with atomics, so the result is deterministic (bit-identical run to run):
//   fg_attn_bwd_dkdv: a thread block owns a tile of BN keys of one (b, key/value head) and walks
//     every query tile of every query head of its group, accumulating dK and dV in registers
//     (FlashAttention-2's loop order for dK, dV). Query tiles that see none of its keys (causal)
//     are skipped.
//   fg_attn_bwd_dq: a thread block owns a tile of BM query rows of one (b, h) and walks the key
//     tiles, recomputing P and dP to accumulate dQ in registers. This costs two more matrix
//     products than accumulating dQ with atomics from the dK/dV kernel, and buys determinism
//     and freedom from races.
#include "common.cuh"

// fg_bwd_s_dp sets s = A B^T and dp = C E^T (dp summed in double) over the D columns of the
// row-major tiles (row stride LD), thread (tr, tc) its rows tr + a TR and columns tc + c TC:
// S and dP of a query tile (A, C = Q, dO; B, E = K, V), or S^T and dP^T (A, C = K, V;
// B, E = Q, dO).
template <typename T, int R, int C, int D, int LD, int TR, int TC>
__device__ __forceinline__ void fg_bwd_s_dp(T (&s)[R][C], double (&dp)[R][C], const T* a, const T* b, const T* c,
                                            const T* e, int tr, int tc) {
  fg_zero(s);
  fg_zero(dp);
  fg_mm_abt<T, R, C, D, LD, LD>(s, a, tr, TR, b, tc, TC);
  fg_mm_abt<T, R, C, D, LD, LD>(dp, c, tr, TR, e, tc, TC);
}

// fg_attn_bwd_dkdv: grid (ceil(Nk/BN), Hkv, B), TR*TC threads. Thread (tr, tc) owns key rows
// tr + a*TR (a < BN/TR), query columns tc + c*TC of the transposed score tile (c < BM/TC) and
// head-dim columns tc + c*TC of dK and dV (c < D/TC). Shared memory: delta [BM] (double),
// K, V [BN][D+1], Q, dO [BM][D+1], P^T and dS^T [BN][BM+1], L and L's residual [BM].
template <typename T, int D, int BM, int BN, int TR, int TC> __device__ void fg_attn_bwd_dkdv(const fg_attn_params& p) {
  constexpr int THREADS = TR * TC, RN = BN / TR, SQ = BM / TC, DC = D / TC;
  constexpr int LD = D + 1, LDT = BM + 1;
  static_assert(RN * TR == BN && SQ * TC == BM && DC * TC == D, "tile sizes must divide");
  constexpr unsigned SMEM = BM * sizeof(double) + (2 * BN * LD + 2 * BM * LD + 2 * BN * LDT + 2 * BM) * sizeof(T);
  if (fg_dynamic_smem() < SMEM) __trap();
  double* sDelta = (double*)fg_smem;
  T* sK = (T*)(sDelta + BM);
  T* sV = sK + BN * LD;
  T* sQ = sV + BN * LD;
  T* sdO = sQ + BM * LD;
  T* sPT = sdO + BM * LD;
  T* sdST = sPT + BN * LDT;
  T* sL = sdST + BN * LDT;
  T* sLres = sL + BM;

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int tr = threadIdx.x / TC, tc = threadIdx.x % TC;
  const int group = p.h / p.hkv;
  const T scale = (T)p.scale;
  // Keys from klen on are padding: the loads zero-fill them, they are never read.
  int klen = p.nk;
  if (p.key_lengths) klen = min(klen, ((const int32_t*)p.key_lengths)[b]);
  const T* k = (const T*)p.k + b * p.k_batch + hk * p.k_head;
  const T* v = (const T*)p.v + b * p.v_batch + hk * p.v_head;
  fg_load_tile<T, BN, D, LD, THREADS>(sK, k + (int64_t)n0 * p.k_row, p.k_row, 0, klen - n0, p.d);
  fg_load_tile<T, BN, D, LD, THREADS>(sV, v + (int64_t)n0 * p.v_row, p.v_row, 0, klen - n0, p.d);

  T dk[RN][DC], dv[RN][DC];
  fg_zero(dk);
  fg_zero(dv);

  // The first query row that sees key n0: keys are a visible prefix whose length grows with the
  // row, so the rows before it see none of this tile's keys.
  int i_first = 0;
  if (p.causal) i_first = max(0, n0 - p.causal_offset);
  if (n0 >= klen) i_first = p.nq;  // every key of the tile is masked: dK = dV = 0

  for (int hq = hk * group; hq < (hk + 1) * group; ++hq) {
    const T* q = (const T*)p.q + b * p.q_batch + hq * p.q_head;
    const T* dO = (const T*)p.do_ + b * p.o_batch + hq * p.o_head;
    const T* L = (const T*)p.lse + ((int64_t)b * p.h + hq) * p.nq;
    const double* delta = (const double*)p.delta + ((int64_t)b * p.h + hq) * p.nq;
    const T* lres = p.lres ? (const T*)p.lres + ((int64_t)b * p.h + hq) * p.nq : nullptr;
    for (int m0 = i_first / BM * BM; m0 < p.nq; m0 += BM) {
      __syncthreads();  // the previous tile's readers of sQ, sdO, sPT, sdST are done
      fg_load_tile<T, BM, D, LD, THREADS>(sQ, q + (int64_t)m0 * p.q_row, p.q_row, 0, p.nq - m0, p.d);
      fg_load_tile<T, BM, D, LD, THREADS>(sdO, dO + (int64_t)m0 * p.o_row, p.o_row, 0, p.nq - m0, p.d);
      for (int r = threadIdx.x; r < BM; r += THREADS) {
        const bool in = m0 + r < p.nq;
        sL[r] = in ? L[m0 + r] : T(0);
        sDelta[r] = in ? delta[m0 + r] : 0.0;
        sLres[r] = in && lres ? lres[m0 + r] : T(0);
      }
      __syncthreads();

      // S^T = K Q^T and dP^T = V dO^T for this tile pair, in registers.
      T st[RN][SQ];
      double dpt[RN][SQ];
      fg_bwd_s_dp<T, RN, SQ, D, LD, TR, TC>(st, dpt, sK, sQ, sV, sdO, tr, tc);
#pragma unroll
      for (int c = 0; c < SQ; ++c) {
        const int qi = tc + c * TC, i = m0 + qi;
        const int lim = i < p.nq ? fg_key_limit(p, b, i) : 0;
        const T Li = sL[qi], Lri = sLres[qi];
        const double di = sDelta[qi];
#pragma unroll
        for (int a = 0; a < RN; ++a) {
          const int kr = tr + a * TR;
          const bool seen = n0 + kr < lim;
          const T pij = seen ? fg_exp((st[a][c] * scale - Li) - Lri) : T(0);
          sPT[kr * LDT + qi] = pij;
          sdST[kr * LDT + qi] = seen ? (T)((double)pij * (dpt[a][c] - di) * (double)scale) : T(0);
        }
      }
      __syncthreads();

      // dV += P^T dO and dK += (scale dS)^T Q.
      fg_mm_ab<T, RN, DC, BM, LDT, LD>(dv, sPT, tr, TR, sdO, tc, TC);
      fg_mm_ab<T, RN, DC, BM, LDT, LD>(dk, sdST, tr, TR, sQ, tc, TC);
    }
  }

  T* dK = (T*)p.dk + b * p.k_batch + hk * p.k_head;
  T* dV = (T*)p.dv + b * p.v_batch + hk * p.v_head;
#pragma unroll
  for (int a = 0; a < RN; ++a) {
    const int j = n0 + tr + a * TR;
    if (j >= p.nk) continue;
    const bool padded = j >= klen;  // exactly 0, even where a visible row's q or dO is not finite
#pragma unroll
    for (int c = 0; c < DC; ++c) {
      const int col = tc + c * TC;
      if (col < p.d) {
        dK[(int64_t)j * p.k_row + col] = padded ? T(0) : dk[a][c];
        dV[(int64_t)j * p.v_row + col] = padded ? T(0) : dv[a][c];
      }
    }
  }
}

// fg_attn_bwd_dq: grid (ceil(Nq/BM), H, B), TR*TC threads. Thread (tr, tc) owns query rows
// tr + a*TR (a < BM/TR), key columns tc + c*TC of the score tile (c < BN/TC) and head-dim columns
// tc + c*TC of dQ (c < D/TC). Shared memory: Q, dO [BM][D+1], K, V [BN][D+1], dS [BM][BN+1].
template <typename T, int D, int BM, int BN, int TR, int TC> __device__ void fg_attn_bwd_dq(const fg_attn_params& p) {
  constexpr int THREADS = TR * TC, RM = BM / TR, SC = BN / TC, DC = D / TC;
  constexpr int LD = D + 1, LDS = BN + 1;
  static_assert(RM * TR == BM && SC * TC == BN && DC * TC == D, "tile sizes must divide");
  constexpr unsigned SMEM = (2 * BM * LD + 2 * BN * LD + BM * LDS) * sizeof(T);
  if (fg_dynamic_smem() < SMEM) __trap();
  T* sQ = (T*)fg_smem;
  T* sdO = sQ + BM * LD;
  T* sK = sdO + BM * LD;
  T* sV = sK + BN * LD;
  T* sdS = sV + BN * LD;

  const int m0 = blockIdx.x * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int tr = threadIdx.x / TC, tc = threadIdx.x % TC;
  const T scale = (T)p.scale;
  const T* q = (const T*)p.q + b * p.q_batch + h * p.q_head;
  const T* dO = (const T*)p.do_ + b * p.o_batch + h * p.o_head;
  const T* k = (const T*)p.k + b * p.k_batch + hk * p.k_head;
  const T* v = (const T*)p.v + b * p.v_batch + hk * p.v_head;
  const T* L = (const T*)p.lse + ((int64_t)b * p.h + h) * p.nq;
  const double* delta = (const double*)p.delta + ((int64_t)b * p.h + h) * p.nq;
  fg_load_tile<T, BM, D, LD, THREADS>(sQ, q + (int64_t)m0 * p.q_row, p.q_row, 0, p.nq - m0, p.d);
  fg_load_tile<T, BM, D, LD, THREADS>(sdO, dO + (int64_t)m0 * p.o_row, p.o_row, 0, p.nq - m0, p.d);

  int lim[RM];
  T Li[RM], Lri[RM];
  double di[RM];
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const int i = m0 + tr + a * TR;
    const bool in = i < p.nq;
    lim[a] = in ? fg_key_limit(p, b, i) : 0;
    Li[a] = in ? L[i] : T(0);
    di[a] = in ? delta[i] : 0.0;
    Lri[a] = in && p.lres ? ((const T*)p.lres)[((int64_t)b * p.h + h) * p.nq + i] : T(0);
  }
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);

  T dq[RM][DC];
  fg_zero(dq);
  for (int n0 = 0; n0 < kv_end; n0 += BN) {
    __syncthreads();  // the previous tile's readers of sK and sdS are done
    // Keys from kv_end on (padding, keys beyond every row's causal reach) are zero-filled.
    fg_load_tile<T, BN, D, LD, THREADS>(sK, k + (int64_t)n0 * p.k_row, p.k_row, 0, kv_end - n0, p.d);
    fg_load_tile<T, BN, D, LD, THREADS>(sV, v + (int64_t)n0 * p.v_row, p.v_row, 0, kv_end - n0, p.d);
    __syncthreads();

    T s[RM][SC];
    double dp[RM][SC];
    fg_bwd_s_dp<T, RM, SC, D, LD, TR, TC>(s, dp, sQ, sK, sdO, sV, tr, tc);
#pragma unroll
    for (int a = 0; a < RM; ++a)
#pragma unroll
      for (int c = 0; c < SC; ++c) {
        const int kc = tc + c * TC;
        const bool seen = n0 + kc < lim[a];
        const T pij = seen ? fg_exp((s[a][c] * scale - Li[a]) - Lri[a]) : T(0);
        sdS[(tr + a * TR) * LDS + kc] = seen ? (T)((double)pij * (dp[a][c] - di[a]) * (double)scale) : T(0);
      }
    __syncthreads();

    fg_mm_ab<T, RM, DC, BN, LDS, LD>(dq, sdS, tr, TR, sK, tc, TC);
  }

  T* dQ = (T*)p.dq + b * p.q_batch + h * p.q_head;
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const int i = m0 + tr + a * TR;
    if (i >= p.nq) continue;
#pragma unroll
    for (int c = 0; c < DC; ++c) {
      const int col = tc + c * TC;
      if (col < p.d) dQ[(int64_t)i * p.q_row + col] = dq[a][c];
    }
  }
}

// ---- entry points (names encode the template parameters; see cuda/launch_gpu.go) ----------

#define FG_BWD(KIND, T, SUF, D, BM, BN, TR, TC)                                                  \
  extern "C" __global__ void __launch_bounds__(TR * TC)                                           \
      fg_attn_bwd_##KIND##_##SUF##_d##D##_m##BM##_n##BN##_r##TR##_c##TC(const fg_attn_params p) { \
    fg_attn_bwd_##KIND<T, D, BM, BN, TR, TC>(p);                                                  \
  }
FG_BWD(dkdv, float, f32, 32, 32, 32, 8, 16)
FG_BWD(dkdv, float, f32, 64, 32, 32, 8, 16)
FG_BWD(dkdv, float, f32, 128, 32, 32, 8, 16)
FG_BWD(dkdv, float, f32, 256, 32, 32, 8, 32)
FG_BWD(dkdv, double, f64, 32, 32, 32, 8, 16)
FG_BWD(dkdv, double, f64, 64, 32, 32, 8, 16)
FG_BWD(dkdv, double, f64, 128, 32, 16, 8, 16)
FG_BWD(dkdv, double, f64, 256, 16, 16, 16, 16)
FG_BWD(dq, float, f32, 32, 64, 32, 16, 8)
FG_BWD(dq, float, f32, 64, 64, 32, 16, 8)
FG_BWD(dq, float, f32, 128, 32, 32, 8, 16)
FG_BWD(dq, float, f32, 256, 32, 32, 8, 32)
FG_BWD(dq, double, f64, 32, 32, 32, 8, 16)
FG_BWD(dq, double, f64, 64, 32, 32, 8, 16)
FG_BWD(dq, double, f64, 128, 32, 16, 8, 16)
FG_BWD(dq, double, f64, 256, 16, 16, 16, 16)
