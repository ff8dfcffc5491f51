// strided.cu: one kernel that moves elements between strided layouts, for the graph machine's
// data-movement ops (attention heads split and merged, Gorgonia's transpose, repeat and
// reshape, packing a gradient into a zeroed tensor, negation, constants). Its parameters are
// cuda/strided.go's stridedParams (the Go struct is the definition; this declaration follows
// it field by field):
//
//   for every index (i0, i1, i2, i3) of the space n[0] × n[1] × n[2] × n[3]:
//     v = x ? alpha · x[Σ_k i_k·xs[k]] : fill
//     y[Σ_k i_k·ys[k]] = accumulate ? y[…] + v : v
//
// Each output element is written by one thread (the launcher checks that ys maps the space
// one-to-one when accumulating), so results do not depend on the schedule.
#include <stdint.h>

typedef struct {
  uint64_t x, y;
  int64_t n[4];
  int64_t xs[4], ys[4];
  int64_t total;
  double alpha, fill;
  int32_t accumulate, reserved;
} fg_strided_params;

template <typename T> __device__ void fg_strided(const fg_strided_params& p) {
  const T* x = (const T*)p.x;
  T* y = (T*)p.y;
  const T alpha = (T)p.alpha, fill = (T)p.fill;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i, xo = 0, yo = 0;
#pragma unroll
    for (int k = 3; k >= 0; k--) {
      const int64_t ik = r % p.n[k];
      r /= p.n[k];
      xo += ik * p.xs[k];
      yo += ik * p.ys[k];
    }
    const T v = x ? (p.alpha == 1.0 ? x[xo] : alpha * x[xo]) : fill;
    y[yo] = p.accumulate ? y[yo] + v : v;
  }
}

extern "C" __global__ void __launch_bounds__(256) fg_strided_f32(const fg_strided_params p) { fg_strided<float>(p); }
extern "C" __global__ void __launch_bounds__(256) fg_strided_f64(const fg_strided_params p) { fg_strided<double>(p); }
