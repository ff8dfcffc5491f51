package cuda

import "structs"

// The parameter structs of the kernels of kernels/nn.cu. As for params.go, these Go structs
// are the definition; kernels/nn_params.h declares the same fields for the kernels and
// TestNNParamsHeader checks the two against each other. Device pointers are devptr (0:
// absent); sizes count elements.

// Elementwise ops (nn_params.h's FG_EW_ADD, FG_EW_MUL).
const (
	ewAdd int32 = iota
	ewMul
)

// ewParams is fg_ew_params: the elementwise kernels (GELU, affine, add, mul, dropout, clip).
type ewParams struct {
	_            structs.HostLayout
	a, b, c, y   devptr
	n, d         int64
	alpha        float64
	seed, offset uint64
	op, reserved int32
}

// embedParams is fg_embed_params: embedding gather and scatter-add.
type embedParams struct {
	_                    structs.HostLayout
	table, idx, y        devptr
	m, v, d              int64
	accumulate, reserved int32
}

// normParams is fg_norm_params: LayerNorm / RMSNorm forward and backward.
type normParams struct {
	_                                     structs.HostLayout
	x, y, gamma, beta, mean, rstd, dy, dx devptr
	rows, d                               int64
	eps                                   float64
	center, reserved                      int32
}

// colsumParams is fg_colsum_params: the two stages of the deterministic column sums.
type colsumParams struct {
	_                           structs.HostLayout
	g, x, mean, rstd, work, out devptr
	rows, d, chunkRows, nchunks int64
	mode, accumulate            int32
}

// headsParams is fg_heads_params: the moves between rows [B·N, C] and attention heads
// [B, H, N, D] (HeadsParams).
type headsParams struct {
	_                  structs.HostLayout
	x, y               devptr
	b, n, h, d, c, off int64
	split, reserved    int32
}

// ceParams is fg_ce_params: cross-entropy with log-softmax and an ignore index.
type ceParams struct {
	_                                           structs.HostLayout
	logits, targets, loss, dloss, dlogits, work devptr
	m, v                                        int64
	ignore, reserved                            int32
}

// adamwParams is fg_adamw_params: one AdamW step.
type adamwParams struct {
	_                                    structs.HostLayout
	p, g, m, v                           devptr
	n                                    int64
	lr, decay, beta1, beta2, eps, c1, c2 float64
}

// sumsqParams is fg_sumsq_params: the sums of squares of the global gradient norm.
type sumsqParams struct {
	_            structs.HostLayout
	x, work, out devptr
	n, nwork     int64
}

// tensorDesc is fg_tensor_desc: one parameter of a ParamGroup in its device table.
type tensorDesc struct {
	_               structs.HostLayout
	p, g, m, v      devptr
	n, firstBlock   int64
	decay, reserved int32
}

// groupParams is fg_group_params: the fused optimizer kernels over a ParamGroup.
type groupParams struct {
	_                                                   structs.HostLayout
	table, work, norm                                   devptr
	count, blocks                                       int64
	lr, weightDecay, beta1, beta2, eps, c1, c2, maxNorm float64
	sched, loss                                         devptr
}
