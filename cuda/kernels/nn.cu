// nn.cu: the kernels of nn's layers, loss and optimizer on device buffers (see nn_params.h for
// each kernel's formula). Every kernel comes in float (_f32) and double (_f64). None uses
// floating-point atomics: every sum is taken in a fixed order (per-thread loops in index order,
// then butterfly or shared-memory trees of fixed shape), so results are the same bits on every
// run. Statistics (norm moments, log-sum-exp, column and squared sums) are accumulated in
// double for both element types, as nn does on the CPU.
#include "common.cuh"
#include "nn_params.h"

#define FG_EW_THREADS 256

// Grid-stride loop over [0, n).
#define FG_FOR_EACH(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__device__ __forceinline__ double fg_nan() { return __longlong_as_double(0x7ff8000000000000ULL); }
__device__ __forceinline__ double fg_inf() { return __longlong_as_double(0x7ff0000000000000ULL); }

// FgVec16<T>::type is the 16-byte vector of T (four floats, two doubles), which the kernels
// that move rows load and store at once where sizes and addresses allow.
template <typename T> struct FgVec16;
template <> struct FgVec16<float> { typedef float4 type; };
template <> struct FgVec16<double> { typedef double2 type; };

// ---- elementwise -------------------------------------------------------------------------------

template <typename T> __device__ void fg_ew(const fg_ew_params& p) {
  const T* a = (const T*)p.a;
  const T* b = (const T*)p.b;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.n) { y[i] = p.op == FG_EW_MUL ? a[i] * b[i] : a[i] + b[i]; }
}

// GELU, tanh form, as nn/gelu.go: gelu(x) = x·σ(2u), u = √(2/π)(x + 0.044715x³), and
// gelu'(x) = s + 2x·s(1 − s)·√(2/π)(1 + 3·0.044715x²), s = σ(2u); 1 − s is taken as s·e with
// e = exp(−2u), which does not cancel as s → 1.
template <typename T> __device__ __forceinline__ T fg_gelu(T x) {
  const T k2 = T(2 * 0.7978845608028654), c = T(0.044715);
  const T e = fg_exp(-k2 * (x + c * x * x * x));
  return x / (T(1) + e);
}
template <typename T> __device__ __forceinline__ T fg_gelu_prime(T x) {
  const T k2 = T(2 * 0.7978845608028654), c = T(0.044715), k3 = T(0.7978845608028654 * 2 * 3 * 0.044715);
  const T e = fg_exp(-k2 * (x + c * x * x * x));
  const T s = T(1) / (T(1) + e);
  const T se = isinf(e) ? T(1) : s * e;  // e/(1+e) -> 1 (s·e would be 0·Inf)
  return s + s * se * x * (k2 + k3 * x * x);
}

template <typename T> __device__ void fg_copy(const fg_ew_params& p) {
  const T* x = (const T*)p.a;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.n) { y[i] = x[i]; }
}

template <typename T> __device__ void fg_gelu_fwd(const fg_ew_params& p) {
  const T* x = (const T*)p.a;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.n) { y[i] = fg_gelu(x[i]); }
}

template <typename T> __device__ void fg_gelu_bwd(const fg_ew_params& p) {
  const T* x = (const T*)p.a;
  const T* g = (const T*)p.b;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.n) { y[i] = g[i] * fg_gelu_prime(x[i]); }
}

template <typename T> __device__ void fg_affine(const fg_ew_params& p) {
  const T* x = (const T*)p.a;
  const T* gamma = (const T*)p.b;
  const T* beta = (const T*)p.c;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.n) {
    const int64_t j = i % p.d;
    T v = x[i];
    if (gamma) v = v * gamma[j];
    if (beta) v = v + beta[j];
    y[i] = v;
  }
}

// fg_ew_vec, fg_gelu_fwd_vec, fg_gelu_bwd_vec: fg_ew, fg_gelu_fwd and fg_gelu_bwd on 16-byte
// vectors (n a multiple of their length, the buffers aligned to 16 bytes) with 32-bit indices
// (fewer than 2^31 elements): the same operation on each element.
template <typename T, typename F> __device__ __forceinline__ void fg_lanes(const fg_ew_params& p, F f) {
  typedef typename FgVec16<T>::type V;
  constexpr int W = sizeof(V) / sizeof(T);
  const uint32_t n = (uint32_t)(p.n / W);
  const V* a = (const V*)p.a;
  const V* b = (const V*)p.b;
  V* y = (V*)p.y;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    V u = a[i], v = b ? b[i] : u;
    T* ue = reinterpret_cast<T*>(&u);
    const T* ve = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int k = 0; k < W; ++k) ue[k] = f(ue[k], ve[k]);
    y[i] = u;
  }
}
template <typename T> __device__ void fg_ew_vec(const fg_ew_params& p) {
  if (p.op == FG_EW_MUL)
    fg_lanes<T>(p, [](T a, T b) { return a * b; });
  else
    fg_lanes<T>(p, [](T a, T b) { return a + b; });
}
template <typename T> __device__ void fg_copy_vec(const fg_ew_params& p) {
  fg_lanes<T>(p, [](T x, T) { return x; });
}
template <typename T> __device__ void fg_gelu_fwd_vec(const fg_ew_params& p) {
  fg_lanes<T>(p, [](T x, T) { return fg_gelu(x); });
}
template <typename T> __device__ void fg_gelu_bwd_vec(const fg_ew_params& p) {
  fg_lanes<T>(p, [](T x, T g) { return g * fg_gelu_prime(x); });
}

