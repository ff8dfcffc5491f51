// softmax.cu: softmax, log-softmax and log-sum-exp, forward and backward, over x viewed as
// [outer, n, inner] and reduced over n (see params.h). The semantics are those of the CPU op
// (ops/softmax), edge cases included; every statistic is accumulated in double whatever the
// element type, as the CPU op does (a float32 running sum over a long row loses ~1e-5).
//
// Forward: one pass computes each row's maximum m and the sum d = sum_i exp(x_i - m) online
// (a running pair (m, d); when m grows, d is rescaled by exp(m_old - m_new)); a second pass
// writes
//   softmax      y_i = exp(x_i - m) / d
//   log-softmax  y_i = (x_i - m) - log d
//   log-sum-exp  y   = m + log d
// A row of only -Inf (d = 0) gives softmax 0 and log-softmax / log-sum-exp -Inf; a row holding
// +Inf gives NaN throughout; a NaN makes its row NaN.
// Backward, given dy:
//   softmax      dx_i = y_i (dy_i - sum_k y_k dy_k)
//   log-softmax  dx_i = dy_i - exp(y_i) sum_k dy_k        (0 in a row where every y is -Inf)
//   log-sum-exp  dx_i = dy e_i / sum_k e_k, e_i = exp(x_i - y)   (0 where y = -Inf)
// (log-sum-exp renormalizes by sum_k e_k, which cancels the rounding of the saved y).
//
// Two layouts: rows (inner == 1) give each row to one warp, the lanes striding over the row
// and combining their partial results with butterfly shuffles; columns (inner > 1) give each
// (o, j) to one thread, which walks the strided row while neighbouring threads read
// neighbouring addresses. Every reduction runs in a fixed order: results are bit-reproducible.
#include "common.cuh"

// fg_ms is the online softmax state of a row after some of its entries: the maximum m and
// d = sum exp(x - m). The empty state is m = -DBL_MAX, d = 0, so that an entry of -Inf adds
// exp(-Inf) = 0 rather than exp(-Inf + Inf) = NaN.
struct fg_ms {
  double m, d;
};

__device__ __forceinline__ fg_ms fg_ms_empty() { return fg_ms{-1.7976931348623157e308, 0.0}; }

// fg_ms_push adds one entry: a new maximum rescales the old sum and adds exp(0) = 1.
__device__ __forceinline__ void fg_ms_push(fg_ms& a, double x) {
  if (x > a.m) {
    a.d = a.d * exp(a.m - x) + 1.0;
    a.m = x;
  } else {
    a.d += exp(x - a.m);
  }
}

// fg_ms_merge combines the states of two disjoint parts of a row (block-wise softmax merge).
__device__ __forceinline__ fg_ms fg_ms_merge(fg_ms a, fg_ms b) {
  if (b.m > a.m) {
    fg_ms t = a;
    a = b;
    b = t;
  }
  // a.m >= b.m (or a NaN is in play and propagates through d).
  if (b.d != 0.0) a.d += b.d * exp(b.m - a.m);  // an empty b adds nothing; a NaN d propagates
  return a;
}

__device__ __forceinline__ fg_ms fg_ms_warp(fg_ms a) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    fg_ms b;
    b.m = __shfl_xor_sync(0xffffffffu, a.m, off);
    b.d = __shfl_xor_sync(0xffffffffu, a.d, off);
    a = fg_ms_merge(a, b);
  }
  return a;
}

// fg_finish turns a row's state into what the output pass needs: inv = 1/d, logd = log d and
// lse = m + log d, with the edge cases folded in (see the file comment).
struct fg_fin {
  double m, inv, logd, lse;
};

__device__ __forceinline__ fg_fin fg_finish(fg_ms s) {
  const double inf = __longlong_as_double(0x7ff0000000000000ULL);
  if (s.d == 0.0) return fg_fin{s.m, 0.0, 0.0, -inf};
  if (s.m == inf) {
    const double nan = __longlong_as_double(0x7ff8000000000000ULL);
    return fg_fin{s.m, nan, nan, nan};
  }
  const double logd = log(s.d);
  return fg_fin{s.m, 1.0 / s.d, logd, s.m + logd};
}

__device__ __forceinline__ double fg_softmax_value(int kind, double x, const fg_fin& f) {
  if (kind == FG_SOFTMAX) return exp(x - f.m) * f.inv;
  return (x - f.m) - f.logd;
}

constexpr int FG_ROWS_PER_BLOCK = 4;  // warps (rows) per block in the row kernels

// Forward, rows layout (inner == 1): warp w of block blk handles row blk*4 + w.
template <typename T> __device__ void fg_softmax_fwd_rows(const fg_softmax_params& p) {
  const int64_t row = (int64_t)blockIdx.x * FG_ROWS_PER_BLOCK + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= p.outer) return;  // the whole warp leaves together
  const T* x = (const T*)p.x + row * p.n;
  fg_ms a = fg_ms_empty();
  for (int64_t i = lane; i < p.n; i += 32) fg_ms_push(a, (double)x[i]);
  const fg_fin f = fg_finish(fg_ms_warp(a));
  if (p.kind == FG_LOG_SUM_EXP) {
    if (lane == 0) ((T*)p.y)[row] = (T)f.lse;
    return;
  }
  T* y = (T*)p.y + row * p.n;
  for (int64_t i = lane; i < p.n; i += 32) y[i] = (T)fg_softmax_value(p.kind, (double)x[i], f);
}

