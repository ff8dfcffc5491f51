// pointwise.cu: Gorgonia's elementwise arithmetic on device buffers, for the graph machine's
// CUDA backend (any graph a Gorgonia user builds: sigmoid, tanh, exp, ln, sub, div, and their
// gradients, which Gorgonia writes with the same ops and scalar constants). Its parameters are
// cuda/pointwise.go's pointwiseParams (the Go struct is the definition; this declaration
// follows it field by field):
//
//   unary:   y[i] = f(a[i])                                   i < n
//   binary:  y[i] = a[i·sa] ∘ b[i·sb]    sa, sb ∈ {0, 1}     (0: a scalar broadcast)
//
// with f and ∘ the codes FG_PW_* of pointwise.go (Gorgonia's ʘUnaryOperatorType and
// ʘBinaryOperatorType names in comments). Each element is one thread's: no order to depend on.
#include <stdint.h>

typedef struct {
  uint64_t a, b, y;
  int64_t n;
  int64_t sa, sb;
  int32_t fn, reserved;
} fg_pointwise_params;

// The codes, in pointwise.go's order.
enum {
  FG_PW_ABS, FG_PW_SIGN, FG_PW_CEIL, FG_PW_FLOOR, FG_PW_SIN, FG_PW_COS, FG_PW_EXP, FG_PW_LN, FG_PW_LOG2,
  FG_PW_NEG, FG_PW_SQUARE, FG_PW_SQRT, FG_PW_INV, FG_PW_INVSQRT, FG_PW_CUBE, FG_PW_TANH, FG_PW_SIGMOID,
  FG_PW_LOG1P, FG_PW_EXPM1, FG_PW_SOFTPLUS,
  FG_PW_ADD = 64, FG_PW_SUB, FG_PW_MUL, FG_PW_DIV, FG_PW_POW
};

// The math library's functions for float and double (full precision, no fast-math).
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_log2(float x) { return log2f(x); }
__device__ __forceinline__ double m_log2(double x) { return log2(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }

template <typename T> __device__ __forceinline__ T fg_unary(int fn, T x) {
  switch (fn) {
    case FG_PW_ABS: return x < T(0) ? -x : x;
    case FG_PW_SIGN: return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);  // ±0 and NaN as they are
    case FG_PW_CEIL: return ceil(x);
    case FG_PW_FLOOR: return floor(x);
    case FG_PW_SIN: return m_sin(x);
    case FG_PW_COS: return m_cos(x);
    case FG_PW_EXP: return m_exp(x);
    case FG_PW_LN: return m_log(x);
    case FG_PW_LOG2: return m_log2(x);
    case FG_PW_NEG: return -x;
    case FG_PW_SQUARE: return x * x;
    case FG_PW_SQRT: return m_sqrt(x);
    case FG_PW_INV: return T(1) / x;
    case FG_PW_INVSQRT: return T(1) / m_sqrt(x);
    case FG_PW_CUBE: return x * x * x;
    case FG_PW_TANH: return m_tanh(x);
    // σ(x) = 1/(1 + e^−x) for x ≥ 0, e^x/(1 + e^x) below: neither form overflows.
    case FG_PW_SIGMOID: {
      const T e = m_exp(x < T(0) ? x : -x);
      return x < T(0) ? e / (T(1) + e) : T(1) / (T(1) + e);
    }
    case FG_PW_LOG1P: return m_log1p(x);
    case FG_PW_EXPM1: return m_expm1(x);
    // softplus(x) = log(1 + e^x) = max(x, 0) + log1p(e^−|x|).
    case FG_PW_SOFTPLUS: return (x > T(0) ? x : T(0)) + m_log1p(m_exp(x < T(0) ? x : -x));
  }
  return x;
}

template <typename T> __device__ __forceinline__ T fg_binary(int fn, T a, T b) {
  switch (fn) {
    case FG_PW_ADD: return a + b;
    case FG_PW_SUB: return a - b;
    case FG_PW_MUL: return a * b;
    case FG_PW_DIV: return a / b;
    case FG_PW_POW: return m_pow(a, b);
  }
  return a;
}

template <typename T> __device__ void fg_pointwise(const fg_pointwise_params& p) {
  const T* a = (const T*)p.a;
  const T* b = (const T*)p.b;
  T* y = (T*)p.y;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    y[i] = b ? fg_binary<T>(p.fn, a[i * p.sa], b[i * p.sb]) : fg_unary<T>(p.fn, a[i]);
  }
}

extern "C" __global__ void __launch_bounds__(256) fg_pointwise_f32(const fg_pointwise_params p) { fg_pointwise<float>(p); }
extern "C" __global__ void __launch_bounds__(256) fg_pointwise_f64(const fg_pointwise_params p) { fg_pointwise<double>(p); }