// fg_affine_vec is fg_affine on 16-byte vectors (d a multiple of their length, the buffers
// aligned to 16 bytes) with 32-bit indices (fewer than 2^31 elements): the same operations on
// each element.
template <typename T> __device__ void fg_affine_vec(const fg_ew_params& p) {
  typedef typename FgVec16<T>::type V;
  constexpr int W = sizeof(V) / sizeof(T);
  const uint32_t n = (uint32_t)(p.n / W), d = (uint32_t)(p.d / W);
  const V* x = (const V*)p.a;
  const V* gamma = (const V*)p.b;
  const V* beta = (const V*)p.c;
  V* y = (V*)p.y;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t j = i % d;
    V v = x[i];
    T* e = reinterpret_cast<T*>(&v);
    if (gamma) {
      const V g = gamma[j];
      const T* ge = reinterpret_cast<const T*>(&g);
#pragma unroll
      for (int k = 0; k < W; ++k) e[k] = e[k] * ge[k];
    }
    if (beta) {
      const V b = beta[j];
      const T* be = reinterpret_cast<const T*>(&b);
#pragma unroll
      for (int k = 0; k < W; ++k) e[k] = e[k] + be[k];
    }
    y[i] = v;
  }
}

// ---- Philox-4x32-10 and dropout ------------------------------------------------------------------

// fg_philox returns the four 32-bit words of Philox-4x32-10 (Salmon et al., Random123) at
// counter ctr under key.
__device__ __forceinline__ uint4 fg_philox(uint4 ctr, uint2 key) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key.x += 0x9E3779B9u;
      key.y += 0xBB67AE85u;
    }
    const uint32_t hi0 = __umulhi(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
  }
  return ctr;
}

// fg_dropout_word returns the 32 random bits of element i: word i mod 4 of Philox at counter
// (offset + i/4) (low and high halves in words 0 and 1) under key seed (low, high).
__device__ __forceinline__ uint32_t fg_dropout_word(uint64_t seed, uint64_t offset, int64_t i) {
  const uint64_t c = offset + (uint64_t)i / 4;
  const uint4 r = fg_philox(make_uint4((uint32_t)c, (uint32_t)(c >> 32), 0, 0), make_uint2((uint32_t)seed, (uint32_t)(seed >> 32)));
  switch (i & 3) {
    case 0: return r.x;
    case 1: return r.y;
    case 2: return r.z;
  }
  return r.w;
}

// Element i is kept when u = word·2⁻³² ≥ p, and then scaled by (T)(1/(1 − p)).
template <typename T> __device__ void fg_dropout(const fg_ew_params& p) {
  const T* x = (const T*)p.a;
  T* y = (T*)p.y;
  const T keep = T(1.0 / (1.0 - p.alpha));
  FG_FOR_EACH(i, p.n) {
    const double u = fg_dropout_word(p.seed, p.offset, i) * (1.0 / 4294967296.0);
    const T m = u >= p.alpha ? keep : T(0);
    y[i] = x ? x[i] * m : m;
  }
}

// Gradient clipping: y ← (T)(y·(alpha/norm)) when alpha > 0 and norm > alpha is finite.
template <typename T> __device__ void fg_clip(const fg_ew_params& p) {
  const double norm = ((const double*)p.b)[0];
  if (!(p.alpha > 0) || !(norm > p.alpha) || isinf(norm)) return;
  const double scale = p.alpha / norm;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.n) { y[i] = T((double)y[i] * scale); }
}

// ---- embedding ---------------------------------------------------------------------------------

