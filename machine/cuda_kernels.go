package machine

import (
	"strconv"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/graph"
)

// NNSpec is what a device kernel needs to know of one of nn's ops, which give it through
// NNSpecer (their op kind, "nn.affineOp" and so on, says which fields apply):
//
//	affine:   Scale, Shift (inputs x, γ when Scale, β when Shift)
//	colSum:   Prod (Σ_r x∘g rather than Σ_r g)
//	gelu:     Grad (inputs x, dy)
//	matmul:   TransA, TransB
//	norm, normGrad: Center (LayerNorm; RMSNorm without), Eps
//	heads:    Split, B, N, H, D, Off, C (see nn's headsOp)
//	xent, xentGrad: Ignore (the ignore index of the cross-entropy's targets)
type NNSpec struct {
	Scale, Shift   bool
	Prod, Grad     bool
	TransA, TransB bool
	Center         bool
	Eps            float64
	Split          bool
	B, N, H, D     int
	Off, C         int
	Ignore         int
}

// NNSpecer is implemented by the descriptions of nn's ops (graph.DefOf).
type NNSpecer interface{ DeviceSpec() NNSpec }

// The device descriptions that ops/softmax and ops/attention give (their ops'
// graph.OpDef).
type (
	softmaxSpecer interface {
		DeviceSpec(x tensor.Shape) cuda.SoftmaxBuffers
	}
	attentionSpecer interface {
		DeviceSpec() cuda.AttentionBuffers
		KeyLengths() []int
	}
	scatterSpecer interface{ ScatterOffset() int }
)

// cudaKernels is the CUDA backend's registry: the op kinds of nn's layers, ops/softmax,
// ops/attention and the Gorgonia ops a GPT's graph and its gradient use. A maker returns a
// nil kernel for an instance it does not cover (the node then runs on the host).
func cudaKernels(c *cudaBackend) Registry {
	return Registry{
		"gorgonia.elemBinOp":   c.pointwise,
		"gorgonia.elemUnaryOp": c.pointwise,
		"gorgonia.linAlgBinOp": c.linAlg,
		"gorgonia.transposeOp": c.move,
		"gorgonia.sliceOp":     c.move,
		"gorgonia.sliceIncrOp": c.move,
		"gorgonia.concatOp":    c.move,
		"gorgonia.sumOp":       c.sumAny,
		"gorgonia.sizeOp":      c.constant,
		"gorgonia.reshapeOp":   c.copyOp,
		"gorgonia.repeatOp":    c.repeat,
		"nn.affineOp":          c.affine,
		"nn.colSumOp":          c.colSum,
		"nn.geluOp":            c.gelu,
		"nn.matmulOp":          c.matmul,
		"nn.normOp":            c.norm,
		"nn.normGradOp":        c.normGrad,
		"nn.headsOp":           c.heads,
		"nn.gatherOp":          c.gather,
		"nn.linearOp":          c.linear,
		"nn.xentOp":            c.xent,
		"nn.xentGradOp":        c.xent,
		"nn.scatterAddOp":      c.scatterAdd,
		"softmax.fwdOp":        c.softmax,
		"softmax.bwdOp":        c.softmax,
		"attention.fwdOp":      c.attention,
		"attention.bwdOp":      c.attention,
		"attention.scatterOp":  c.attnScatter,
		"attention.takeOp":     c.take,
	}
}

// operands returns the device buffers of out and in.
func operands(out Operand, in []Operand) (*cuda.Buffer, []*cuda.Buffer, error) {
	y, err := device(out)
	if err != nil {
		return nil, nil, err
	}
	xs := make([]*cuda.Buffer, len(in))
	for i, o := range in {
		if xs[i], err = device(o); err != nil {
			return nil, nil, err
		}
	}
	return y, xs, nil
}

// isFloat reports whether every operand holds float32 or float64 values of one type.
func floats(out Operand, in ...Operand) bool {
	dt := out.Buf.Dtype()
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return false
	}
	for _, o := range in {
		if o.Buf.Dtype() != dt {
			return false
		}
	}
	return true
}