// Forward, columns layout (inner > 1): thread t handles row (o, j) = (t / inner, t % inner).
template <typename T> __device__ void fg_softmax_fwd_cols(const fg_softmax_params& p) {
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= p.outer * p.inner) return;
  const int64_t o = t / p.inner, j = t % p.inner, s = p.inner;
  const T* x = (const T*)p.x + o * p.n * s + j;
  fg_ms a = fg_ms_empty();
  for (int64_t i = 0; i < p.n; ++i) fg_ms_push(a, (double)x[i * s]);
  const fg_fin f = fg_finish(a);
  if (p.kind == FG_LOG_SUM_EXP) {
    ((T*)p.y)[t] = (T)f.lse;
    return;
  }
  T* y = (T*)p.y + o * p.n * s + j;
  for (int64_t i = 0; i < p.n; ++i) y[i * s] = (T)fg_softmax_value(p.kind, (double)x[i * s], f);
}

__device__ __forceinline__ bool fg_is_neg_inf_d(double v) { return v == __longlong_as_double(0xfff0000000000000ULL); }

// Backward, rows layout: the row's reduction (sum y dy, sum dy, or sum exp(x - y)) by the warp,
// then one pass writing dx.
template <typename T> __device__ void fg_softmax_bwd_rows(const fg_softmax_params& p) {
  const int64_t row = (int64_t)blockIdx.x * FG_ROWS_PER_BLOCK + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= p.outer) return;
  T* dx = (T*)p.dx + row * p.n;
  if (p.kind == FG_LOG_SUM_EXP) {
    const T* x = (const T*)p.x + row * p.n;
    const double lse = (double)((const T*)p.y)[row], g = (double)((const T*)p.dy)[row];
    if (fg_is_neg_inf_d(lse)) {
      for (int64_t i = lane; i < p.n; i += 32) dx[i] = T(0);
      return;
    }
    double s = 0;
    for (int64_t i = lane; i < p.n; i += 32) s += exp((double)x[i] - lse);
    const double f = g / fg_group_sum<32>(s);
    for (int64_t i = lane; i < p.n; i += 32) dx[i] = (T)(exp((double)x[i] - lse) * f);
    return;
  }
  const T* y = (const T*)p.y + row * p.n;
  const T* dy = (const T*)p.dy + row * p.n;
  double s = 0;
  int live = 0;  // log-softmax: some y of the row is not -Inf
  for (int64_t i = lane; i < p.n; i += 32) {
    const double yv = (double)y[i], g = (double)dy[i];
    s += p.kind == FG_SOFTMAX ? g * yv : g;
    live |= !fg_is_neg_inf_d(yv);
  }
  s = fg_group_sum<32>(s);
  if (p.kind == FG_SOFTMAX) {
    for (int64_t i = lane; i < p.n; i += 32) dx[i] = (T)((double)y[i] * ((double)dy[i] - s));
    return;
  }
  live = __any_sync(0xffffffffu, live);
  for (int64_t i = lane; i < p.n; i += 32) dx[i] = live ? (T)((double)dy[i] - exp((double)y[i]) * s) : T(0);
}

// Backward, columns layout: the same formulas, one thread per strided row.
template <typename T> __device__ void fg_softmax_bwd_cols(const fg_softmax_params& p) {
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= p.outer * p.inner) return;
  const int64_t o = t / p.inner, j = t % p.inner, st = p.inner;
  const int64_t base = o * p.n * st + j;
  T* dx = (T*)p.dx + base;
  if (p.kind == FG_LOG_SUM_EXP) {
    const T* x = (const T*)p.x + base;
    const double lse = (double)((const T*)p.y)[t], g = (double)((const T*)p.dy)[t];
    if (fg_is_neg_inf_d(lse)) {
      for (int64_t i = 0; i < p.n; ++i) dx[i * st] = T(0);
      return;
    }
    double s = 0;
    for (int64_t i = 0; i < p.n; ++i) s += exp((double)x[i * st] - lse);
    const double f = g / s;
    for (int64_t i = 0; i < p.n; ++i) dx[i * st] = (T)(exp((double)x[i * st] - lse) * f);
    return;
  }
  const T* y = (const T*)p.y + base;
  const T* dy = (const T*)p.dy + base;
  double s = 0;
  bool live = false;
  for (int64_t i = 0; i < p.n; ++i) {
    const double yv = (double)y[i * st], g = (double)dy[i * st];
    s += p.kind == FG_SOFTMAX ? g * yv : g;
    live = live || !fg_is_neg_inf_d(yv);
  }
  for (int64_t i = 0; i < p.n; ++i) {
    const double yv = (double)y[i * st], g = (double)dy[i * st];
    if (p.kind == FG_SOFTMAX)
      dx[i * st] = (T)(yv * (g - s));
    else
      dx[i * st] = live ? (T)(g - exp(yv) * s) : T(0);
  }
}

// Entry points fg_softmax_{fwd,bwd}_{rows,cols}_{f32,f64}. Rows kernels run 128 threads
// (4 rows) per block; columns kernels one thread per strided row.
#define FG_SOFTMAX_ENTRY(NAME, T, SUFFIX) \
  extern "C" __global__ void NAME##_##SUFFIX(const fg_softmax_params p) { NAME<T>(p); }
FG_SOFTMAX_ENTRY(fg_softmax_fwd_rows, float, f32)
FG_SOFTMAX_ENTRY(fg_softmax_fwd_rows, double, f64)
FG_SOFTMAX_ENTRY(fg_softmax_fwd_cols, float, f32)
FG_SOFTMAX_ENTRY(fg_softmax_fwd_cols, double, f64)
FG_SOFTMAX_ENTRY(fg_softmax_bwd_rows, float, f32)
FG_SOFTMAX_ENTRY(fg_softmax_bwd_rows, double, f64)
FG_SOFTMAX_ENTRY(fg_softmax_bwd_cols, float, f32)
FG_SOFTMAX_ENTRY(fg_softmax_bwd_cols, double, f64)