// Gather: a thread per element of y. An index outside [0, v) gives a NaN row (the launchers'
// callers check indices on the host; the kernel never reads outside the table).
template <typename T> __device__ void fg_gather(const fg_embed_params& p) {
  const T* table = (const T*)p.table;
  const int32_t* idx = (const int32_t*)p.idx;
  T* y = (T*)p.y;
  FG_FOR_EACH(i, p.m * p.d) {
    const int64_t m = i / p.d, j = i % p.d;
    const int32_t t = idx[m];
    y[i] = (t >= 0 && t < p.v) ? table[(int64_t)t * p.d + j] : T(fg_nan());
  }
}

// Scatter-add: a block per table row v. The block reads the indices in tiles of
// FG_EW_THREADS and compacts the positions m of the tile whose index is v, in increasing
// order, into shared memory (a ballot per warp and a prefix over the warps); then every thread
// adds, for its columns, those rows of y in that order. So each entry is a sum over m in
// increasing order, in T, as nn's CPU scatterAdd, with no atomics.
#define FG_SCATTER_COLS 4
template <typename T> __device__ void fg_scatter(const fg_embed_params& p) {
  __shared__ int64_t s_match[FG_EW_THREADS];
  __shared__ int s_warp[FG_EW_THREADS / 32];
  T* table = (T*)p.table;
  const int32_t* idx = (const int32_t*)p.idx;
  const T* g = (const T*)p.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  for (int64_t v = blockIdx.x; v < p.v; v += gridDim.x) {
    for (int64_t c0 = 0; c0 < p.d; c0 += FG_EW_THREADS * FG_SCATTER_COLS) {
      T acc[FG_SCATTER_COLS];
#pragma unroll
      for (int c = 0; c < FG_SCATTER_COLS; ++c) {
        const int64_t j = c0 + c * FG_EW_THREADS + threadIdx.x;
        acc[c] = (p.accumulate && j < p.d) ? table[v * p.d + j] : T(0);
      }
      for (int64_t base = 0; base < p.m; base += FG_EW_THREADS) {
        const int64_t mi = base + threadIdx.x;
        const bool hit = mi < p.m && idx[mi] == v;
        const unsigned bal = __ballot_sync(0xffffffffu, hit);
        __syncthreads();  // the previous tile's matches are consumed
        if (lane == 0) s_warp[warp] = __popc(bal);
        __syncthreads();
        int off = 0, total = 0;
#pragma unroll
        for (int w = 0; w < FG_EW_THREADS / 32; ++w) {
          off += w < warp ? s_warp[w] : 0;
          total += s_warp[w];
        }
        if (hit) s_match[off + __popc(bal & ((1u << lane) - 1u))] = mi;
        __syncthreads();
        for (int k = 0; k < total; ++k) {
          const T* gr = g + s_match[k] * p.d;
#pragma unroll
          for (int c = 0; c < FG_SCATTER_COLS; ++c) {
            const int64_t j = c0 + c * FG_EW_THREADS + threadIdx.x;
            if (j < p.d) acc[c] += gr[j];
          }
        }
      }
#pragma unroll
      for (int c = 0; c < FG_SCATTER_COLS; ++c) {
        const int64_t j = c0 + c * FG_EW_THREADS + threadIdx.x;
        if (j < p.d) table[v * p.d + j] = acc[c];
      }
    }
  }
}

// ---- attention heads -----------------------------------------------------------------------------

// fg_heads_body moves vectors V of W elements T (d, c, off counted in vectors), a thread per
// vector of y, with 32-bit indices: the split reads d-long runs of x's rows and writes y
// contiguously; the merge writes y's rows contiguously, zeros outside the heads' columns, so
// that it needs no memset before it.
template <typename T, typename V> __device__ void fg_heads_body(const fg_heads_params& p) {
  constexpr int W = sizeof(V) / sizeof(T);
  const uint32_t D = (uint32_t)(p.d / W), C = (uint32_t)(p.c / W), off = (uint32_t)(p.off / W);
  const uint32_t H = (uint32_t)p.h, N = (uint32_t)p.n, HD = H * D;
  const V* x = (const V*)p.x;
  V* y = (V*)p.y;
  const uint32_t stride = gridDim.x * blockDim.x;
  if (p.split) {
    const uint32_t n = (uint32_t)p.b * H * N * D;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
      const uint32_t j = i % D, r = i / D;  // r = (bi·h + hi)·n + li
      const uint32_t li = r % N, bh = r / N;
      const uint32_t hi = bh % H, bi = bh / H;
      y[i] = x[(bi * N + li) * C + off + hi * D + j];
    }
    return;
  }
  const uint32_t n = (uint32_t)p.b * N * C;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint32_t c = i % C, r = i / C;  // r = bi·n + li
    V v{};
    if (c >= off && c < off + HD) {
      const uint32_t k = c - off, hi = k / D, j = k % D;
      const uint32_t bi = r / N, li = r % N;
      v = x[((bi * H + hi) * N + li) * D + j];
    }
    y[i] = v;
  }
}
template <typename T> __device__ void fg_heads(const fg_heads_params& p) { fg_heads_body<T, typename FgVec16<T>::type>(p); }
template <typename T> __device__ void fg_heads1(const fg_heads_params& p) { fg_heads_body<T, T>(p); }