// flat is the index space of a contiguous copy of n elements.
func flat(n int) ([4]int, [4]int) { return [4]int{1, 1, 1, n}, [4]int{0, 0, 0, 1} }

// copyOp: a reshape the machine does not share as a view (a scalar's), a contiguous copy.
func (c *cudaBackend) copyOp(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 1 || !floats(out, in...) || size(in[0].Shape) != size(out.Shape) {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	shape, stride := flat(y.Len())
	p := cuda.StridedParams{Shape: shape, X: x[0], Y: y, XStride: stride, YStride: stride, Alpha: 1}
	return func() error { return cuda.Strided(p) }, nil
}

// constant: an op whose value depends on its inputs' shapes only (Gorgonia's SizeOf), computed
// once on the host by the op itself and written at each run.
func (c *cudaBackend) constant(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if !out.Shape.IsScalar() || !floats(out) {
		return nil, nil
	}
	args := make([]gorgonia.Value, len(in))
	for i, o := range in {
		v, err := newHostValue(o.Buf.Dtype(), o.Shape)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	v, err := op.Do(args...)
	if err != nil {
		return nil, nil
	}
	var fill float64
	switch x := v.Data().(type) {
	case float32:
		fill = float64(x)
	case float64:
		fill = x
	default:
		return nil, nil
	}
	y, err := device(out)
	if err != nil {
		return nil, err
	}
	shape, stride := flat(1)
	p := cuda.StridedParams{Shape: shape, Y: y, YStride: stride, Fill: fill}
	return func() error { return cuda.Strided(p) }, nil
}

// sum: Gorgonia's sum over every axis (to a scalar) or over leading axes, as column sums in
// float64 (deterministic).
func (c *cudaBackend) sum(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 1 || !floats(out, in...) {
		return nil, nil
	}
	xs := in[0].Shape
	rows, d := size(xs), 1
	if !out.Shape.IsScalar() {
		axes, ok := sumAxes(op.String())
		if !ok || len(axes) >= len(xs) {
			return nil, nil
		}
		for i, a := range axes { // leading axes 0..k−1 only
			if a != i {
				return nil, nil
			}
		}
		rows = 1
		for _, n := range xs[:len(axes)] {
			rows *= n
		}
		d = size(xs) / rows
		if d != size(out.Shape) {
			return nil, nil
		}
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	work, err := c.alloc(cuda.Float64, cuda.ColSumWorkspace(rows, d))
	if err != nil {
		return nil, err
	}
	p := cuda.ColSumParams{Rows: rows, D: d, G: x[0], Out: y, Work: work}
	return func() error { return cuda.ColSum(p) }, nil
}

// sumAxes parses the axes of Gorgonia's sumOp from its String, "Σ[0 1]".
func sumAxes(s string) ([]int, bool) {
	i, j := strings.Index(s, "["), strings.Index(s, "]")
	if !strings.HasPrefix(s, "Σ") || i < 0 || j < i {
		return nil, false
	}
	var axes []int
	for _, f := range strings.Fields(s[i+1 : j]) {
		a, err := strconv.Atoi(f)
		if err != nil {
			return nil, false
		}
		axes = append(axes, a)
	}
	return axes, len(axes) > 0
}

// repeat: Gorgonia's repeat of axes of length 1 (the broadcasts of a loss's gradient), a
// strided copy with stride 0 along the repeated axes. Its second and later inputs are the
// repeat counts, which the output's shape already says.
func (c *cudaBackend) repeat(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) < 1 || !floats(out, in[0]) {
		return nil, nil
	}
	xs, ys := in[0].Shape, out.Shape
	if xs.IsScalar() {
		xs = tensor.Shape{}
	}
	if len(xs) != len(ys) || len(ys) > 4 {
		return nil, nil
	}
	var shape, xst, yst [4]int
	off := 4 - len(ys)
	for k := range shape {
		shape[k] = 1
	}
	xStride, yStride := 1, 1
	for k := len(ys) - 1; k >= 0; k-- {
		shape[off+k] = ys[k]
		yst[off+k] = yStride
		yStride *= ys[k]
		switch {
		case xs[k] == ys[k]:
			xst[off+k] = xStride
		case xs[k] == 1:
			xst[off+k] = 0
		default:
			return nil, nil
		}
		xStride *= xs[k]
	}
	y, err := device(out)
	if err != nil {
		return nil, err
	}
	x, err := device(in[0])
	if err != nil {
		return nil, err
	}
	p := cuda.StridedParams{Shape: shape, X: x, Y: y, XStride: xst, YStride: yst, Alpha: 1}
	return func() error { return cuda.Strided(p) }, nil
}

// nnOperands starts the maker of one of nn's ops: the op's parameters and the device buffers
// of out and in, with ok true when in holds arity(sp) operands of out's float dtype (ok false:
// the maker does not cover this instance).
func nnOperands(op gorgonia.Op, out Operand, in []Operand, arity func(NNSpec) int) (sp NNSpec, y *cuda.Buffer, x []*cuda.Buffer, ok bool, err error) {
	sp, ok = nnSpec(op)
	if !ok || len(in) != arity(sp) || !floats(out, in...) {
		return sp, nil, nil, false, nil
	}
	y, x, err = operands(out, in)
	return sp, y, x, err == nil, err
}

// arity is the arity function of an op with n inputs.
func arity(n int) func(NNSpec) int { return func(NNSpec) int { return n } }

// nnSpec returns the description of one of nn's ops.
func nnSpec(op gorgonia.Op) (NNSpec, bool) {
	s, ok := graph.DefOf(op).(NNSpecer)
	if !ok {
		return NNSpec{}, false
	}
	return s.DeviceSpec(), true
}

// lastAxis returns rows and d of a value of shape s viewed as [rows, d].
func lastAxis(s tensor.Shape) (rows, d int) {
	if s.IsScalar() || len(s) == 0 {
		return 1, 1
	}
	d = s[len(s)-1]
	return size(s) / d, d
}

func (c *cudaBackend) affine(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, func(sp NNSpec) int { return 1 + btoi(sp.Scale) + btoi(sp.Shift) })
	if !ok || err != nil {
		return nil, err
	}
	var gamma, beta *cuda.Buffer
	i := 1
	if sp.Scale {
		gamma, i = x[i], i+1
	}
	if sp.Shift {
		beta = x[i]
	}
	return func() error { return cuda.Affine(y, x[0], gamma, beta) }, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *cudaBackend) colSum(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, func(sp NNSpec) int { return 1 + btoi(sp.Prod) })
	if !ok || err != nil {
		return nil, err
	}
	rows, d := lastAxis(in[0].Shape)
	work, err := c.alloc(cuda.Float64, cuda.ColSumWorkspace(rows, d))
	if err != nil {
		return nil, err
	}
	p := cuda.ColSumParams{Rows: rows, D: d, G: x[0], Out: y, Work: work}
	if sp.Prod { // Σ_r x∘g: inputs x, g
		p.X, p.G = x[0], x[1]
	}
	return func() error { return cuda.ColSum(p) }, nil
}

