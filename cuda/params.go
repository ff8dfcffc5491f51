package cuda

import "structs"

// The kernel parameter structs, passed by value to the kernels: each kernel takes one of them
// as its only parameter, and launch hands the driver the bytes of the Go value. These Go
// structs are the definition; kernels/params.h declares the same structs for the CUDA side,
// and TestParamsHeader checks, without a C compiler, that the header lists the same fields
// in the same order with the same C types, so that C's layout rules give every field the
// offset it has here (and the structs the same size).
//
// Device pointers are carried as 64-bit integers (devptr), so that the structs hold no Go
// pointers. Strides count elements, not bytes.

// softmaxParams is fg_softmax_params: one softmax-family op over x viewed as
// [outer, n, inner] (see SoftmaxParams).
type softmaxParams struct {
	_               structs.HostLayout
	x, y, dy, dx    devptr
	outer, n, inner int64
	kind, reserved  int32
}

// attnParams is fg_attn_params: one attention problem (see AttentionParams and params.h's
// description of the fields).
type attnParams struct {
	_                    structs.HostLayout
	q, k, v, o, lse      devptr
	lres                 devptr
	do, dq, dk, dv       devptr
	dlse, delta          devptr
	keyLengths           devptr
	qBatch, qHead, qRow  int64
	kBatch, kHead, kRow  int64
	vBatch, vHead, vRow  int64
	oBatch, oHead, oRow  int64
	scale                float64
	b, h, hkv, nq, nk, d int32
	causal, causalOffset int32
	precision            int32 // Precision; the launcher picks the forward kernel by it
	kvTiles              int32 // 1: k and v are the forward's bfloat16 tiles (AttentionBuffers.Planes)
}

// fillParams is fg_fill_params, fg_debug_fill's parameters.
type fillParams struct {
	_             structs.HostLayout
	x             devptr
	n             int64
	seed          uint64
	scale         float64
	f64, reserved int32
}
