package attention

import (
	"fmt"

	"github.com/chewxy/hm"
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

func (op maskOp) String() string {
	what := "scores"
	if op.keys {
		what = "keys"
	}
	return fmt.Sprintf("mask{%s %v causal=%t keyLengths=%v fill=%v}", what, op.shape(), op.p.Causal, op.p.KeyLengths, op.fill)
}
func (op maskOp) Arity() int { return 1 }
func (op maskOp) Type() hm.Type {
	n := len(op.shape())
	return hm.NewFnType(graph.TensorType(n), graph.TensorType(n))
}
func (op maskOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	if !in[0].Eq(op.shape()) {
		return nil, fmt.Errorf("%v: input has shape %v, want %v", op, in[0], op.shape())
	}
	return op.shape(), nil
}

func (op maskOp) Forward(out *tensor.Dense, in []*tensor.Dense) error {
	if d := in[0]; d.Dtype() != op.dtype {
		return fmt.Errorf("%v: input is %v%v, want %v%v", op, d.Dtype(), d.Shape(), op.dtype, op.shape())
	}
	switch x := in[0].Data().(type) {
	case []float32:
		maskCopy(op, out.Data().([]float32), x)
	case []float64:
		maskCopy(op, out.Data().([]float64), x)
	default:
		return fmt.Errorf("%v: dtype %v is not supported", op, in[0].Dtype())
	}
	return nil
}

// Grad is the select of the gradient: the same mask with fill 0.
func (op maskOp) Grad(_ []*graph.Expr, _, dout *graph.Expr) []*graph.Expr {
	op.fill = 0
	return []*graph.Expr{graph.Apply(graph.NewOp(op), dout)}
}

// maskCopy copies x into out with the masked entries set to op.fill.
func maskCopy[T Float](op maskOp, out, x []T) {
	p := op.p
	copy(out, x)
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
		return
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
}