// ---- LayerNorm / RMSNorm -------------------------------------------------------------------------

// A warp per row; each lane walks the row's columns lane, lane+32, … in order and the lanes'
// sums are combined by a butterfly, in double.
#define FG_NORM_WARPS 4

template <typename T> __device__ void fg_norm_fwd(const fg_norm_params& p) {
  const int lane = threadIdx.x & 31;
  const int64_t r = (int64_t)blockIdx.x * FG_NORM_WARPS + threadIdx.x / 32;
  if (r >= p.rows) return;
  const T* x = (const T*)p.x + r * p.d;
  const double n = (double)p.d;
  double mu = 0;
  if (p.center) {
    for (int64_t j = lane; j < p.d; j += 32) mu += (double)x[j];
    mu = fg_group_sum<32>(mu) / n;
  }
  double ss = 0;
  for (int64_t j = lane; j < p.d; j += 32) {
    const double c = (double)x[j] - mu;
    ss += c * c;
  }
  ss = fg_group_sum<32>(ss);
  const double rstd = 1.0 / sqrt(ss / n + p.eps);
  if (lane == 0) {
    ((double*)p.mean)[r] = mu;
    ((double*)p.rstd)[r] = rstd;
  }
  if (!p.y) return;
  const T* gamma = (const T*)p.gamma;
  const T* beta = (const T*)p.beta;
  T* y = (T*)p.y + r * p.d;
  for (int64_t j = lane; j < p.d; j += 32) {
    double v = ((double)x[j] - mu) * rstd;
    if (gamma) v *= (double)gamma[j];
    if (beta) v += (double)beta[j];
    y[j] = T(v);
  }
}

template <typename T> __device__ void fg_norm_bwd(const fg_norm_params& p) {
  const int lane = threadIdx.x & 31;
  const int64_t r = (int64_t)blockIdx.x * FG_NORM_WARPS + threadIdx.x / 32;
  if (r >= p.rows) return;
  const T* x = (const T*)p.x + r * p.d;
  const T* dy = (const T*)p.dy + r * p.d;
  const T* gamma = (const T*)p.gamma;
  T* dx = (T*)p.dx + r * p.d;
  const double mu = ((const double*)p.mean)[r], rstd = ((const double*)p.rstd)[r];
  double sg = 0, sgx = 0;
  for (int64_t j = lane; j < p.d; j += 32) {
    double g = (double)dy[j];
    if (gamma) g *= (double)gamma[j];
    sg += g;
    sgx += g * ((double)x[j] - mu) * rstd;
  }
  sg = fg_group_sum<32>(sg);
  sgx = fg_group_sum<32>(sgx);
  const double n = (double)p.d;
  const double mg = p.center ? sg / n : 0.0, mgx = sgx / n;
  for (int64_t j = lane; j < p.d; j += 32) {
    double g = (double)dy[j];
    if (gamma) g *= (double)gamma[j];
    const double xh = ((double)x[j] - mu) * rstd;
    dx[j] = T(rstd * (g - mg - xh * mgx));
  }
}

// ---- column sums ---------------------------------------------------------------------------------

// Stage 1: a block of 32 × 8 threads per (32 columns, chunk of rows); thread (tx, ty) sums
// rows ty, ty+8, … of the chunk for column tx, then thread ty = 0 adds the 8 partial sums in
// order.
#define FG_COLSUM_TY 8
template <typename T> __device__ void fg_colsum_partial(const fg_colsum_params& p) {
  __shared__ double s1[FG_COLSUM_TY][32], s2[FG_COLSUM_TY][32];
  const int tx = threadIdx.x & 31, ty = threadIdx.x / 32;
  const int64_t j = (int64_t)blockIdx.x * 32 + tx;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * p.chunk_rows, r1 = min(p.rows, r0 + p.chunk_rows);
  const T* g = (const T*)p.g;
  const T* x = (const T*)p.x;
  double a1 = 0, a2 = 0;
  if (j < p.d) {
    for (int64_t r = r0 + ty; r < r1; r += FG_COLSUM_TY) {
      const double gv = (double)g[r * p.d + j];
      switch (p.mode) {
        case 0:
          a1 += gv;
          break;
        case 1:
          a1 += gv * (double)x[r * p.d + j];
          break;
        default:
          a1 += gv * (((double)x[r * p.d + j] - ((const double*)p.mean)[r]) * ((const double*)p.rstd)[r]);
          a2 += gv;
      }
    }
  }
  s1[ty][tx] = a1;
  s2[ty][tx] = a2;
  __syncthreads();
  if (ty != 0 || j >= p.d) return;
  for (int k = 1; k < FG_COLSUM_TY; ++k) {
    a1 += s1[k][tx];
    a2 += s2[k][tx];
  }
  double* work = (double*)p.work;
  work[c * p.d + j] = a1;
  if (p.mode == 2) work[(p.nchunks + c) * p.d + j] = a2;
}

