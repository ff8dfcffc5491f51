//go:build gpu

package cuda

/*
#include "kernels/params.h"
#include <stddef.h>
*/
import "C"

import "unsafe"

// softmaxParams mirrors fg_softmax_params of kernels/params.h field by field; it is passed by
// value to the softmax kernels. TestParamsLayout checks the mirror against the header.
type softmaxParams struct {
	x, y, dy, dx    devptr
	outer, n, inner int64
	kind, reserved  int32
}

// attnParams mirrors fg_attn_params of kernels/params.h field by field; it is passed by value
// to the attention kernels. Strides count elements. TestParamsLayout checks the mirror.
type attnParams struct {
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
}

// fillParams mirrors fg_fill_params of kernels/params.h (fg_debug_fill's parameters).
type fillParams struct {
	x             devptr
	n             int64
	seed          uint64
	scale         float64
	f64, reserved int32
}

// fieldLayout is a struct's size and its fields' offsets, in declaration order.
type fieldLayout struct {
	size    uintptr
	offsets []uintptr
}

// cLayouts returns the layouts of the C structs as the C compiler sees them.
func cLayouts() (softmax, attn, fill fieldLayout) {
	var s C.fg_softmax_params
	softmax = fieldLayout{unsafe.Sizeof(s), []uintptr{
		unsafe.Offsetof(s.x), unsafe.Offsetof(s.y), unsafe.Offsetof(s.dy), unsafe.Offsetof(s.dx),
		unsafe.Offsetof(s.outer), unsafe.Offsetof(s.n), unsafe.Offsetof(s.inner),
		unsafe.Offsetof(s.kind), unsafe.Offsetof(s.reserved),
	}}
	var a C.fg_attn_params
	attn = fieldLayout{unsafe.Sizeof(a), []uintptr{
		unsafe.Offsetof(a.q), unsafe.Offsetof(a.k), unsafe.Offsetof(a.v), unsafe.Offsetof(a.o), unsafe.Offsetof(a.lse),
		unsafe.Offsetof(a.lres), unsafe.Offsetof(a.do_), unsafe.Offsetof(a.dq), unsafe.Offsetof(a.dk), unsafe.Offsetof(a.dv),
		unsafe.Offsetof(a.dlse), unsafe.Offsetof(a.delta), unsafe.Offsetof(a.key_lengths),
		unsafe.Offsetof(a.q_batch), unsafe.Offsetof(a.q_head), unsafe.Offsetof(a.q_row),
		unsafe.Offsetof(a.k_batch), unsafe.Offsetof(a.k_head), unsafe.Offsetof(a.k_row),
		unsafe.Offsetof(a.v_batch), unsafe.Offsetof(a.v_head), unsafe.Offsetof(a.v_row),
		unsafe.Offsetof(a.o_batch), unsafe.Offsetof(a.o_head), unsafe.Offsetof(a.o_row),
		unsafe.Offsetof(a.scale),
		unsafe.Offsetof(a.b), unsafe.Offsetof(a.h), unsafe.Offsetof(a.hkv), unsafe.Offsetof(a.nq),
		unsafe.Offsetof(a.nk), unsafe.Offsetof(a.d),
		unsafe.Offsetof(a.causal), unsafe.Offsetof(a.causal_offset),
	}}
	var f C.fg_fill_params
	fill = fieldLayout{unsafe.Sizeof(f), []uintptr{unsafe.Offsetof(f.x), unsafe.Offsetof(f.n), unsafe.Offsetof(f.seed),
		unsafe.Offsetof(f.scale), unsafe.Offsetof(f.f64), unsafe.Offsetof(f.reserved)}}
	return softmax, attn, fill
}

// goLayouts returns the layouts of the Go mirrors, fields in the same order as cLayouts.
func goLayouts() (softmax, attn, fill fieldLayout) {
	var s softmaxParams
	softmax = fieldLayout{unsafe.Sizeof(s), []uintptr{
		unsafe.Offsetof(s.x), unsafe.Offsetof(s.y), unsafe.Offsetof(s.dy), unsafe.Offsetof(s.dx),
		unsafe.Offsetof(s.outer), unsafe.Offsetof(s.n), unsafe.Offsetof(s.inner),
		unsafe.Offsetof(s.kind), unsafe.Offsetof(s.reserved),
	}}
	var a attnParams
	attn = fieldLayout{unsafe.Sizeof(a), []uintptr{
		unsafe.Offsetof(a.q), unsafe.Offsetof(a.k), unsafe.Offsetof(a.v), unsafe.Offsetof(a.o), unsafe.Offsetof(a.lse),
		unsafe.Offsetof(a.lres), unsafe.Offsetof(a.do), unsafe.Offsetof(a.dq), unsafe.Offsetof(a.dk), unsafe.Offsetof(a.dv),
		unsafe.Offsetof(a.dlse), unsafe.Offsetof(a.delta), unsafe.Offsetof(a.keyLengths),
		unsafe.Offsetof(a.qBatch), unsafe.Offsetof(a.qHead), unsafe.Offsetof(a.qRow),
		unsafe.Offsetof(a.kBatch), unsafe.Offsetof(a.kHead), unsafe.Offsetof(a.kRow),
		unsafe.Offsetof(a.vBatch), unsafe.Offsetof(a.vHead), unsafe.Offsetof(a.vRow),
		unsafe.Offsetof(a.oBatch), unsafe.Offsetof(a.oHead), unsafe.Offsetof(a.oRow),
		unsafe.Offsetof(a.scale),
		unsafe.Offsetof(a.b), unsafe.Offsetof(a.h), unsafe.Offsetof(a.hkv), unsafe.Offsetof(a.nq),
		unsafe.Offsetof(a.nk), unsafe.Offsetof(a.d),
		unsafe.Offsetof(a.causal), unsafe.Offsetof(a.causalOffset),
	}}
	var f fillParams
	fill = fieldLayout{unsafe.Sizeof(f), []uintptr{unsafe.Offsetof(f.x), unsafe.Offsetof(f.n), unsafe.Offsetof(f.seed),
		unsafe.Offsetof(f.scale), unsafe.Offsetof(f.f64), unsafe.Offsetof(f.reserved)}}
	return softmax, attn, fill
}