func (c *cudaBackend) gelu(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, func(sp NNSpec) int { return 1 + btoi(sp.Grad) })
	if !ok || err != nil {
		return nil, err
	}
	if sp.Grad {
		return func() error { return cuda.GELUBackward(y, x[0], x[1]) }, nil
	}
	return func() error { return cuda.GELU(y, x[0]) }, nil
}

// matmul: C = op(A)·op(B) by cuBLAS, float32 products in float32.
func (c *cudaBackend) matmul(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, arity(2))
	if !ok || err != nil || len(in[0].Shape) != 2 || len(in[1].Shape) != 2 || len(out.Shape) != 2 {
		return nil, err
	}
	k := pick(sp.TransA, in[0].Shape[0], in[0].Shape[1])
	p := cuda.GemmParams{TransA: sp.TransA, TransB: sp.TransB, M: out.Shape[0], N: out.Shape[1], K: k, Alpha: 1, A: x[0], B: x[1], C: y}
	return func() error { return cuda.Gemm(p) }, nil
}

// norm: x̂ of LayerNorm or RMSNorm (nn's normOp; its gain and bias are an affine op).
func (c *cudaBackend) norm(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, arity(1))
	if !ok || err != nil {
		return nil, err
	}
	rows, d := lastAxis(in[0].Shape)
	p, err := c.normParams(rows, d, sp, x[0])
	if err != nil {
		return nil, err
	}
	p.Y = y
	if c.norms == nil {
		c.norms = map[normKey]cuda.NormParams{}
	}
	c.norms[normKey{in[0].Buf, in[0].Off, sp.Center, sp.Eps}] = p
	return func() error { return cuda.NormForward(p) }, nil
}