// Stage 1 on 16-byte vectors (modes 0 and 1; d a multiple of the vector's W elements, g and x
// aligned to 16 bytes, fewer than 2^31 elements): a block of 32 × 8 threads per (32 vectors of
// columns, chunk of rows), each thread summing W columns over rows ty, ty+8, … of the chunk;
// the same order of additions per column as fg_colsum_partial, so the same bits.
template <typename T> __device__ void fg_colsum_partial_vec(const fg_colsum_params& p) {
  typedef typename FgVec16<T>::type V;
  constexpr int W = sizeof(V) / sizeof(T);
  __shared__ double s1[FG_COLSUM_TY][32 * W];
  const int tx = threadIdx.x & 31, ty = threadIdx.x / 32;
  const uint32_t dv = (uint32_t)(p.d / W), jv = blockIdx.x * 32 + tx;
  const uint32_t c = blockIdx.y;
  const uint32_t r0 = c * (uint32_t)p.chunk_rows, r1 = (uint32_t)min(p.rows, (int64_t)r0 + p.chunk_rows);
  const V* g = (const V*)p.g;
  const V* x = (const V*)p.x;
  double a[W];
#pragma unroll
  for (int k = 0; k < W; ++k) a[k] = 0;
  if (jv < dv) {
    for (uint32_t r = r0 + ty; r < r1; r += FG_COLSUM_TY) {
      const V gv = g[r * dv + jv];
      const T* ge = reinterpret_cast<const T*>(&gv);
      if (p.mode == 1) {
        const V xv = x[r * dv + jv];
        const T* xe = reinterpret_cast<const T*>(&xv);
#pragma unroll
        for (int k = 0; k < W; ++k) a[k] += (double)ge[k] * (double)xe[k];
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) a[k] += (double)ge[k];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < W; ++k) s1[ty][tx * W + k] = a[k];
  __syncthreads();
  if (ty != 0 || jv >= dv) return;
  for (int q = 1; q < FG_COLSUM_TY; ++q) {
#pragma unroll
    for (int k = 0; k < W; ++k) a[k] += s1[q][tx * W + k];
  }
  double* work = (double*)p.work + (int64_t)c * p.d + (int64_t)jv * W;
#pragma unroll
  for (int k = 0; k < W; ++k) work[k] = a[k];
}

// Stage 2: a block of 32 × 8 threads per 32 columns; thread (tx, ty) adds the sums of chunks
// ty, ty+8, … in order, then thread ty = 0 adds the 8 results in order (a fixed order, so the
// same bits on every run), with loads of 8 chunks in flight rather than one chain of them.
template <typename T> __device__ void fg_colsum_final(const fg_colsum_params& p) {
  __shared__ double s[FG_COLSUM_TY][32];
  const int tx = threadIdx.x & 31, ty = threadIdx.x / 32;
  const int64_t j = (int64_t)blockIdx.x * 32 + tx;
  const double* work = (const double*)p.work;
  double t = 0;
  if (j < p.d)
    for (int64_t c = ty; c < p.nchunks; c += FG_COLSUM_TY) t += work[c * p.d + j];
  s[ty][tx] = t;
  __syncthreads();
  if (ty != 0 || j >= p.d) return;
  for (int k = 1; k < FG_COLSUM_TY; ++k) t += s[k][tx];
  T* out = (T*)p.out;
  const double base = p.accumulate ? (double)out[j] : 0.0;
  out[j] = T(base + t);
}

// ---- block reductions ------------------------------------------------------------------------------

// fg_block_reduce returns, in every thread of a block of THREADS threads, the reduction R of x
// over the block: warps by butterfly (R::group), then warp 0 over the warps' results, always in
// the same order (lanes past the number of warps hold R::identity()). fg_block_sum and
// fg_block_max are its two uses.
#define FG_RED_THREADS 1024
template <int THREADS, typename R> __device__ __forceinline__ double fg_block_reduce(double x, double* shared) {
  const int lane = threadIdx.x & 31, w = threadIdx.x / 32;
  x = R::group(x);
  __syncthreads();
  if (lane == 0) shared[w] = x;
  __syncthreads();
  x = lane < THREADS / 32 ? shared[lane] : R::identity();
  return R::group(x);
}
struct FgSum {
  static __device__ __forceinline__ double group(double x) { return fg_group_sum<32>(x); }
  static __device__ __forceinline__ double identity() { return 0.0; }
};
struct FgMax {
  static __device__ __forceinline__ double group(double x) { return fg_group_max<32>(x); }
  static __device__ __forceinline__ double identity() { return -fg_inf(); }
};
template <int THREADS> __device__ __forceinline__ double fg_block_sum(double x, double* shared) {
  return fg_block_reduce<THREADS, FgSum>(x, shared);
}
template <int THREADS> __device__ __forceinline__ double fg_block_max(double x, double* shared) {
  return fg_block_reduce<THREADS, FgMax>(x, shared);
}

// ---- cross-entropy ---------------------------------------------------------------------------------

#define FG_CE_THREADS 128

// fg_ce_lse returns the natural log-sum-exp of row x[0, v), in double, computed by the block.
template <typename T> __device__ double fg_ce_lse(const T* x, int64_t v, double* shared) {
  double mx = -fg_inf();
  for (int64_t j = threadIdx.x; j < v; j += FG_CE_THREADS) mx = fmax(mx, (double)x[j]);
  mx = fg_block_max<FG_CE_THREADS>(mx, shared);
  // As ops/softmax: a +Inf makes the row NaN; an all −Inf row has log-sum-exp −Inf. (fmax
  // drops NaN, which then reaches the sum below.)
  if (mx == fg_inf()) return fg_nan();
  if (mx == -fg_inf()) return mx;
  double s = 0;
  for (int64_t j = threadIdx.x; j < v; j += FG_CE_THREADS) s += exp((double)x[j] - mx);
  s = fg_block_sum<FG_CE_THREADS>(s, shared);
  return mx + log(s);
}

// A block per row.
template <typename T> __device__ void fg_ce_rows(const fg_ce_params& p) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  if (r >= p.m) return;
  const int32_t t = ((const int32_t*)p.targets)[r];
  double* work = (double*)p.work;
  if (t == p.ignore) {
    if (threadIdx.x == 0) work[r] = 0;
    return;
  }
  const T* x = (const T*)p.logits + r * p.v;
  const double lse = fg_ce_lse(x, p.v, shared);
  if (threadIdx.x != 0) return;
  if (t < 0 || t >= p.v)
    work[r] = fg_nan();
  else if (lse == -fg_inf())
    work[r] = fg_inf();  // log-softmax of an all −Inf row is −Inf
  else
    work[r] = lse - (double)x[t];
}

