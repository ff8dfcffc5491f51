// attention_bwd_preprocess.cu: the first step of the attention backward pass,
//   delta[b,h,i] = sum_c dO[b,h,i,c] * O[b,h,i,c]  ( = sum_j P_ij dP_ij ),
// the row term of dS_ij = P_ij (dP_ij - delta_i). One warp per query row, lanes striding over
// the d columns and summing with a butterfly in a fixed order (bit-reproducible).
#include "common.cuh"

// fg_attn_bwd_preprocess: grid ceil(B*H*Nq / 4), 128 threads (4 rows per block).
template <typename T> __device__ void fg_attn_bwd_preprocess(const fg_attn_params& p) {
  const int64_t row = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= (int64_t)p.b * p.h * p.nq) return;  // the whole warp leaves together
  double s = fg_row_do_o<T>(p, row, lane);
  if (lane != 0) return;
  if (p.dlse && !fg_is_neg_inf(((const T*)p.lse)[row])) s -= (double)((const T*)p.dlse)[row];
  ((double*)p.delta)[row] = s;
}

extern "C" __global__ void __launch_bounds__(128) fg_attn_bwd_preprocess_f32(const fg_attn_params p) {
  fg_attn_bwd_preprocess<float>(p);
}
extern "C" __global__ void __launch_bounds__(128) fg_attn_bwd_preprocess_f64(const fg_attn_params p) {
  fg_attn_bwd_preprocess<double>(p);
}
