// nn_params.h: the parameter structs of the kernels of nn.cu (the layers, the loss and the
// optimizer on device buffers). As for params.h, the Go structs of cuda/nn_params.go are the
// definition and TestNNParamsHeader checks this header against them: field names, C types,
// offsets by C's layout rules, sizes. Change the Go struct first, then this header.
//
// Device pointers are 64-bit integers (0: absent); sizes and strides count elements.
#ifndef FLASHGORGON_NN_PARAMS_H
#define FLASHGORGON_NN_PARAMS_H

#include <stdint.h>

// Elementwise ops of fg_ew_params.op.
#define FG_EW_ADD 0
#define FG_EW_MUL 1

// fg_ew_params: the elementwise kernels over n elements (rows of length d where broadcast):
//   fg_ew_T:        y = a + b or a * b (op);   fg_copy_T: y = a
//   fg_gelu_fwd_T:  y = gelu(a);   fg_gelu_bwd_T: y = b * gelu'(a)
//   fg_affine_T:    y[r, j] = a[r, j] * b[j] + c[j]  (b or c may be 0)
//   fg_dropout_T:   y = a * mask, or y = mask when a is 0; mask from Philox(seed, offset), p = alpha
//   fg_clip_T:      y *= alpha / norm when norm > alpha, norm = ((double*)b)[0]
typedef struct {
  uint64_t a, b, c, y;
  int64_t n, d;
  double alpha;
  uint64_t seed, offset;
  int32_t op, reserved;
} fg_ew_params;

// fg_embed_params: gather y[m, :] = table[idx[m], :] and its gradient, the scatter-add
// table[v, :] = (accumulate ? table[v, :] : 0) + sum over m with idx[m] = v, in increasing m,
// of y[m, :]. idx is int32 [m]; table is [v, d]; y is [m, d].
typedef struct {
  uint64_t table, idx, y;
  int64_t m, v, d;
  int32_t accumulate, reserved;
} fg_embed_params;

// fg_norm_params: LayerNorm (center) or RMSNorm of the rows of x [rows, d]:
//   forward:  mean, rstd [rows] (double) and, when y is set, y = xhat * gamma + beta
//   backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma
//             (mean(g) dropped without centering); gamma and beta may be 0.
typedef struct {
  uint64_t x, y, gamma, beta, mean, rstd, dy, dx;
  int64_t rows, d;
  double eps;
  int32_t center, reserved;
} fg_norm_params;

// fg_heads_params: the moves between rows x [b * n, c] and attention heads [b, h, n, d], columns
// [off, off + h * d) of the rows:
//   split: y[bi, hi, li, j] = x[bi * n + li, off + hi * d + j]                 y [b, h, n, d]
//   merge: y[bi * n + li, off + hi * d + j] = x[bi, hi, li, j], 0 in the other columns of y [b * n, c]
// fg_heads_T moves 16 bytes at a time (d, c, off multiples of 16 / sizeof(T), x and y aligned
// to 16 bytes), fg_heads1_T one element; both index in 32 bits (fewer than 2^31 elements).
typedef struct {
  uint64_t x, y;
  int64_t b, n, h, d, c, off;
  int32_t split, reserved;
} fg_heads_params;

// fg_colsum_params: deterministic column sums of g [rows, d], in two stages.
//   fg_colsum_partial_T: work[c * d + j] = sum over the rows of chunk c of f(r, j), with
//     f = g (mode 0), g * x (mode 1), or g * xhat with xhat = (x - mean[r]) * rstd[r] (mode 2,
//     which also writes sum g to work[(nchunks + c) * d + j]); chunk c holds rows
//     [c * chunk_rows, (c + 1) * chunk_rows).
//   fg_colsum_final_T:   out[j] = (accumulate ? out[j] : 0) + sum over c of work[c * d + j].
// work is double [nchunks, d] (twice that in mode 2).
typedef struct {
  uint64_t g, x, mean, rstd, work, out;
  int64_t rows, d, chunk_rows, nchunks;
  int32_t mode, accumulate;
} fg_colsum_params;

// fg_ce_params: cross-entropy of logits [m, v] with int32 targets [m] under log-softmax, rows
// whose target is ignore left out; n = number of rows not ignored.
//   fg_ce_rows_T:  work[r] = logsumexp(logits[r, :]) - logits[r, t[r]] (0 when ignored)
//   fg_ce_loss_T:  loss[0] = sum_r work[r] / n (0 when n = 0)
//   fg_ce_count:   work[0] = n
//   fg_ce_bwd_T:   dlogits[r, :] = dloss[0] / n * (softmax(logits[r, :]) - onehot(t[r])) (0 when ignored)
typedef struct {
  uint64_t logits, targets, loss, dloss, dlogits, work;
  int64_t m, v;
  int32_t ignore, reserved;
} fg_ce_params;

// fg_adamw_params: one AdamW step over n elements (nn/optim.go's update, in double):
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;
//   p = p (1 - decay) - lr (m / c1) / (sqrt(v / c2) + eps)
typedef struct {
  uint64_t p, g, m, v;
  int64_t n;
  double lr, decay, beta1, beta2, eps, c1, c2;
} fg_adamw_params;

// fg_sumsq_params: sums of squares. fg_sumsq_partial_T: work[b] = sum of x[i]^2 over the
// elements block b visits (a fixed grid of nwork blocks); fg_sumsq_final: out[0] =
// sqrt(sum of work[0, nwork)) (double).
typedef struct {
  uint64_t x, work, out;
  int64_t n, nwork;
} fg_sumsq_params;

// fg_tensor_desc: one parameter of a group (fg_group_params.table): its buffers (g, m, v may
// be 0 where a kernel does not read them), length, whether weight decay applies, and the
// first block of the launch grid that works on it (blocks first_block, first_block + 1, …
// take FG_GROUP_CHUNK elements each).
typedef struct {
  uint64_t p, g, m, v;
  int64_t n, first_block;
  int32_t decay, reserved;
} fg_tensor_desc;

// fg_group_params: one launch over every tensor of a group (blocks in total, count tensors):
//   fg_group_adamw_T:  the AdamW step of fg_adamw_params on each tensor (decay = lr·wd where
//                      the tensor's decay is set, else 0)
//   fg_group_sumsq_T:  work[b] = sum of g^2 over the chunk of block b (then fg_sumsq_final)
//   fg_group_clip_T:   g *= max_norm / norm[0] when max_norm > 0 and max_norm < norm[0] < Inf
// With sched set, fg_group_adamw_T reads lr, c1, c2 from sched[0..2] (double) instead of the
// fields, so that a recorded launch (a CUDA graph) takes each step's values from memory, and
// does nothing when norm[0] or loss[0] (of the element type, when loss is set) is NaN or ±Inf.
typedef struct {
  uint64_t table, work, norm;
  int64_t count, blocks;
  double lr, weight_decay, beta1, beta2, eps, c1, c2, max_norm;
  uint64_t sched, loss;
} fg_group_params;

#endif
