package cuda

import (
	"fmt"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// The launch functions: for each op, the kernel configuration (chosen here only, per head
// dimension and element type), the buffers, the launches and the copies back.

// attnCfg is one tile configuration of an attention kernel: the head-dimension tier D (the
// kernel handles every d <= D, zero-padding the columns past d), the query and key tile rows
// BM and BN, and the thread grid TR x TC.
type attnCfg struct{ D, BM, BN, TR, TC int }

func (c attnCfg) threads() int { return c.TR * c.TC }

func (c attnCfg) suffix(dt dtype) string {
	return fmt.Sprintf("%s_d%d_m%d_n%d_r%d_c%d", dt, c.D, c.BM, c.BN, c.TR, c.TC)
}

// The configurations instantiated in kernels/attention_fwd.cu and kernels/attention_bwd.cu,
// by element type, smallest tier first. float64 uses smaller tiles: its registers and shared
// memory hold half as many elements. Each kernel keeps at most 64 float32 (32 float64)
// accumulators per thread and at most about 140 KiB of shared memory (the A100 allows 163).
var (
	fwdCfgs = [2][]attnCfg{
		f32: {{32, 64, 64, 16, 8}, {64, 64, 64, 16, 8}, {128, 64, 32, 16, 8}, {256, 32, 32, 8, 16}},
		f64: {{32, 32, 32, 8, 16}, {64, 32, 32, 8, 16}, {128, 32, 32, 8, 16}, {256, 32, 32, 8, 32}},
	}
	dkdvCfgs = [2][]attnCfg{
		f32: {{32, 32, 32, 8, 16}, {64, 32, 32, 8, 16}, {128, 32, 32, 8, 16}, {256, 32, 32, 8, 32}},
		f64: {{32, 32, 32, 8, 16}, {64, 32, 32, 8, 16}, {128, 32, 16, 8, 16}, {256, 16, 16, 16, 16}},
	}
	dqCfgs = [2][]attnCfg{
		f32: {{32, 64, 32, 16, 8}, {64, 64, 32, 16, 8}, {128, 32, 32, 8, 16}, {256, 32, 32, 8, 32}},
		f64: {{32, 32, 32, 8, 16}, {64, 32, 32, 8, 16}, {128, 32, 16, 8, 16}, {256, 16, 16, 16, 16}},
	}
)

// pickCfg returns the configuration of the smallest tier that holds d.
func pickCfg(cfgs []attnCfg, d int) attnCfg {
	for _, c := range cfgs {
		if d <= c.D {
			return c
		}
	}
	return cfgs[len(cfgs)-1] // unreachable: check rejects d > MaxHeadDim
}

// Shared memory of each kernel, the same expressions as the kernels' SMEM constants (a kernel
// traps when given less).
func fwdSmem(c attnCfg, dt dtype) int {
	return (c.BM*(c.D+1) + c.BN*(c.D+1) + c.BM*(c.BN+1)) * dt.size()
}

func dkdvSmem(c attnCfg, dt dtype) int {
	return c.BM*8 + (2*c.BN*(c.D+1)+2*c.BM*(c.D+1)+2*c.BN*(c.BM+1)+2*c.BM)*dt.size()
}

func dqSmem(c attnCfg, dt dtype) int {
	return (2*c.BM*(c.D+1) + 2*c.BN*(c.D+1) + c.BM*(c.BN+1)) * dt.size()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// start launches kernel k with the params struct at params.
func (s *state) start(module, name string, grid [3]int, block, smem int, params unsafe.Pointer) error {
	k, err := s.function(module, name, smem)
	if err != nil {
		return err
	}
	return launch(k.fn, name, grid, block, smem, params)
}

// ---- softmax ---------------------------------------------------------------------------------

// SoftmaxForward runs the forward of p.Kind on the device (see SoftmaxParams): X is copied to
// the device, the kernel runs, Y is copied back. It returns ErrNoDevice when no device is in
// use and a *Error when CUDA fails.
func SoftmaxForward(p SoftmaxParams) error { return softmaxRun(p, false) }

// SoftmaxBackward runs the backward of p.Kind on the device (see SoftmaxParams): Y, DY (and X
// for LogSumExp) are copied to the device, the kernel runs, DX is copied back. It returns
// ErrNoDevice when no device is in use and a *Error when CUDA fails.
func SoftmaxBackward(p SoftmaxParams) error { return softmaxRun(p, true) }

func softmaxRun(p SoftmaxParams, backward bool) error {
	dt, err := p.check(backward)
	if err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	if p.Outer*p.Inner == 0 {
		return nil // nothing to write
	}
	op := p.Kind.String() + " forward"
	if backward {
		op = p.Kind.String() + " backward"
	}
	return run(op, func(s *state) error {
		sc := &scope{s: s}
		defer sc.done()
		kp := softmaxParams{outer: int64(p.Outer), n: int64(p.N), inner: int64(p.Inner), kind: int32(p.Kind)}
		var err error
		up := func(dst *devptr, x any, what string) {
			if err == nil && x != nil {
				*dst, err = sc.upload(x, what)
			}
		}
		out := func(dst *devptr, x any) {
			if err == nil {
				_, n := hostBytes(x)
				*dst, err = sc.output(n)
			}
		}
		if !backward {
			up(&kp.x, p.X, "X")
			out(&kp.y, p.Y)
		} else {
			if p.Kind == LogSumExp {
				up(&kp.x, p.X, "X")
			}
			up(&kp.y, p.Y, "Y")
			up(&kp.dy, p.DY, "DY")
			out(&kp.dx, p.DX)
		}
		if err != nil {
			return err
		}
		if err := s.softmaxKernel(&kp, dt, backward); err != nil {
			return err
		}
		if err := ctxSynchronize("softmax kernel"); err != nil {
			return err
		}
		if backward {
			return download(p.DX, kp.dx, "DX")
		}
		return download(p.Y, kp.y, "Y")
	})
}

// softmaxKernel launches the softmax-family kernel of kp (rows: a warp per row when inner is
// 1; else a thread per (outer, inner) column).
func (s *state) softmaxKernel(kp *softmaxParams, dt dtype, backward bool) error {
	dir := "fwd"
	if backward {
		dir = "bwd"
	}
	var name string
	var grid [3]int
	if kp.inner == 1 {
		name = fmt.Sprintf("fg_softmax_%s_rows_%s", dir, dt)
		grid = [3]int{ceilDiv(int(kp.outer), 4), 1, 1}
	} else {
		name = fmt.Sprintf("fg_softmax_%s_cols_%s", dir, dt)
		grid = [3]int{ceilDiv(int(kp.outer*kp.inner), 128), 1, 1}
	}
	return s.start("softmax", name, grid, 128, 0, unsafe.Pointer(kp))
}

// ---- attention -------------------------------------------------------------------------------

// attnBase fills the sizes, strides, options and precision of the kernel params for p (contiguous
// layouts; the kernels' fg_key_limit applies attnspec's rule from causal, causal_offset and
// the key lengths).
func attnBase(p *attnspec.Problem) attnParams {
	d := int64(p.D)
	kp := attnParams{
		qRow: d, qHead: int64(p.Nq) * d, qBatch: int64(p.H*p.Nq) * d,
		kRow: d, kHead: int64(p.Nk) * d, kBatch: int64(p.Hkv*p.Nk) * d,
		scale: p.Scale,
		b:     int32(p.B), h: int32(p.H), hkv: int32(p.Hkv), nq: int32(p.Nq), nk: int32(p.Nk), d: int32(p.D),
	}
	kp.vRow, kp.vHead, kp.vBatch = kp.kRow, kp.kHead, kp.kBatch
	kp.oRow, kp.oHead, kp.oBatch = kp.qRow, kp.qHead, kp.qBatch
	if p.Causal {
		kp.causal, kp.causalOffset = 1, int32(p.Nk-p.Nq)
	}
	kp.precision = int32(p.Precision.Resolved())
	return kp
}

// kernelParams returns the kernel params of p's problem and precision, without pointers.
func (p *AttentionParams) kernelParams() attnParams {
	pr := p.problem()
	return attnBase(&pr)
}

// keyLengths32 converts KeyLengths for the device (check bounds them by Nk).
func keyLengths32(kl []int) []int32 {
	out := make([]int32, len(kl))
	for i, n := range kl {
		out[i] = int32(n)
	}
	return out
}

// AttentionForward computes O and L from Q, K and V on the device (see AttentionParams), with
// the FlashAttention-2 kernel. Every operand is copied in and out on each call
// (AttentionForwardBuffers keeps them on the device). It returns
// ErrNoDevice when no device is in use, an error wrapping ErrUnsupported for problems the
// kernels do not cover, and a *Error when CUDA fails.
func AttentionForward(p AttentionParams) error { return attentionForward(p, 2) }

// attentionForward runs forward kernel variant 1 (one thread per row), 2 (FlashAttention-2, or
// the tensor-core kernel pickMMA chooses for p.Precision), or a tensor-core variant (mmaCfg).
func attentionForward(p AttentionParams, variant int) error {
	dt, err := p.check(false)
	if err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("attention forward", func(s *state) error {
		sc := &scope{s: s}
		defer sc.done()
		kp, err := attnUpload(sc, &p, false)
		if err != nil {
			return err
		}
		_, oBytes := hostBytes(p.O)
		if kp.o, err = sc.output(oBytes); err != nil {
			return err
		}
		_, lBytes := hostBytes(p.L)
		if kp.lse, err = sc.output(lBytes); err != nil {
			return err
		}
		if p.LRes != nil {
			_, n := hostBytes(p.LRes)
			if kp.lres, err = sc.output(n); err != nil {
				return err
			}
		}
		if err := s.attnForwardKernels(&kp, dt, variant, sc.alloc, false); err != nil {
			return err
		}
		if err := ctxSynchronize("attention forward kernels"); err != nil {
			return err
		}
		for _, a := range []struct {
			x    any
			d    devptr
			what string
		}{{p.O, kp.o, "O"}, {p.L, kp.lse, "L"}, {p.LRes, kp.lres, "LRes"}} {
			if a.x == nil {
				continue
			}
			if err := download(a.x, a.d, a.what); err != nil {
				return err
			}
		}
		return nil
	})
}

// attnUpload copies Q, K, V, the key lengths and, for the backward, O, DO and DL to the device.
func attnUpload(sc *scope, p *AttentionParams, backward bool) (attnParams, error) {
	kp := p.kernelParams()
	var err error
	up := func(dst *devptr, x any, what string) {
		if err == nil {
			*dst, err = sc.upload(x, what)
		}
	}
	up(&kp.q, p.Q, "Q")
	up(&kp.k, p.K, "K")
	up(&kp.v, p.V, "V")
	if p.KeyLengths != nil {
		up(&kp.keyLengths, keyLengths32(p.KeyLengths), "KeyLengths")
	}
	if backward {
		up(&kp.o, p.O, "O")
		up(&kp.do, p.DO, "DO")
		if p.DL != nil {
			up(&kp.dlse, p.DL, "DL")
		}
		if p.LRes != nil {
			up(&kp.lres, p.LRes, "LRes")
		}
	}
	return kp, err
}

// attnForwardKernels launches the forward on buffers already on the device. scratch gives the
// buffer of a tensor-core kernel's pre-pass (nil: none can be had; kernels without one run).
// With keep, scratch is AttentionBuffers.Planes: the tensor-core kernel must be one that
// keeps its planes (sharesPlanes), and also writes Q's plane there (keptLayout).
func (s *state) attnForwardKernels(kp *attnParams, dt dtype, variant int, scratch func(bytes int64) (devptr, error), keep bool) error {
	var name string
	var grid [3]int
	var block, smem int
	switch variant {
	case 1:
		name = fmt.Sprintf("fg_attn_fwd_v1_%s_d256", dt)
		grid, block = [3]int{ceilDiv(int(kp.nq), 128), int(kp.h), int(kp.b)}, 128
	case 2:
		if c, ok := pickMMA(kp, dt, 0, scratch != nil, s.sm()); ok { // the tensor-core kernels (attention_mma.go)
			return s.startMMA(kp, c, scratch, keep)
		}
		c := pickCfg(fwdCfgs[dt], int(kp.d))
		name = "fg_attn_fwd_v2_" + c.suffix(dt)
		grid, block, smem = [3]int{ceilDiv(int(kp.nq), c.BM), int(kp.h), int(kp.b)}, c.threads(), fwdSmem(c, dt)
	default: // the tensor-core variants (attention_mma.go)
		c, ok := pickMMA(kp, dt, variant, scratch != nil, s.sm())
		if !ok || variant < 3 {
			return fmt.Errorf("cuda: attention forward: no kernel variant %d for %s, %v, d=%d", variant, dt, Precision(kp.precision), kp.d)
		}
		return s.startMMA(kp, c, scratch, keep)
	}
	return s.start("attention_fwd", name, grid, block, smem, unsafe.Pointer(kp))
}

// AttentionBackward computes DQ, DK and DV on the device (see AttentionParams): delta =
// rowsum(DO∘O) − DL, then the dK/dV kernel (a block per key tile) and the dQ kernel (a block
// per query tile), neither using atomics, so the result is the same bits on every run. Every
// operand, L included, is copied from the host. It returns
// ErrNoDevice when no device is in use, an error wrapping ErrUnsupported for problems the
// kernels do not cover, and a *Error when CUDA fails.
func AttentionBackward(p AttentionParams) error { return attentionBackward(p, -1, -1) }

// attentionBackward runs the backward with the tensor-core kernels at indices dkdv and dq of
// mmaBwdCfgs when they are not negative (see pickMMABwd).
func attentionBackward(p AttentionParams, dkdv, dq int) error {
	dt, err := p.check(true)
	if err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("attention backward", func(s *state) error {
		sc := &scope{s: s}
		defer sc.done()
		kp, err := attnUpload(sc, &p, true)
		if err != nil {
			return err
		}
		if kp.lse, err = sc.upload(p.L, "L"); err != nil {
			return err
		}
		_, qBytes := hostBytes(p.DQ)
		_, kBytes := hostBytes(p.DK)
		for _, a := range []struct {
			dst *devptr
			n   int64
		}{{&kp.delta, int64(p.B*p.H*p.Nq) * 8}, {&kp.dq, qBytes}, {&kp.dk, kBytes}, {&kp.dv, kBytes}} {
			if *a.dst, err = sc.output(a.n); err != nil {
				return err
			}
		}
		if err := s.attnBackwardKernels(&kp, dt, dkdv, dq, sc.alloc, nil); err != nil {
			return err
		}
		if err := ctxSynchronize("attention backward kernels"); err != nil {
			return err
		}
		for _, a := range []struct {
			x    any
			d    devptr
			what string
		}{{p.DQ, kp.dq, "DQ"}, {p.DK, kp.dk, "DK"}, {p.DV, kp.dv, "DV"}} {
			if err := download(a.x, a.d, a.what); err != nil {
				return err
			}
		}
		return nil
	})
}

// attnBackwardKernels launches the three backward kernels on buffers already on the device:
// the tensor-core kernels pickMMABwd chooses (dkdv, dq: its indices, or -1), else the FMA ones.
// scratch gives the buffer of the BF16 kernels' pre-pass (nil: none can be had; kernels
// without one run). planes, when not nil, are the planes the forward kept
// (AttentionBuffers.Planes), which the tensor-core kernels read in place of Q, K and V.
func (s *state) attnBackwardKernels(kp *attnParams, dt dtype, dkdv, dq int, scratch func(bytes int64) (devptr, error), planes *keptPlanes) error {
	if kv, q, ok := pickMMABwd(kp, dt, dkdv, dq, scratch != nil, s.sm()); ok { // attention_mma_bwd.go
		return s.startMMABwd(kp, kv, q, scratch, planes)
	}
	d := int(kp.d)
	pre := "fg_attn_bwd_preprocess_" + dt.String()
	rows := int(kp.b) * int(kp.h) * int(kp.nq)
	if err := s.start("attention_bwd_preprocess", pre, [3]int{ceilDiv(rows, 4), 1, 1}, 128, 0, unsafe.Pointer(kp)); err != nil {
		return err
	}
	c := pickCfg(dkdvCfgs[dt], d)
	name := "fg_attn_bwd_dkdv_" + c.suffix(dt)
	grid := [3]int{ceilDiv(int(kp.nk), c.BN), int(kp.hkv), int(kp.b)}
	if err := s.start("attention_bwd", name, grid, c.threads(), dkdvSmem(c, dt), unsafe.Pointer(kp)); err != nil {
		return err
	}
	c = pickCfg(dqCfgs[dt], d)
	name = "fg_attn_bwd_dq_" + c.suffix(dt)
	grid = [3]int{ceilDiv(int(kp.nq), c.BM), int(kp.h), int(kp.b)}
	return s.start("attention_bwd", name, grid, c.threads(), dqSmem(c, dt), unsafe.Pointer(kp))
}
