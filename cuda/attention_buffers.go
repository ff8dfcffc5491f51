package cuda

import (
	"fmt"

	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// AttentionBuffers is AttentionParams on device Buffers: the same sizes, options, formulas and
// kernels (launch.go's tile table), with every operand resident, so that a graph machine runs
// attention without copies. Q [B,H,Nq,D], K and V [B,Hkv,Nk,D], O and DO and DQ [B,H,Nq,D],
// DK and DV [B,Hkv,Nk,D], L, LRes and DL [B,H,Nq]: one element type, Float32 or Float64.
// KeyLengths is nil or Int32 [B] (values in [0, Nk], uploaded by the caller); Delta is the
// backward's Float64 [B·H·Nq] scratch. LRes and DL may be nil. Scratch, when set, is the
// Float32 workspace of the tensor-core kernels' pre-passes, of at least ForwardScratch()
// elements for the forward (the kernel of Precision converts K and V once per call) and
// BackwardScratch() for the backward (BF16: Q, dO, K and V converted once per call); the
// fastest kernels use one; when nil, the fastest kernel without a pre-pass runs.
type AttentionBuffers struct {
	B, H, Hkv, Nq, Nk, D int
	Scale                float64
	Causal               bool
	KeyLengths           *Buffer
	// Precision selects the arithmetic of the forward and the backward for Float32 operands,
	// as AttentionParams.Precision (the zero value runs the FMA kernels).
	Precision Precision
	Scratch   *Buffer
	// Planes, when set and PlanesSize() is not 0 (BF16 on Hopper), is a Float32 buffer of at
	// least PlanesSize() elements that carries Q, K and V rounded to bfloat16 from a forward to
	// its backward: AttentionForwardBuffers writes them there (its kernel rounds them anyway,
	// and needs no Scratch then), and AttentionBackwardBuffers reads them instead of converting
	// Q, K and V again (its Scratch then holds dO's plane only: BackwardScratch shrinks). The
	// backward must follow the forward of the same problem and Q, K, V on the same Planes,
	// with nothing written to Planes between; its results are the same bits as without
	// Planes. Where PlanesSize() is 0, Planes is not used.
	Planes *Buffer

	Q, K, V, O, L, LRes *Buffer
	DO, DL              *Buffer
	DQ, DK, DV, Delta   *Buffer
}

// check validates the sizes and returns the operands of one direction.
func (p *AttentionBuffers) check(op string, backward bool) (dtype, []operand, error) {
	// KeyLengths are on the device here: the problem is checked without them.
	pr := attnspec.Problem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		Precision: p.Precision}
	if err := checkProblem(op, &pr); err != nil {
		return 0, nil, err
	}
	qLen, kLen, lLen := pr.QLen(), pr.KLen(), pr.LLen()
	DT, dt, err := floatOf(op, "Q", p.Q)
	if err != nil {
		return 0, nil, err
	}
	ops := []operand{{name: "Q", b: p.Q, dt: DT, n: qLen}, {name: "K", b: p.K, dt: DT, n: kLen}, {name: "V", b: p.V, dt: DT, n: kLen},
		{name: "O", b: p.O, dt: DT, n: qLen}, {name: "L", b: p.L, dt: DT, n: lLen}, {name: "LRes", b: p.LRes, dt: DT, n: lLen, optional: true},
		{name: "KeyLengths", b: p.KeyLengths, dt: Int32, n: p.B, optional: true}}
	if p.Scratch != nil {
		n := p.forwardScratch(dt)
		if backward {
			n = p.backwardScratch(dt)
		}
		ops = append(ops, operand{name: "Scratch", b: p.Scratch, dt: Float32, n: n, atLeast: true})
	}
	if n := p.planesSize(dt); n > 0 {
		ops = append(ops, operand{name: "Planes", b: p.Planes, dt: Float32, n: n, atLeast: true})
	}
	if backward {
		ops = append(ops, operand{name: "DO", b: p.DO, dt: DT, n: qLen}, operand{name: "DL", b: p.DL, dt: DT, n: lLen, optional: true},
			operand{name: "DQ", b: p.DQ, dt: DT, n: qLen}, operand{name: "DK", b: p.DK, dt: DT, n: kLen}, operand{name: "DV", b: p.DV, dt: DT, n: kLen},
			operand{name: "Delta", b: p.Delta, dt: Float64, n: lLen, atLeast: true})
	}
	return dt, ops, nil
}

