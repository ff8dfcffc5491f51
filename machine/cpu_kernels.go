package machine

import (
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// cpuKernels is the CPU backend's registry: Gorgonia's own ops that a GPT's
// training graph uses, whose Do (tensor's generic loops, one core) costs a
// training step more than nn's layers do at small widths. Each kernel reads
// and writes the planned buffers directly, vectorized (internal/kernels/vec)
// and split over the cores (internal/parallel) in blocks that depend on the
// sizes only, so its result does not depend on GOMAXPROCS:
//
//	gorgonia.elemBinOp  z = x + y, z = x ∘ y      x, y, z of one shape
//	gorgonia.repeatOp   y = x repeated along its axes of length 1
//	gorgonia.sumOp      s = Σ x over every axis (float64 partials of fixed
//	                    blocks, added in block order)
//
// A maker returns a nil kernel for any other instance (another operator,
// broadcasting, an input the caller binds: only values the machine computes
// have buffers on the host), which then runs as its Gorgonia op.
func cpuKernels() Registry {
	return Registry{
		"gorgonia.elemBinOp": cpuElemBin,
		"gorgonia.repeatOp":  cpuRepeat,
		"gorgonia.sumOp":     cpuSum,
	}
}

// Native reports whether b runs nodes of op kind on its own device: the
// CPU every op (its values are host memory), another backend the kinds of
// its registry (a node of any other kind runs on the host with copies).
// Graph builders use it to choose between a fused op and its decomposition
// into ops every backend has.
func Native(b Backend, kind string) bool {
	if _, ok := b.(cpuBackend); ok {
		return true
	}
	_, ok := b.Kernels()[kind]
	return ok
}

// hostData returns the elements of o as a []T, or nil when o has no host
// buffer of element type T.
func hostData[T elem](o Operand) []T {
	b, ok := o.Buf.(*hostBuffer)
	if !ok {
		return nil
	}
	d, ok := b.data.([]T)
	if !ok {
		return nil
	}
	n := size(o.Shape)
	return d[o.Off : o.Off+n : o.Off+n]
}

// allBuffered reports whether every value of vs has a buffer of the plan.
// On a host backend the values the machine computes do, while inputs and
// constants are read where they are bound: a node reading one runs as its
// op, not as a kernel of the registry, whose operands are fixed at binding.
func allBuffered(vs []*value) bool {
	for _, v := range vs {
		if v.base.opnd.Buf == nil {
			return false
		}
	}
	return true
}

// hostBuffered reports whether every operand has a host buffer (on a host
// backend, the values the machine computes: not inputs or constants).
func hostBuffered(in []Operand) bool {
	for _, o := range in {
		if _, ok := o.Buf.(*hostBuffer); !ok {
			return false
		}
	}
	return true
}

// elemGrain is the fewest elements of an elementwise kernel worth a core of
// its own (a µs or two: these kernels are bound by memory, which more cores
// read faster, and handing a chunk to a polling worker costs far less; the
// same as nn's row kernels), elemBlock the unit the work is split in (a
// multiple of the vector widths).
const (
	elemGrain = 8192
	elemBlock = 1024
)

// forBlocks calls f on the blocks [lo, hi) of elemBlock elements covering
// [0, n), split over the cores in runs of at least grain elements.
func forBlocks(n, grain int, f func(lo, hi int)) {
	nb := (n + elemBlock - 1) / elemBlock
	parallel.ForDynamic(nb, max(1, grain/elemBlock), func(b0, b1 int) {
		f(b0*elemBlock, min(b1*elemBlock, n))
	})
}

func cpuElemBin(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 2 || !hostBuffered([]Operand{in[0], in[1], out}) || !floats(out, in...) ||
		!in[0].Shape.Eq(out.Shape) || !in[1].Shape.Eq(out.Shape) {
		return nil, nil
	}
	var mul bool
	switch s := op.String(); {
	case strings.HasPrefix(s, "+ "):
	case strings.HasPrefix(s, "⊙ "):
		mul = true
	default:
		return nil, nil
	}
	if out.Buf.Dtype() == tensor.Float32 {
		return elemBin[float32](mul, out, in), nil
	}
	return elemBin[float64](mul, out, in), nil
}

func elemBin[T vec.Float](mul bool, out Operand, in []Operand) Kernel {
	z, x, y := hostData[T](out), hostData[T](in[0]), hostData[T](in[1])
	return func() error {
		forBlocks(len(z), elemGrain, func(lo, hi int) {
			if mul {
				vec.Mul(z[lo:hi], x[lo:hi], y[lo:hi])
			} else {
				vec.Add(z[lo:hi], x[lo:hi], y[lo:hi])
			}
		})
		return nil
	}
}

// cpuRepeat: Gorgonia's repeat of axes of length 1 (the broadcast of a
// loss's gradient). Its second and later inputs are the repeat counts, which
// the output's shape already says.
func cpuRepeat(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) < 1 || !hostBuffered([]Operand{in[0], out}) || !floats(out, in[0]) {
		return nil, nil
	}
	xs, ys := in[0].Shape, out.Shape
	if xs.IsScalar() {
		xs = tensor.Shape{}
	}
	if ys.IsScalar() || len(xs) != len(ys) {
		return nil, nil
	}
	// xst[k]: the stride of x along output axis k (0 where repeated).
	xst := make([]int, len(ys))
	stride := 1
	for k := len(ys) - 1; k >= 0; k-- {
		switch {
		case xs[k] == ys[k]:
			xst[k] = stride
		case xs[k] == 1:
		default:
			return nil, nil
		}
		stride *= xs[k]
	}
	if out.Buf.Dtype() == tensor.Float32 {
		return repeat[float32](out, in[0], ys, xst), nil
	}
	return repeat[float64](out, in[0], ys, xst), nil
}

