// Package attention makes scaled dot-product attention a first-class
// Gorgonia op: Attention (and AttentionLSE) is a FlashAttention-2 style
// fused op, Reference its decomposed twin built from Gorgonia matmuls and
// ops/softmax.
//
// Shapes: q [B,H,Nq,d], k and v [B,Hkv,Nk,d] with H a multiple of Hkv
// (query head h reads key/value head h/(H/Hkv)), o [B,H,Nq,d], the
// log-sum-exp L [B,H,Nq]; float32 or float64.
//
// # Forward
//
// For each query block of blockQ rows (the unit of parallel work, spread
// over the cores) and each key/value block of blockK rows that some row of
// the query block sees, with the scores in base 2 (log₂e folded into the
// scale):
//
//	S   = Q·Kᵀ·(scale·log₂e)
//	m'  = max(m, rowmax S)
//	P   = 2^(S − m')
//	ℓ   = 2^(m − m')·ℓ + rowsum P
//	O   = 2^(m − m')·O + P·V
//	m   = m'
//
// and at the end O /= ℓ, L = (m + log₂ ℓ)·ln 2. Key blocks that no row of the
// query block sees (causal mask, padding) are skipped. Masked keys are
// never read: tiles end at the last key some row of the block sees, masked
// scores and probabilities are selected (set), never computed from masked
// keys, and each row's share of O += P·V stops at its own visible keys
// (gemmPrefix), so that a NaN in a masked key cannot reach a row as
// 0·NaN. Nothing of size Nq×Nk is allocated: one blockQ×blockK tile per
// worker.
//
// # Backward
//
// D = rowsum(dO∘O) (less dL when L has a gradient); for each key/value
// block, for each query block that sees it, recompute S and P = exp(S − L)
// from the saved L, then
//
//	dV += Pᵀ·dO    dP = dO·Vᵀ    dS = P∘(dP − D)
//	dQ += dS·K·scale    dK += dSᵀ·Q·scale
//
// with the same rules for masked keys: key tiles end at KeyLengths[b], the
// masked entries of P and dS are set to 0, and each row of dQ sums over its
// visible keys only.
//
// The tiles are held transposed (Sᵀ = K·Qᵀ) so that the per-query L and D
// run along their rows. The tile products run on internal/kernels/gemm, the
// exponentials inside the score product's micro-kernel (forward, float32
// on AVX-512: gemm.ScoreExp) or on internal/kernels/vec's tile kernels,
// one call per tile (forward: running maximum, exponentials and row sums;
// backward: P and dS = P∘(dP − D) in one pass after both products); Q and dO (backward)
// are copied once in transposed blocks, and K (forward) a block at a time
// by the unit that reads it (or once, where that would copy each block
// many times), so that most products are A·B, the micro-kernel's fastest
// form. Work is split over
// (batch, kv head, chunk of key blocks); a chunk owns its dK and dV rows
// and sums the query heads that share its kv head, and dQ contributions of
// chunks after the first go to partial buffers added in a fixed order, so
// results are bit-identical from run to run. The large temporaries and the
// workers' scratch are kept between calls (scratch.go): a warm call
// allocates no buffer.
//
// # Graph
//
// The forward op's value packs O, L and L's rounding residual; small ops
// copy O and L out (a view sharing the packed array would be overwritten by
// Gorgonia's in-place ops: see ops.go), so L reaches the backward through
// the graph and the ops hold no mutable state. The backward's value packs
// dQ, dK and dV, taken out as views. Both Gorgonia machines work: the
// TapeMachine through SymDiff, the LispMachine through DoDiff.
//
// # Devices
//
// forwardCompute and backwardCompute (compute.go) are the only entry points
// of the computation, on plain slices and a params struct: a device backend
// adds its branch there.
package attention
