// Package softmax provides softmax, log-softmax and log-sum-exp as Gorgonia
// ops that are correct for every input: each row is shifted by its own
// maximum, so no logit overflows, and the edge cases have defined results.
//
// For x of rank ≥ 1 and an axis (negative counts from the end), x is viewed
// as [Outer, N, Inner] around the axis and, for every row (o, j),
//
//	Softmax     y[o,i,j] = exp(x[o,i,j]) / Σ_i' exp(x[o,i',j])     shape of x
//	LogSoftmax  y[o,i,j] = x[o,i,j] − log Σ_i' exp(x[o,i',j])      shape of x
//	LogSumExp   y[o,j]   = log Σ_i exp(x[o,i,j])                   x without axis
//
// Edge semantics, per row: an entry of −Inf gets probability 0 (log-softmax
// −Inf); a row of only −Inf gives a softmax of zeros, a log-softmax and a
// log-sum-exp of −Inf, and a zero gradient; a NaN or a +Inf in a row makes
// that row's results and gradients NaN and leaves every other row alone;
// logits of any finite size (±1e4, ±1e30) give exact results.
//
// Zero-length dimensions. The natural results are: log-sum-exp over an
// empty axis (N = 0) is log 0 = −Inf for each of the Outer·Inner rows, and
// everything else about an x with no elements is empty (softmax and
// log-softmax of x's shape, log-sum-exp when Outer·Inner = 0, and every
// gradient). Gorgonia v0.9.18 cannot run tensors with no elements
// (graph.Empty says why), so the constructors return an error at graph-build
// time, naming the shape and the axis, whenever the result would have no
// elements, and gorgonia.Grad fails the same way when it would have to
// differentiate with respect to an x with no elements. What remains is
// log-sum-exp over an empty axis with Outer·Inner > 0: −Inf for each row,
// forward on either machine, backward (an empty gradient) on the
// LispMachine. The ops' Do give the natural results for every empty shape.
//
// The forward reads each row once with the online recurrence of the seed
// documents, m_i = max(m_{i−1}, x_i), d_i = d_{i−1}·e^{m_{i−1}−m_i} + e^{x_i−m_i},
// taken a block of entries at a time, and splits the rows over all cores.
// Contiguous float32 rows run on internal/kernels/vec: exponentials in float32
// within 2 ulp, their sums and the statistics m, d in float64, log-softmax
// rounded once from float64; float32 results are within 1e-6 relative of the
// float64 ones (outside float32's subnormal range, below 1.2e-38, where only
// absolute accuracy is possible), except a log-sum-exp that cancels to near
// 0, which is within 1e-7 absolute for inputs of order 1. The backward is an
// op of its own that reads what the forward left in the graph:
//
//	Softmax     dx = y∘(dy − Σ_i dy∘y)        from y, dy
//	LogSoftmax  dx = dy − exp(y)∘Σ_i dy       from y, dy
//	LogSumExp   dx = softmax(x)∘dy            from x, y, dy (dy broadcast along the axis)
//
// The ops implement gorgonia.SDOp (gorgonia.Grad, TapeMachine) and
// gorgonia.ADOp (LispMachine), hold no state, and can run repeatedly and
// from several goroutines on separate graphs.
//
// The three algorithms of the seeds are kept as reference implementations on
// a single row: SoftmaxThreePass, SoftmaxOnline and SoftmaxTiled.
package softmax
