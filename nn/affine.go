package nn

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// affineOp computes y = x·γ + β row by row over the last axis:
//
//	y[r, j] = x[r, j]·γ[j] + β[j]    x [..., D], γ [D], β [D]
//
// with γ present when scale is set and β when shift is set (inputs in the
// order x, γ, β). It is the bias of Linear (shift only) and the gain and bias
// of LayerNorm and RMSNorm.
type affineOp struct {
	scale, shift bool
	dims         int // rank of x
}

func (k affineOp) name() string {
	return fmt.Sprintf("nnAffine{scale=%t,shift=%t,dims=%d}", k.scale, k.shift, k.dims)
}
func (k affineOp) arity() int {
	n := 1
	if k.scale {
		n++
	}
	if k.shift {
		n++
	}
	return n
}
func (k affineOp) typ() hm.Type {
	ts := []hm.Type{graph.TensorType(k.dims)}
	for i := 1; i < k.arity(); i++ {
		ts = append(ts, graph.TensorType(1))
	}
	return hm.NewFnType(append(ts, graph.TensorType(k.dims))...)
}
func (k affineOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	x := in[0]
	if x.Dims() != k.dims || x.Dims() < 1 {
		return nil, fmt.Errorf("%s: x has shape %v, want rank %d", k.name(), x, k.dims)
	}
	d := x[x.Dims()-1]
	for i, s := range in[1:] {
		if s.Dims() != 1 || s[0] != d {
			return nil, fmt.Errorf("%s: parameter %d has shape %v, want [%d] (last axis of x %v)", k.name(), i+1, s, d, x)
		}
	}
	return x.Clone(), nil
}
func (k affineOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	if err := sameDtype(k.name(), in...); err != nil {
		return err
	}
	switch in[0].Dtype() {
	case tensor.Float32:
		affineFwd(k, floats[float32](out), in)
	default:
		affineFwd(k, floats[float64](out), in)
	}
	return nil
}

func affineFwd[T float](k affineOp, y []T, in []*tensor.Dense) {
	x := floats[T](in[0])
	var gamma, beta []T
	i := 1
	if k.scale {
		gamma = floats[T](in[i])
		i++
	}
	if k.shift {
		beta = floats[T](in[i])
	}
	d := in[0].Shape()[in[0].Dims()-1]
	if gamma == nil && beta == nil {
		copy(y, x)
		return
	}
	parallel.ForDynamic(len(x)/d, rowsGrain(d), func(lo, hi int) {
		vec.AffineRows(y[lo*d:hi*d], x[lo*d:hi*d], gamma, beta)
	})
}

// grads: dx = g·γ (an affine op without shift, or g itself), dγ = Σ_rows g∘x,
// dβ = Σ_rows g.
func (k affineOp) grads() []gradSpec {
	var specs []gradSpec
	if k.scale {
		specs = append(specs, gradSpec{op: opBase{affineOp{scale: true, dims: k.dims}}, args: []int{argGrad, 1}})
		specs = append(specs, gradSpec{op: opBase{colSumOp{prod: true, dims: k.dims}}, args: []int{0, argGrad}})
	} else {
		specs = append(specs, gradSpec{args: []int{argGrad}})
	}
	if k.shift {
		specs = append(specs, gradSpec{op: opBase{colSumOp{dims: k.dims}}, args: []int{argGrad}})
	}
	return specs
}

// colSumOp reduces over every axis but the last:
//
//	s[j] = Σ_r g[r, j]            (prod false; input g [..., D])
//	s[j] = Σ_r x[r, j]·g[r, j]    (prod true; inputs x, g [..., D])
//
// It is the gradient of a bias or a gain; it is not itself differentiable.
type colSumOp struct {
	prod bool
	dims int // rank of the input(s)
}

func (k colSumOp) name() string { return fmt.Sprintf("nnColSum{prod=%t,dims=%d}", k.prod, k.dims) }
func (k colSumOp) arity() int {
	if k.prod {
		return 2
	}
	return 1
}
func (k colSumOp) typ() hm.Type {
	if k.prod {
		return hm.NewFnType(graph.TensorType(k.dims), graph.TensorType(k.dims), graph.TensorType(1))
	}
	return hm.NewFnType(graph.TensorType(k.dims), graph.TensorType(1))
}
func (k colSumOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	x := in[0]
	if x.Dims() != k.dims || x.Dims() < 1 {
		return nil, fmt.Errorf("%s: input has shape %v, want rank %d", k.name(), x, k.dims)
	}
	if k.prod && !in[1].Eq(x) {
		return nil, fmt.Errorf("%s: shapes %v and %v differ", k.name(), x, in[1])
	}
	return tensor.Shape{x[x.Dims()-1]}, nil
}
func (k colSumOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	if err := sameDtype(k.name(), in...); err != nil {
		return err
	}
	switch out.Dtype() {
	case tensor.Float32:
		colSum(k, floats[float32](out), in)
	default:
		colSum(k, floats[float64](out), in)
	}
	return nil
}

// colSum sums fixed blocks of rows (colSumBlocks: a number that depends
// only on the shape) on the cores, each block's column sums from 0 in row
// order into a float64 partial of its own (vec.ColSums), then adds the
// partials in block order and rounds once: the same bits for any number of
// cores.
func colSum[T float](k colSumOp, s []T, in []*tensor.Dense) {
	d := len(s)
	g := floats[T](in[len(in)-1])
	var x []T
	if k.prod {
		x = floats[T](in[0])
	}
	rows := len(g) / d
	nb, per := colSumBlocks(rows, d)
	pp := getPartials(nb * d)
	defer putPartials(pp)
	part := *pp
	clear(part) // vec.ColSums adds to it
	parallel.ForDynamic(nb, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			r0, r1 := b*per*d, min((b+1)*per, rows)*d
			if x != nil {
				vec.ColSums(part[b*d:(b+1)*d], x[r0:r1], g[r0:r1], d)
			} else {
				vec.ColSums(part[b*d:(b+1)*d], g[r0:r1], nil, d)
			}
		}
	})
	for j := range s {
		acc := part[j]
		for b := 1; b < nb; b++ {
			acc += part[b*d+j]
		}
		s[j] = T(acc)
	}
}

// colSumBlocks splits rows of length d into nb ≤ 16 blocks of per rows
// (the last may be shorter), each of at least rowGrain entries when there
// are enough: enough blocks for 16 cores, a partial of d float64 each.
func colSumBlocks(rows, d int) (nb, per int) {
	per = max(rowsGrain(d), (rows+15)/16)
	nb = (rows + per - 1) / per
	return max(nb, 1), per
}

func (k colSumOp) grads() []gradSpec { return nil }

// applyAffine builds y = x·γ + β for whichever of gamma, beta is not nil.
func applyAffine(x, gamma, beta *gorgonia.Node) (*gorgonia.Node, error) {
	k := affineOp{scale: gamma != nil, shift: beta != nil, dims: x.Dims()}
	args := []*gorgonia.Node{x}
	if gamma != nil {
		args = append(args, gamma)
	}
	if beta != nil {
		args = append(args, beta)
	}
	return apply(k, args...)
}