// kernel returns the kernels' parameters for p (contiguous layouts).
func (p *AttentionBuffers) kernel() attnParams {
	kp := p.sizing()
	kp.q, kp.k, kp.v, kp.o, kp.lse = p.Q.ptr, p.K.ptr, p.V.ptr, p.O.ptr, p.L.ptr
	kp.lres, kp.keyLengths = ptrOf(p.LRes), ptrOf(p.KeyLengths)
	kp.do, kp.dlse, kp.dq, kp.dk, kp.dv, kp.delta = ptrOf(p.DO), ptrOf(p.DL), ptrOf(p.DQ), ptrOf(p.DK), ptrOf(p.DV), ptrOf(p.Delta)
	return kp
}

// AttentionForwardBuffers computes O, L (and LRes when set) from Q, K and V with the
// FlashAttention-2 kernel, without waiting. Problems the kernels do not cover return an error
// wrapping ErrUnsupported.
func AttentionForwardBuffers(p AttentionBuffers) error { return attentionForwardBuffers(p, 2) }

// attentionForwardBuffers runs forward variant 2 (the default kernels) or a tensor-core variant
// (mmaCfg) on p's buffers.
func attentionForwardBuffers(p AttentionBuffers, variant int) error {
	const op = "attention forward"
	dt, ops, err := p.check(op, false)
	if err != nil {
		return err
	}
	scratch, keep := p.scratch(), p.planesSize(dt) > 0
	if keep { // the forward's workspace is Planes, and it writes Q's plane there too
		scratch = func(int64) (devptr, error) { return p.Planes.ptr, nil }
	}
	return launchOn(op, ops, func(s *state) error {
		kp := p.kernel()
		return s.attnForwardKernels(&kp, dt, variant, scratch, keep)
	})
}

// scratch returns the kernels' workspace allocator over p.Scratch (already sized by check for
// the call), or nil without one: the kernels that need a workspace then refuse.
func (p *AttentionBuffers) scratch() func(int64) (devptr, error) {
	if p.Scratch == nil {
		return nil
	}
	return func(bytes int64) (devptr, error) {
		// check sized it for the default kernels; a pair picked by index (the tests') may need more.
		if have := 4 * int64(p.Scratch.n); bytes > have {
			return 0, fmt.Errorf("cuda: attention: Scratch of %d Float32 elements, the kernels need %d", p.Scratch.n, (bytes+3)/4)
		}
		return p.Scratch.ptr, nil
	}
}

// planesSize is PlanesSize for element type dt, 0 when p.Planes is nil.
func (p *AttentionBuffers) planesSize(dt dtype) int {
	if p.Planes == nil {
		return 0
	}
	kp := p.sizing()
	return keptElems(&kp, dt)
}

// ForwardScratch returns the number of Float32 elements of Scratch that AttentionForwardBuffers
// uses for p (0 when its kernel has no pre-pass: float64, PrecisionFMA, a D without
// tensor-core kernels, or a default kernel without one).
func (p AttentionBuffers) ForwardScratch() int { return p.forwardScratch(p.qType()) }

// qType is the element type of Q (float32 when Q is not set yet).
func (p *AttentionBuffers) qType() dtype {
	if p.Q != nil && p.Q.dt == Float64 {
		return f64
	}
	return f32
}

// sizing returns the kernel parameters that decide which kernels run and their workspace:
// the shapes, scale, mask and precision, no buffers.
func (p *AttentionBuffers) sizing() attnParams {
	return attnBase(&attnspec.Problem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		Precision: p.Precision})
}

