// debug.cu: kernels for the tests and the benchmark, not used by the ops.
//   fg_debug_trap faults on purpose: the tests check that a kernel fault comes back as a Go error
//     naming the CUDA error and the op, and what the calls after it do.
//   fg_debug_fill fills a buffer with pseudo-random normal values on the device, so the benchmark
//     draws hundreds of megabytes of inputs without generating them on the host.
#include "common.cuh"

extern "C" __global__ void fg_debug_trap(const fg_softmax_params p) {
  if (p.kind == 0) __trap();
}

// fg_splitmix64 is a bijective 64-bit mix (SplitMix64's finalizer): counter-based random bits.
__device__ __forceinline__ uint64_t fg_splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// fg_debug_fill: element i = scale * sqrt(-2 log u1) cos(2 pi u2) (Box-Muller) with u1, u2 in
// (0, 1] from the mixed bits of (seed, i). Grid-stride loop, any grid.
extern "C" __global__ void fg_debug_fill(const fg_fill_params p) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t r = fg_splitmix64(p.seed * 0x632be59bd9b4e019ULL + (uint64_t)i);
    const double u1 = ((r >> 11) + 1) * (1.0 / 9007199254740992.0);
    const double u2 = (double)(fg_splitmix64(r) >> 11) * (1.0 / 9007199254740992.0);
    const double v = p.scale * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    if (p.f64)
      ((double*)p.x)[i] = v;
    else
      ((float*)p.x)[i] = (float)v;
  }
}