// fg_ce_n counts the rows not ignored, in a block of FG_RED_THREADS threads.
__device__ double fg_ce_n(const fg_ce_params& p, double* shared) {
  double n = 0;
  for (int64_t r = threadIdx.x; r < p.m; r += FG_RED_THREADS) n += ((const int32_t*)p.targets)[r] != p.ignore;
  return fg_block_sum<FG_RED_THREADS>(n, shared);
}

template <typename T> __device__ void fg_ce_loss(const fg_ce_params& p) {
  __shared__ double shared[32];
  const double* work = (const double*)p.work;
  double s = 0;
  for (int64_t r = threadIdx.x; r < p.m; r += FG_RED_THREADS) s += work[r];
  s = fg_block_sum<FG_RED_THREADS>(s, shared);
  const double n = fg_ce_n(p, shared);
  if (threadIdx.x == 0) ((T*)p.loss)[0] = n > 0 ? T(s / n) : T(0);
}

extern "C" __global__ void __launch_bounds__(FG_RED_THREADS) fg_ce_count(const fg_ce_params p) {
  __shared__ double shared[32];
  const double n = fg_ce_n(p, shared);
  if (threadIdx.x == 0) ((double*)p.work)[0] = n;
}

template <typename T> __device__ void fg_ce_bwd(const fg_ce_params& p) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  if (r >= p.m) return;
  const int32_t t = ((const int32_t*)p.targets)[r];
  T* dx = (T*)p.dlogits + r * p.v;
  if (t == p.ignore) {
    for (int64_t j = threadIdx.x; j < p.v; j += FG_CE_THREADS) dx[j] = T(0);
    return;
  }
  const T* x = (const T*)p.logits + r * p.v;
  const double lse = fg_ce_lse(x, p.v, shared);
  const double n = ((const double*)p.work)[0];
  const double scale = (double)((const T*)p.dloss)[0] / n;
  const bool bad = t < 0 || t >= p.v;
  for (int64_t j = threadIdx.x; j < p.v; j += FG_CE_THREADS) {
    double d;
    if (bad)
      d = fg_nan();
    else if (lse == -fg_inf())
      d = 0;  // log-softmax's gradient of an all −Inf row is zero
    else
      d = scale * (exp((double)x[j] - lse) - (j == t ? 1.0 : 0.0));
    dx[j] = T(d);
  }
}