func (p *AttentionBuffers) forwardScratch(dt dtype) int {
	kp := p.sizing()
	c, ok := pickMMA(&kp, dt, 0, true, deviceSM())
	if !ok || p.planesSize(dt) > 0 { // the forward's workspace is Planes
		return 0
	}
	return int((c.scratchBytes(&kp) + 3) / 4)
}

// BackwardScratch returns the number of Float32 elements of Scratch that
// AttentionBackwardBuffers uses for p (0 when its kernels have no pre-pass: float64, a
// precision other than PrecisionBF16, a D without tensor-core kernels).
func (p AttentionBuffers) BackwardScratch() int { return p.backwardScratch(p.qType()) }

func (p *AttentionBuffers) backwardScratch(dt dtype) int {
	kp := p.sizing()
	kv, q, ok := pickMMABwd(&kp, dt, -1, -1, true, deviceSM())
	if !ok {
		return 0
	}
	return int((bwdScratchFor(&kp, kv, q, p.planesSize(dt) > 0) + 3) / 4)
}

// AttentionBackwardBuffers computes DQ, DK and DV from Q, K, V, O, L (LRes), DO (and DL) with
// the deterministic backward kernels, without waiting.
func AttentionBackwardBuffers(p AttentionBuffers) error { return backwardBuffersPair(p, -1, -1) }

// backwardBuffersPair is AttentionBackwardBuffers with the tensor-core kernels at indices
// dkdv, dq of mmaBwdCfgs (-1: the defaults; see pickMMABwd).
func backwardBuffersPair(p AttentionBuffers, dkdv, dq int) error {
	const op = "attention backward"
	dt, ops, err := p.check(op, true)
	if err != nil {
		return err
	}
	scratch, keep := p.scratch(), p.planesSize(dt) > 0
	return launchOn(op, ops, func(s *state) error {
		kp := p.kernel()
		var planes *keptPlanes
		if keep {
			k := kept(&kp, p.Planes.ptr)
			planes = &k
		}
		return s.attnBackwardKernels(&kp, dt, dkdv, dq, scratch, planes)
	})
}

// Kernels returns the names of the kernels AttentionForwardBuffers (first; "a+b" where a
// pre-pass a runs before b) and AttentionBackwardBuffers (the rest) launch for p's sizes,
// element type, precision and Scratch, for benchmarks to report.
func (p AttentionBuffers) Kernels() ([]string, error) {
	dt, _, err := p.check("attention kernels", false)
	if err != nil {
		return nil, err
	}
	kp := p.kernel()
	fwd := "fg_attn_fwd_v2_" + pickCfg(fwdCfgs[dt], p.D).suffix(dt)
	if c, ok := pickMMA(&kp, dt, 0, p.Scratch != nil || p.planesSize(dt) > 0, deviceSM()); ok {
		fwd = c.name()
		if c.pre() && !c.fused() {
			_, prep := c.prep()
			fwd = prep + "+" + fwd
		}
	}
	if kv, q, ok := pickMMABwd(&kp, dt, -1, -1, p.Scratch != nil, deviceSM()); ok {
		pre := "fg_attn_bwd_mma_pre"
		if kv.Pre || q.Pre {
			pre, _ = bwdPrepKernel(&kp, p.planesSize(dt) > 0, kv.X3)
		}
		if kv.Split {
			pre += "+" + exactBwdPrep(&kp)
		}
		if kv.Fused {
			return []string{fwd, pre, kv.name()}, nil
		}
		return []string{fwd, pre, kv.name(), q.name()}, nil
	}
	return []string{fwd, "fg_attn_bwd_preprocess_" + dt.String(),
		"fg_attn_bwd_dkdv_" + pickCfg(dkdvCfgs[dt], p.D).suffix(dt), "fg_attn_bwd_dq_" + pickCfg(dqCfgs[dt], p.D).suffix(dt)}, nil
}
