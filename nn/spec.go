package nn

import "github.com/flashgorgon/flashgorgon/machine"

// The parameters of nn's ops as a device backend needs them (machine.NNSpecer): the op kind
// (opBase.OpKind) says which fields apply.

// DeviceSpec returns the op's parameters for a device kernel.
func (o opBase) DeviceSpec() machine.NNSpec {
	if s, ok := o.k.(interface{ spec() machine.NNSpec }); ok {
		return s.spec()
	}
	return machine.NNSpec{}
}

func (k affineOp) spec() machine.NNSpec   { return machine.NNSpec{Scale: k.scale, Shift: k.shift} }
func (k colSumOp) spec() machine.NNSpec   { return machine.NNSpec{Prod: k.prod} }
func (k geluOp) spec() machine.NNSpec     { return machine.NNSpec{Grad: k.grad} }
func (k matmulOp) spec() machine.NNSpec   { return machine.NNSpec{TransA: k.tA, TransB: k.tB} }
func (k normOp) spec() machine.NNSpec     { return machine.NNSpec{Center: k.center, Eps: k.eps} }
func (k normGradOp) spec() machine.NNSpec { return machine.NNSpec{Center: k.center, Eps: k.eps} }
func (k xentOp) spec() machine.NNSpec     { return machine.NNSpec{Ignore: k.ignore} }
func (k xentGradOp) spec() machine.NNSpec { return machine.NNSpec{Ignore: k.ignore} }
func (k headsOp) spec() machine.NNSpec {
	return machine.NNSpec{Split: k.split, B: k.b, N: k.n, H: k.h, D: k.d, Off: k.off, C: k.c}
}