// normGrad: dx of x̂ from x and g = ∂x̂, with the row statistics of the forward over the same
// x, or recomputed first (as nn does) when there is none on the device.
func (c *cudaBackend) normGrad(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, arity(2))
	if !ok || err != nil {
		return nil, err
	}
	rows, d := lastAxis(in[0].Shape)
	if fwd, ok := c.norms[normKey{in[0].Buf, in[0].Off, sp.Center, sp.Eps}]; ok && fwd.Rows == rows && fwd.D == d {
		p := cuda.NormParams{Rows: rows, D: d, Eps: sp.Eps, RMS: !sp.Center, X: x[0], Mean: fwd.Mean, Rstd: fwd.Rstd, DY: x[1], DX: y}
		return func() error { return cuda.NormBackward(p) }, nil
	}
	p, err := c.normParams(rows, d, sp, x[0])
	if err != nil {
		return nil, err
	}
	p.DY, p.DX = x[1], y
	return func() error {
		if err := cuda.NormForward(p); err != nil {
			return err
		}
		return cuda.NormBackward(p)
	}, nil
}

// normParams returns the norm's description over x [rows, d] with its statistics' buffers.
func (c *cudaBackend) normParams(rows, d int, sp NNSpec, x *cuda.Buffer) (cuda.NormParams, error) {
	mean, err := c.alloc(cuda.Float64, rows)
	if err != nil {
		return cuda.NormParams{}, err
	}
	rstd, err := c.alloc(cuda.Float64, rows)
	if err != nil {
		return cuda.NormParams{}, err
	}
	return cuda.NormParams{Rows: rows, D: d, Eps: sp.Eps, RMS: !sp.Center, X: x, Mean: mean, Rstd: rstd}, nil
}

// heads: nn's headsOp, x [B·N, C] columns [Off, Off+H·D) ↔ [B, H, N, D], on cuda.Heads (16
// bytes at a time, the merge writing the zeros of the other columns itself), or beyond its
// 2³¹ elements a strided copy over the index space [B, H, N, D] (the merge zeroing its output
// first when the heads do not cover every column).
func (c *cudaBackend) heads(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, y, x, ok, err := nnOperands(op, out, in, arity(1))
	if !ok || err != nil {
		return nil, err
	}
	if max(size(out.Shape), size(in[0].Shape)) < 1<<31 {
		hp := cuda.HeadsParams{Split: sp.Split, B: sp.B, N: sp.N, H: sp.H, D: sp.D, C: sp.C, Off: sp.Off, X: x[0], Y: y}
		return func() error { return cuda.Heads(hp) }, nil
	}
	rowsStride := [4]int{sp.N * sp.C, sp.D, sp.C, 1}
	headsStride := [4]int{sp.H * sp.N * sp.D, sp.N * sp.D, sp.D, 1}
	p := cuda.StridedParams{Shape: [4]int{sp.B, sp.H, sp.N, sp.D}, X: x[0], Y: y, Alpha: 1}
	if sp.Split {
		p.XOff, p.XStride, p.YStride = sp.Off, rowsStride, headsStride
		return func() error { return cuda.Strided(p) }, nil
	}
	p.YOff, p.XStride, p.YStride = sp.Off, headsStride, rowsStride
	if sp.H*sp.D == sp.C {
		return func() error { return cuda.Strided(p) }, nil
	}
	return func() error {
		if err := y.Zero(); err != nil {
			return err
		}
		return cuda.Strided(p)
	}, nil
}