// ---- optimizer -------------------------------------------------------------------------------------

// fg_adamw_at updates element i of a parameter w with gradient g and moments m, v.
template <typename T>
__device__ __forceinline__ void fg_adamw_at(T* w, const T* g, T* m, T* v, int64_t i, double lr, double decay, double beta1,
                                            double beta2, double eps, double c1, double c2) {
  const double gi = (double)g[i];
  const double mi = beta1 * (double)m[i] + (1 - beta1) * gi;
  const double vi = beta2 * (double)v[i] + (1 - beta2) * gi * gi;
  m[i] = T(mi);
  v[i] = T(vi);
  const double pi = (double)w[i] * (1 - decay);
  w[i] = T(pi - lr * (mi / c1) / (sqrt(vi / c2) + eps));
}

template <typename T> __device__ void fg_adamw(const fg_adamw_params& p) {
  FG_FOR_EACH(i, p.n) {
    fg_adamw_at((T*)p.p, (const T*)p.g, (T*)p.m, (T*)p.v, i, p.lr, p.decay, p.beta1, p.beta2, p.eps, p.c1, p.c2);
  }
}

// Sum of squares, stage 1: block b walks elements b·256 + tid + k·(grid·256) in order.
template <typename T> __device__ void fg_sumsq_partial(const fg_sumsq_params& p) {
  __shared__ double shared[32];
  const T* x = (const T*)p.x;
  double s = 0;
  FG_FOR_EACH(i, p.n) {
    const double v = (double)x[i];
    s += v * v;
  }
  s = fg_block_sum<FG_EW_THREADS>(s, shared);
  if (threadIdx.x == 0) ((double*)p.work)[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(FG_RED_THREADS) fg_sumsq_final(const fg_sumsq_params p) {
  __shared__ double shared[32];
  const double* work = (const double*)p.work;
  double s = 0;
  for (int64_t i = threadIdx.x; i < p.nwork; i += FG_RED_THREADS) s += work[i];
  s = fg_block_sum<FG_RED_THREADS>(s, shared);
  if (threadIdx.x == 0) ((double*)p.out)[0] = sqrt(s);
}

// ---- parameter groups: one launch over many tensors --------------------------------------------

// Block b of a group launch works on elements [c·FG_GROUP_CHUNK, (c+1)·FG_GROUP_CHUNK) of the
// tensor whose blocks hold b (c = b − first_block), found by binary search in the table.
#define FG_GROUP_CHUNK 2048

__device__ __forceinline__ const fg_tensor_desc& fg_group_find(const fg_group_params& p, int64_t b) {
  const fg_tensor_desc* t = (const fg_tensor_desc*)p.table;
  int64_t lo = 0, hi = p.count - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (t[mid].first_block <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return t[lo];
}

template <typename T> __device__ void fg_group_adamw(const fg_group_params& p) {
  const int64_t b = blockIdx.x;
  double lr = p.lr, c1 = p.c1, c2 = p.c2;
  if (p.sched) {
    const double* s = (const double*)p.sched;
    lr = s[0];
    c1 = s[1];
    c2 = s[2];
    if (!isfinite(((const double*)p.norm)[0])) return;
    if (p.loss && !isfinite((double)((const T*)p.loss)[0])) return;
  }
  const fg_tensor_desc& t = fg_group_find(p, b);
  const int64_t i0 = (b - t.first_block) * FG_GROUP_CHUNK, i1 = min(t.n, i0 + FG_GROUP_CHUNK);
  const double decay = t.decay ? lr * p.weight_decay : 0.0;
  for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x)
    fg_adamw_at((T*)t.p, (const T*)t.g, (T*)t.m, (T*)t.v, i, lr, decay, p.beta1, p.beta2, p.eps, c1, c2);
}

template <typename T> __device__ void fg_group_sumsq(const fg_group_params& p) {
  __shared__ double shared[32];
  const int64_t b = blockIdx.x;
  const fg_tensor_desc& t = fg_group_find(p, b);
  const int64_t i0 = (b - t.first_block) * FG_GROUP_CHUNK, i1 = min(t.n, i0 + FG_GROUP_CHUNK);
  const T* g = (const T*)t.g;
  double s = 0;
  for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
    const double v = (double)g[i];
    s += v * v;
  }
  s = fg_block_sum<FG_EW_THREADS>(s, shared);
  if (threadIdx.x == 0) ((double*)p.work)[b] = s;
}

template <typename T> __device__ void fg_group_clip(const fg_group_params& p) {
  const double norm = ((const double*)p.norm)[0];
  if (!(p.max_norm > 0) || !(norm > p.max_norm) || isinf(norm)) return;
  const double scale = p.max_norm / norm;
  const int64_t b = blockIdx.x;
  const fg_tensor_desc& t = fg_group_find(p, b);
  const int64_t i0 = (b - t.first_block) * FG_GROUP_CHUNK, i1 = min(t.n, i0 + FG_GROUP_CHUNK);
  T* g = (T*)t.g;
  for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) g[i] = T((double)g[i] * scale);
}

