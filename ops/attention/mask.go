package attention

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// maskOp is Reference's masking, a select: masked entries are replaced by
// fill, never added to, so that whatever they hold (NaN, ±Inf) is gone.
//
//	scores (keys false): x [B·Hkv, G·Nq, Nk], row r = (query head h mod G)·Nq + i
//	    out[bk,r,j] = x[bk,r,j] if query i of batch bk/Hkv sees key j, fill otherwise
//	keys (keys true): x [B,Hkv,Nk,d]
//	    out[b,g,j,c] = x[b,g,j,c] if j < KeyLengths[b], fill otherwise
//
// The gradient is the same select with fill 0: masked entries get exactly
// zero gradient. Visibility is the one rule of attnspec, as in the fused
// kernels; Reference stays an independent twin of the fused op in how it
// computes (Gorgonia matmuls and ops/softmax over the full score matrix).
type maskOp struct {
	graph.Pure
	p     params
	dtype tensor.Dtype
	keys  bool
	fill  float64 // −Inf for the scores, 0 for the keys and for every gradient
}

// masked reports whether key j is hidden from query row i of batch b (for
// the keys form, from every row: padding only).
func (op maskOp) masked(b, i, j int) bool {
	if op.keys {
		return j >= op.p.KeyEnd(b)
	}
	return !op.p.Visible(b, i, j)
}

func (op maskOp) shape() tensor.Shape {
	p := op.p
	if op.keys {
		return tensor.Shape{p.B, p.Hkv, p.Nk, p.D}
	}
	return tensor.Shape{p.B * p.Hkv, p.H / p.Hkv * p.Nq, p.Nk}
}

func (op maskOp) Arity() int { return 1 }
func (op maskOp) Type() hm.Type {
	n := len(op.shape())
	return hm.NewFnType(graph.TensorType(n), graph.TensorType(n))
}
func (op maskOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) { return op.shape(), nil }

func (op maskOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if len(vs) != 1 {
		return nil, fmt.Errorf("%v: got %d inputs, want 1", op, len(vs))
	}
	d, ok := vs[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%v: input is a %T, want a dense tensor", op, vs[0])
	}
	if d.Dtype() != op.dtype || !d.Shape().Eq(op.shape()) {
		return nil, fmt.Errorf("%v: input is %v%v, want %v%v", op, d.Dtype(), d.Shape(), op.dtype, op.shape())
	}
	if d.IsMaterializable() {
		d = d.Materialize().(*tensor.Dense)
	}
	var backing any
	switch x := d.Data().(type) {
	case []float32:
		backing = maskCopy(op, x)
	case []float64:
		backing = maskCopy(op, x)
	default:
		return nil, fmt.Errorf("%v: dtype %v is not supported", op, d.Dtype())
	}
	return tensor.New(tensor.WithShape(op.shape()...), tensor.WithBacking(backing)), nil
}

// maskCopy returns a copy of x with the masked entries set to op.fill.
func maskCopy[T Float](op maskOp, x []T) []T {
	p := op.p
	out := append([]T(nil), x...)
	fill := T(op.fill)
	if op.keys {
		for b := 0; b < p.B; b++ {
			for g := 0; g < p.Hkv; g++ {
				for j := 0; j < p.Nk; j++ {
					if op.masked(b, 0, j) {
						at := ((b*p.Hkv+g)*p.Nk + j) * p.D
						for c := range p.D {
							out[at+c] = fill
						}
					}
				}
			}
		}
		return out
	}
	rows := p.H / p.Hkv * p.Nq
	for bk := 0; bk < p.B*p.Hkv; bk++ {
		b := bk / p.Hkv
		for r := 0; r < rows; r++ {
			row := out[(bk*rows+r)*p.Nk : (bk*rows+r+1)*p.Nk]
			for j := range row {
				if op.masked(b, r%p.Nq, j) {
					row[j] = fill
				}
			}
		}
	}
	return out
}

func (op maskOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "attention.mask %v %t %v %+v", op.dtype, op.keys, op.fill, op.p)
}
func (op maskOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op maskOp) String() string {
	what := "scores"
	if op.keys {
		what = "keys"
	}
	return fmt.Sprintf("mask{%s %v causal=%t keyLengths=%v fill=%v}", what, op.shape(), op.p.Causal, op.p.KeyLengths, op.fill)
}

func (op maskOp) DiffWRT(n int) []bool { return trues(n) }

// gradOp is the select of the gradient: the same mask with fill 0.
func (op maskOp) gradOp() maskOp {
	op.fill = 0
	return op
}

func (op maskOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	n, err := gorgonia.ApplyOp(op.gradOp(), grad)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return gorgonia.Nodes{n}, nil
}

func (op maskOp) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	return graph.AddGradInto(op, inputs[0], output, 0, func(g gorgonia.Value) (gorgonia.Value, error) {
		return op.gradOp().Do(g)
	})
}
