// common.cuh: helpers shared by the kernels: numeric helpers that dispatch on float/double,
// warp reductions, tile loads from global to shared memory, and the two register-tile matrix
// products every attention kernel is made of.
#ifndef FLASHGORGON_COMMON_CUH
#define FLASHGORGON_COMMON_CUH

#include "params.h"

// Shared memory of every kernel is one dynamic block; 16-byte aligned so doubles are aligned.
extern __shared__ __align__(16) unsigned char fg_smem[];

template <typename T> __device__ __forceinline__ T fg_neg_inf();
template <> __device__ __forceinline__ float fg_neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double fg_neg_inf<double>() { return __longlong_as_double(0xfff0000000000000ULL); }

// Full-precision exp (no fast-math intrinsics: the results are compared with float64
// references at tight tolerances).
__device__ __forceinline__ float fg_exp(float x) { return expf(x); }
__device__ __forceinline__ double fg_exp(double x) { return exp(x); }

// fg_is_neg_inf reports x == -Inf.
template <typename T> __device__ __forceinline__ bool fg_is_neg_inf(T x) { return x == fg_neg_inf<T>(); }

// Butterfly reductions over groups of W consecutive lanes (W a power of two, at most 32). Every
// lane of the group ends with the same result, combined in the same fixed order on every run.
template <int W, typename T> __device__ __forceinline__ T fg_group_max(T x) {
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
template <int W, typename T> __device__ __forceinline__ T fg_group_sum(T x) {
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

// fg_dynamic_smem returns the dynamic shared memory size of the launch; kernels trap when the
// launcher gave less than their tiles need, so a mismatch between the Go launch table and the
// kernel's layout is a clean launch error, never a silent overrun.
__device__ __forceinline__ unsigned fg_dynamic_smem() {
  unsigned r;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

// fg_load_tile copies rows [row0, row0+ROWS) x columns [0, COLS) of a row-major global matrix
// (row stride ld_g, valid rows < nrows, valid columns < ncols) into shared memory with row
// stride LDS, writing zeros outside the valid region. Consecutive threads read consecutive
// columns, so each row is read coalesced.
template <typename T, int ROWS, int COLS, int LDS, int THREADS>
__device__ __forceinline__ void fg_load_tile(T* __restrict__ s, const T* __restrict__ g, int64_t ld_g, int row0,
                                             int nrows, int ncols) {
  for (int idx = threadIdx.x; idx < ROWS * COLS; idx += THREADS) {
    const int r = idx / COLS, c = idx % COLS;
    const int gr = row0 + r;
    s[r * LDS + c] = (gr < nrows && c < ncols) ? g[(int64_t)gr * ld_g + c] : T(0);
  }
}

// fg_mm accumulates acc[i][c] += sum_k A[(r0 + i*RS)*LDA + k] * B_kc for k < K, a register
// tile of a product with A stored row-major along k in shared memory, and B either stored like
// A (BT: B_kc = B[(c0 + c*CS)*LDB + k], the tile of A*B^T: rows of A dotted with rows of B) or
// row-major along its columns (B_kc = B[k*LDB + c0 + c*CS], the tile of A*B). Threads own
// interleaved rows and columns. The accumulator type Acc may be wider than T (double sums of
// float products).
template <bool BT, typename T, int RM, int CN, int K, int LDA, int LDB, typename Acc>
__device__ __forceinline__ void fg_mm(Acc (&acc)[RM][CN], const T* __restrict__ A, int r0, int RS,
                                      const T* __restrict__ B, int c0, int CS) {
#pragma unroll 4
  for (int k = 0; k < K; ++k) {
    Acc a[RM], b[CN];
#pragma unroll
    for (int i = 0; i < RM; ++i) a[i] = A[(r0 + i * RS) * LDA + k];
#pragma unroll
    for (int c = 0; c < CN; ++c) b[c] = BT ? B[(c0 + c * CS) * LDB + k] : B[k * LDB + c0 + c * CS];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int c = 0; c < CN; ++c) acc[i][c] = fma(a[i], b[c], acc[i][c]);
  }
}

// fg_mm_abt: the tile of A*B^T (fg_mm with BT).
template <typename T, int RM, int CN, int K, int LDA, int LDB, typename Acc>
__device__ __forceinline__ void fg_mm_abt(Acc (&acc)[RM][CN], const T* __restrict__ A, int r0, int RS,
                                          const T* __restrict__ B, int c0, int CS) {
  fg_mm<true, T, RM, CN, K, LDA, LDB>(acc, A, r0, RS, B, c0, CS);
}

// fg_mm_ab: the tile of A*B (fg_mm without BT), accumulated in T.
template <typename T, int RM, int CN, int K, int LDA, int LDB>
__device__ __forceinline__ void fg_mm_ab(T (&acc)[RM][CN], const T* __restrict__ A, int r0, int RS,
                                         const T* __restrict__ B, int c0, int CS) {
  fg_mm<false, T, RM, CN, K, LDA, LDB>(acc, A, r0, RS, B, c0, CS);
}

template <typename Acc, int RM, int CN> __device__ __forceinline__ void fg_zero(Acc (&acc)[RM][CN]) {
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int c = 0; c < CN; ++c) acc[i][c] = Acc(0);
}

// fg_row_do_o returns the backward's row term delta = sum_c dO[row, c] O[row, c] of query row
// `row` ((b H + h) Nq + i), summed by a warp: lane `lane` takes columns lane, lane + 32, ... in
// double, then fg_group_sum combines the lanes in a fixed order (bit-reproducible). Every lane
// of the warp must call it; each gets the sum.
template <typename T> __device__ __forceinline__ double fg_row_do_o(const fg_attn_params& p, int64_t row, int lane) {
  const int i = (int)(row % p.nq), h = (int)(row / p.nq % p.h), b = (int)(row / p.nq / p.h);
  const int64_t off = b * p.o_batch + h * p.o_head + (int64_t)i * p.o_row;
  const T* o = (const T*)p.o + off;
  const T* dO = (const T*)p.do_ + off;
  double s = 0;
  for (int c = lane; c < p.d; c += 32) s = fma((double)dO[c], (double)o[c], s);
  return fg_group_sum<32>(s);
}

// fg_key_length is batch b's key length: Nk, or its entry of key_lengths where it is shorter
// (keys from it on are padding, never read).
__device__ __forceinline__ int fg_key_length(const fg_attn_params& p, int b) {
  int lim = p.nk;
  if (p.key_lengths) {
    const int kl = ((const int32_t*)p.key_lengths)[b];
    lim = kl < lim ? kl : lim;
  }
  return lim;
}

// fg_key_limit returns how many leading keys query row i of batch b sees: keys j < limit are
// visible. Both masks (key lengths, causal) keep a prefix of the keys. This is the device copy
// of the Go definition, internal/attnspec's KeyLimit (j < key length and, causal,
// j <= i + Nk - Nq, with causal_offset = Nk - Nq set by the launcher); the device tests compare
// every kernel with float64 references that use attnspec's rule.
__device__ __forceinline__ int fg_key_limit(const fg_attn_params& p, int b, int i) {
  int lim = fg_key_length(p, b);
  if (p.causal) {
    const int c = i + p.causal_offset + 1;
    lim = c < lim ? c : lim;
  }
  return lim > 0 ? lim : 0;
}

// ---- L2 eviction priorities (sm_80 on): a policy from createpolicy, given to a load, store or
// bulk copy with .L2::cache_hint. The Hopper forward streams Q, K and V in float32 (each row
// read once) and O (written once) past the bfloat16 tiles it writes and reads again soon:
// marking the streams evict_first leaves L2 to the tiles.

// fg_l2_evict_first is a policy under which the lines an access touches go first.
__device__ __forceinline__ uint64_t fg_l2_evict_first() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
// fg_ld4 loads 4 floats (16-byte aligned); with HINT through L2 under policy pol, not into L1.
template <bool HINT = false> __device__ __forceinline__ float4 fg_ld4(const float* a, uint64_t pol = 0) {
  if constexpr (!HINT) return *(const float4*)a;
  float4 x;
  asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=f"(x.x), "=f"(x.y), "=f"(x.z), "=f"(x.w)
               : "l"(a), "l"(pol));
  return x;
}
// fg_st2 stores 2 floats (8-byte aligned); with HINT under policy pol.
template <bool HINT = false> __device__ __forceinline__ void fg_st2(float2* a, float2 v, uint64_t pol = 0) {
  if constexpr (!HINT) {
    *a = v;
  } else {
    asm volatile("st.global.L2::cache_hint.v2.f32 [%0], {%1, %2}, %3;\n" ::"l"(a), "f"(v.x), "f"(v.y), "l"(pol) : "memory");
  }
}

#endif
