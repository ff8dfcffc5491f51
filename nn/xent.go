package nn

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// xentOp is the fused cross-entropy of CrossEntropy: log-softmax, the
// negative log-likelihood of integer targets and their mean in one pass over
// the logits,
//
//	out[0] = (1/n)·Σ_{m : t[m] ≠ ignore} (lse(x[m, :]) − x[m, t[m]]),   lse(r) = log Σ_v e^{r[v]}
//
// for logits x [M, V] and targets t [M] (tensor.Int), n = #{m : t[m] ≠
// ignore} (out = 0 when n = 0); out has shape [1]. Each row's log-sum-exp
// is max + log Σ e^{x − max} (vec.ExpShiftSum, summed in float64), and the
// rows' terms are summed in float64 over fixed blocks of rows, added in
// block order: the same bits at any GOMAXPROCS. Its gradient with respect
// to x is xentGradOp; t is not differentiable.
type xentOp struct{ ignore int }

func (k xentOp) name() string { return fmt.Sprintf("nnCrossEntropy{ignore=%d}", k.ignore) }
func (k xentOp) arity() int   { return 2 }
func (k xentOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(2), intVec, graph.TensorType(1))
}
func (k xentOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if err := xentShapes(k.name(), in[0], in[1]); err != nil {
		return nil, err
	}
	return tensor.Shape{1}, nil
}
func (k xentOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	t, err := k.targets(in)
	if err != nil {
		return err
	}
	x := in[0]
	switch x.Dtype() {
	case tensor.Float32:
		floats[float32](out)[0] = float32(xentLoss(floats[float32](x), t, x.Shape()[1], k.ignore))
	default:
		floats[float64](out)[0] = xentLoss(floats[float64](x), t, x.Shape()[1], k.ignore)
	}
	return nil
}
func (k xentOp) grads() []gradSpec {
	return []gradSpec{{op: opBase{xentGradOp(k)}, args: []int{0, 1, argGrad}}, {}}
}

// targets checks the dtypes and returns the targets, each in [0, V) or the
// ignore index.
func (k xentOp) targets(in []*tensor.Dense) ([]int, error) {
	x := in[0]
	if err := checkFloat(k.name(), x.Dtype()); err != nil {
		return nil, err
	}
	t, ok := in[1].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%s: targets have dtype %v, want int", k.name(), in[1].Dtype())
	}
	v := x.Shape()[1]
	for m, c := range t {
		if c != k.ignore && (c < 0 || c >= v) {
			return nil, fmt.Errorf("%s: target %d at row %d is outside [0, %d) and is not the ignore index %d", k.name(), c, m, v, k.ignore)
		}
	}
	return t, nil
}

func xentShapes(name string, x, t tensor.Shape) error {
	if x.Dims() != 2 || t.Dims() != 1 || t[0] != x[0] {
		return fmt.Errorf("%s: logits %v and targets %v: want logits [M, V] and targets [M]", name, x, t)
	}
	return nil
}

// xentRows is the block of rows the cross-entropy's work is split in (a
// few µs at the vocabularies of a character model).
const xentRows = 64

// xentCount returns n, the number of targets that are not ignored.
func xentCount(t []int, ignore int) int {
	n := 0
	for _, c := range t {
		if c != ignore {
			n++
		}
	}
	return n
}

// rowLSE returns log Σ_v e^{r[v]} of one row in float64.
func rowLSE[T float](r []T) float64 {
	m := vec.Max(r)
	return float64(m) + math.Log(vec.ExpShiftSum(nil, r, 1, m))
}

func xentLoss[T float](x []T, t []int, v, ignore int) float64 {
	n := xentCount(t, ignore)
	if n == 0 {
		return 0
	}
	rows := len(t)
	nb := (rows + xentRows - 1) / xentRows
	pp := getPartials(nb)
	defer putPartials(pp)
	part := *pp // every entry is written
	parallel.ForDynamic(nb, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			s := 0.0
			for m := b * xentRows; m < min((b+1)*xentRows, rows); m++ {
				if t[m] == ignore {
					continue
				}
				r := x[m*v : (m+1)*v]
				s += rowLSE(r) - float64(r[t[m]])
			}
			part[b] = s
		}
	})
	s := 0.0
	for _, p := range part {
		s += p
	}
	return s / float64(n)
}

// xentGradOp is the gradient of xentOp with respect to the logits: inputs
// x [M, V], t [M] and g [1] (the gradient of the loss), output
//
//	dx[m, v] = (g/n)·(softmax(x[m, :])[v] − [v = t[m]])    for t[m] ≠ ignore, 0 for ignored rows
//
// with the softmax as e^{x − max}/Σ e^{x − max} (vec.ExpShiftSum, the sum
// in float64); each row on its own.
type xentGradOp xentOp

func (k xentGradOp) name() string { return fmt.Sprintf("nnCrossEntropyGrad{ignore=%d}", k.ignore) }
func (k xentGradOp) arity() int   { return 3 }
func (k xentGradOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(2), intVec, graph.TensorType(1), graph.TensorType(2))
}
func (k xentGradOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if err := xentShapes(k.name(), in[0], in[1]); err != nil {
		return nil, err
	}
	if in[2].Dims() != 1 || in[2][0] != 1 {
		return nil, fmt.Errorf("%s: the loss's gradient has shape %v, want [1]", k.name(), in[2])
	}
	return in[0].Clone(), nil
}
func (k xentGradOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	t, err := xentOp(k).targets(in)
	if err != nil {
		return err
	}
	if err := sameDtype(k.name(), in[0], in[2]); err != nil {
		return err
	}
	x := in[0]
	switch x.Dtype() {
	case tensor.Float32:
		xentGrad(floats[float32](out), floats[float32](x), t, floats[float32](in[2])[0], x.Shape()[1], k.ignore)
	default:
		xentGrad(floats[float64](out), floats[float64](x), t, floats[float64](in[2])[0], x.Shape()[1], k.ignore)
	}
	return nil
}
func (k xentGradOp) grads() []gradSpec { return nil }

func xentGrad[T float](dx, x []T, t []int, g T, v, ignore int) {
	n := xentCount(t, ignore)
	c := 0.0
	if n > 0 {
		c = float64(g) / float64(n)
	}
	rows := len(t)
	parallel.ForDynamic((rows+xentRows-1)/xentRows, 1, func(lo, hi int) {
		for m := lo * xentRows; m < min(hi*xentRows, rows); m++ {
			d := dx[m*v : (m+1)*v]
			if t[m] == ignore || n == 0 {
				clear(d)
				continue
			}
			// softmax(r) = e^{r − max}/Σ e^{r − max}.
			r := x[m*v : (m+1)*v]
			s := vec.ExpShiftSum(d, r, 1, vec.Max(r))
			vec.Scale(d, T(c/s))
			d[t[m]] -= T(c)
		}
	})
}