// repeat writes y[i] = x[Σ_k i_k·xst[k]] for every index i of shape ys, in
// rows of the last axis: a copy where x has that axis, a fill where it is
// repeated.
func repeat[T vec.Float](out, in Operand, ys tensor.Shape, xst []int) Kernel {
	y, x := hostData[T](out), hostData[T](in)
	last := len(ys) - 1
	d, rows := ys[last], size(ys)/ys[last]
	return func() error {
		parallel.ForDynamic(rows, max(1, elemGrain/d), func(lo, hi int) {
			for r := lo; r < hi; r++ {
				// The offset of row r in x: its index along each axis but the last.
				off, rest := 0, r
				for k := last - 1; k >= 0; k-- {
					off += (rest % ys[k]) * xst[k]
					rest /= ys[k]
				}
				row := y[r*d : (r+1)*d]
				if xst[last] == 0 {
					v := x[off]
					for j := range row {
						row[j] = v
					}
				} else {
					copy(row, x[off:off+d])
				}
			}
		})
		return nil
	}
}

// cpuSum: Gorgonia's sum over every axis, to a scalar (a loss).
func cpuSum(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 1 || !out.Shape.IsScalar() || !hostBuffered([]Operand{in[0], out}) || !floats(out, in...) {
		return nil, nil
	}
	if out.Buf.Dtype() == tensor.Float32 {
		return sumAll[float32](out, in[0]), nil
	}
	return sumAll[float64](out, in[0]), nil
}

// sumAll sums x in fixed blocks of sumBlock elements, each in float64
// (vec.Sum), on the cores, then adds the blocks' sums in order and rounds
// once: the same bits for any number of cores.
func sumAll[T vec.Float](out, in Operand) Kernel {
	const sumBlock = 16384
	s, x := hostData[T](out), hostData[T](in)
	nb := (len(x) + sumBlock - 1) / sumBlock
	part := make([]float64, nb)
	return func() error {
		parallel.ForDynamic(nb, 2, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				part[b] = vec.Sum(x[b*sumBlock : min((b+1)*sumBlock, len(x))])
			}
		})
		acc := 0.0
		for _, p := range part {
			acc += p
		}
		s[0] = T(acc)
		return nil
	}
}