// ---- entry points --------------------------------------------------------------------------------

#define FG_ENTRY(name, P, fn, threads)                                                                   \
  extern "C" __global__ void __launch_bounds__(threads) name##_f32(const P p) { fn<float>(p); }  \
  extern "C" __global__ void __launch_bounds__(threads) name##_f64(const P p) { fn<double>(p); }

FG_ENTRY(fg_ew, fg_ew_params, fg_ew, FG_EW_THREADS)
FG_ENTRY(fg_gelu_fwd, fg_ew_params, fg_gelu_fwd, FG_EW_THREADS)
FG_ENTRY(fg_gelu_bwd, fg_ew_params, fg_gelu_bwd, FG_EW_THREADS)
FG_ENTRY(fg_affine, fg_ew_params, fg_affine, FG_EW_THREADS)
FG_ENTRY(fg_affine_vec, fg_ew_params, fg_affine_vec, FG_EW_THREADS)
FG_ENTRY(fg_ew_vec, fg_ew_params, fg_ew_vec, FG_EW_THREADS)
FG_ENTRY(fg_copy, fg_ew_params, fg_copy, FG_EW_THREADS)
FG_ENTRY(fg_copy_vec, fg_ew_params, fg_copy_vec, FG_EW_THREADS)
FG_ENTRY(fg_gelu_fwd_vec, fg_ew_params, fg_gelu_fwd_vec, FG_EW_THREADS)
FG_ENTRY(fg_gelu_bwd_vec, fg_ew_params, fg_gelu_bwd_vec, FG_EW_THREADS)
FG_ENTRY(fg_dropout, fg_ew_params, fg_dropout, FG_EW_THREADS)
FG_ENTRY(fg_clip, fg_ew_params, fg_clip, FG_EW_THREADS)
FG_ENTRY(fg_gather, fg_embed_params, fg_gather, FG_EW_THREADS)
FG_ENTRY(fg_scatter, fg_embed_params, fg_scatter, FG_EW_THREADS)
FG_ENTRY(fg_heads, fg_heads_params, fg_heads, FG_EW_THREADS)
FG_ENTRY(fg_heads1, fg_heads_params, fg_heads1, FG_EW_THREADS)
FG_ENTRY(fg_norm_fwd, fg_norm_params, fg_norm_fwd, FG_NORM_WARPS * 32)
FG_ENTRY(fg_norm_bwd, fg_norm_params, fg_norm_bwd, FG_NORM_WARPS * 32)
FG_ENTRY(fg_colsum_partial, fg_colsum_params, fg_colsum_partial, 32 * FG_COLSUM_TY)
FG_ENTRY(fg_colsum_partial_vec, fg_colsum_params, fg_colsum_partial_vec, 32 * FG_COLSUM_TY)
FG_ENTRY(fg_colsum_final, fg_colsum_params, fg_colsum_final, 32 * FG_COLSUM_TY)
FG_ENTRY(fg_ce_rows, fg_ce_params, fg_ce_rows, FG_CE_THREADS)
FG_ENTRY(fg_ce_loss, fg_ce_params, fg_ce_loss, FG_RED_THREADS)
FG_ENTRY(fg_ce_bwd, fg_ce_params, fg_ce_bwd, FG_CE_THREADS)
FG_ENTRY(fg_adamw, fg_adamw_params, fg_adamw, FG_EW_THREADS)
FG_ENTRY(fg_sumsq_partial, fg_sumsq_params, fg_sumsq_partial, FG_EW_THREADS)
FG_ENTRY(fg_group_adamw, fg_group_params, fg_group_adamw, FG_EW_THREADS)
FG_ENTRY(fg_group_sumsq, fg_group_params, fg_group_sumsq, FG_EW_THREADS)
FG_ENTRY(fg_group_clip, fg_group_params, fg_group_clip, FG_EW_THREADS)