// gather: y[m, :] = table[idx[m], :] (indices stored as int32).
func (c *cudaBackend) gather(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 2 || !floats(out, in[0]) || len(in[0].Shape) != 2 {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	d := in[0].Shape[1]
	c.bound(in[1], in[0].Shape[0])
	return func() error { return cuda.Gather(y, x[0], x[1], d) }, nil
}

// scatterAdd: dtable [V, D] from (table, idx, g), in increasing m, no atomics.
func (c *cudaBackend) scatterAdd(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 3 || !floats(out, in[0], in[2]) || len(out.Shape) != 2 {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	d := out.Shape[1]
	c.bound(in[1], out.Shape[0])
	return func() error { return cuda.ScatterAdd(y, x[1], x[2], d, false) }, nil
}

// softmax: the softmax family forward (input x) and backward (inputs y, dy; x, y, dy for
// log-sum-exp).
func (c *cudaBackend) softmax(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	s, ok := graph.DefOf(op).(softmaxSpecer)
	if !ok || !floats(out, in...) {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(OpKind(op), "fwdOp") {
		p := s.DeviceSpec(in[0].Shape)
		p.X, p.Y = x[0], y
		return func() error { return cuda.SoftmaxForwardBuffers(p) }, nil
	}
	var p cuda.SoftmaxBuffers
	switch len(in) {
	case 2: // y, dy
		p = s.DeviceSpec(in[0].Shape)
		p.Y, p.DY = x[0], x[1]
	case 3: // x, y, dy
		p = s.DeviceSpec(in[0].Shape)
		p.X, p.Y, p.DY = x[0], x[1], x[2]
	default:
		return nil, nil
	}
	p.DX = y
	return func() error { return cuda.SoftmaxBackwardBuffers(p) }, nil
}

// attention: the fused forward (q, k, v → [O | L | LRes]) and backward (q, k, v, packed,
// dPacked → [dQ | dK | dV]) on views of the packed buffers.
func (c *cudaBackend) attention(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	s, ok := graph.DefOf(op).(attentionSpecer)
	if !ok || !floats(out, in...) {
		return nil, nil
	}
	p := s.DeviceSpec()
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	if kl := s.KeyLengths(); kl != nil {
		b, err := c.alloc(cuda.Int32, len(kl))
		if err != nil {
			return nil, err
		}
		k32 := make([]int32, len(kl))
		for i, n := range kl {
			k32[i] = int32(n)
		}
		if err := b.Upload(k32); err != nil {
			return nil, err
		}
		p.KeyLengths = b
	}
	oLen, lLen, kLen := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq, p.B*p.Hkv*p.Nk*p.D
	pieces := func(b *cuda.Buffer, lens ...int) ([]*cuda.Buffer, error) {
		out := make([]*cuda.Buffer, len(lens))
		off := 0
		for i, n := range lens {
			v, err := b.View(off, n)
			if err != nil {
				return nil, err
			}
			out[i], off = v, off+n
		}
		return out, nil
	}
	p.Q, p.K, p.V = x[0], x[1], x[2]
	if len(in) == 3 {
		pk, err := pieces(y, oLen, lLen, lLen)
		if err != nil {
			return nil, err
		}
		p.O, p.L, p.LRes = pk[0], pk[1], pk[2]
		// The tensor-core forward's workspace (K and V converted once per call), planned
		// here with the other buffers; none when the problem runs other kernels. Where its
		// kernels keep bfloat16 planes for the backward, the workspace is those planes.
		if n := p.PlanesSize(); n > 0 {
			if p.Planes, err = c.alloc(cuda.Float32, n); err != nil {
				return nil, err
			}
			if c.planes == nil {
				c.planes = map[opndKey]keptAttention{}
			}
			c.planes[opndKey{out.Buf, out.Off}] = keptAttention{p, qkvKeys(in)}
		}
		if n := p.ForwardScratch(); n > 0 {
			if p.Scratch, err = c.alloc(cuda.Float32, n); err != nil {
				return nil, err
			}
		}
		return func() error { return cuda.AttentionForwardBuffers(p) }, nil
	}
	if len(in) != 5 {
		return nil, nil
	}
	pk, err := pieces(x[3], oLen, lLen, lLen)
	if err != nil {
		return nil, err
	}
	dpk, err := pieces(x[4], oLen, lLen)
	if err != nil {
		return nil, err
	}
	g, err := pieces(y, oLen, kLen, kLen)
	if err != nil {
		return nil, err
	}
	p.O, p.L, p.LRes = pk[0], pk[1], pk[2]
	p.DO, p.DL = dpk[0], dpk[1]
	p.DQ, p.DK, p.DV = g[0], g[1], g[2]
	if p.Delta, err = c.alloc(cuda.Float64, lLen); err != nil {
		return nil, err
	}
	// The planes the forward of this packed output kept, for the same problem and inputs.
	if k, ok := c.planes[opndKey{in[3].Buf, in[3].Off}]; ok {
		f := k.p
		if f.B == p.B && f.H == p.H && f.Hkv == p.Hkv && f.Nq == p.Nq && f.Nk == p.Nk && f.D == p.D &&
			f.Scale == p.Scale && f.Causal == p.Causal && f.Precision == p.Precision &&
			k.in == qkvKeys(in) {
			p.Planes = f.Planes
		}
	}
	// The BF16 backward's workspace (Q, dO, K and V as bfloat16 planes, converted once per
	// call); none for the other precisions, which read float32 tiles.
	if n := p.BackwardScratch(); n > 0 {
		if p.Scratch, err = c.alloc(cuda.Float32, n); err != nil {
			return nil, err
		}
	}
	return func() error { return cuda.AttentionBackwardBuffers(p) }, nil
}

// attnScatter: zeros with the input at [off, off+size) (the gradient of a piece of attention's
// packed value).
func (c *cudaBackend) attnScatter(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	s, ok := graph.DefOf(op).(scatterSpecer)
	if !ok || len(in) != 1 || !floats(out, in...) {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	n, off := size(in[0].Shape), s.ScatterOffset()
	if off < 0 || off+n > y.Len() {
		return nil, nil
	}
	piece, err := y.View(off, n)
	if err != nil {
		return nil, err
	}
	// The rest, before and after the piece, is zeroed.
	var zeros []*cuda.Buffer
	for _, r := range [][2]int{{0, off}, {off + n, y.Len()}} {
		if r[1] > r[0] {
			z, err := y.View(r[0], r[1]-r[0])
			if err != nil {
				return nil, err
			}
			zeros = append(zeros, z)
		}
	}
	return func() error {
		for _, z := range zeros {
			if err := z.Zero(); err != nil {
				return err
			}
		}
		return cuda.Assign(piece, x[0])
	}, nil
}

// take: a piece of a packed value that the machine could not share as a view (its input is
// an input node), copied.
func (c *cudaBackend) take(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	v, ok := op.(Viewer)
	if !ok || len(in) != 1 || !floats(out, in...) {
		return nil, nil
	}
	off, ok := v.ViewOffset()
	if !ok {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	shape, stride := flat(y.Len())
	p := cuda.StridedParams{Shape: shape, X: x[0], Y: y, XOff: off, XStride: stride, YStride: stride, Alpha: 1}
	return func() error { return cuda.Strided(p) }, nil
}
