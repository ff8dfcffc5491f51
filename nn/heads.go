package nn

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// headsOp moves attention heads between the row layout of the linear layers,
// x [B·N, C] (row b·N + l for token l of sequence b, column c), and the
// layout of ops/attention, [B, h, N, d]. With split it reads h heads of width d starting at column off:
//
//	y[b, i, l, j] = x[b·N + l, off + i·d + j]          x [B·N, C] → y [B, h, N, d]
//
// and without it (scatter) it does the adjoint, writing into zeros:
//
//	y[b·N + l, off + i·d + j] = x[b, i, l, j]          x [B, h, N, d] → y [B·N, C]
//
// The two are each other's gradient. A scatter with off = 0 and C = h·d
// merges the heads back into rows.
type headsOp struct {
	split           bool
	b, n, h, d, off int
	c               int // columns of the row layout
}

func (k headsOp) name() string {
	return fmt.Sprintf("nnHeads{split=%t,B=%d,N=%d,h=%d,d=%d,off=%d,C=%d}", k.split, k.b, k.n, k.h, k.d, k.off, k.c)
}
func (k headsOp) arity() int { return 1 }
func (k headsOp) typ() hm.Type {
	if k.split {
		return hm.NewFnType(graph.TensorType(2), graph.TensorType(4))
	}
	return hm.NewFnType(graph.TensorType(4), graph.TensorType(2))
}
func (k headsOp) rows() tensor.Shape  { return tensor.Shape{k.b * k.n, k.c} }
func (k headsOp) heads() tensor.Shape { return tensor.Shape{k.b, k.h, k.n, k.d} }
func (k headsOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	from, to := k.heads(), k.rows()
	if k.split {
		from, to = to, from
	}
	if !in[0].Eq(from) {
		return nil, fmt.Errorf("%s: input has shape %v, want %v", k.name(), in[0], from)
	}
	return to, nil
}
func (k headsOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	x := in[0]
	if err := checkFloat(k.name(), x.Dtype()); err != nil {
		return err
	}
	switch x.Dtype() {
	case tensor.Float32:
		moveHeads(k, floats[float32](out), floats[float32](x))
	default:
		moveHeads(k, floats[float64](out), floats[float64](x))
	}
	return nil
}

func moveHeads[T float](k headsOp, y, x []T) {
	zero := !k.split && k.h*k.d != k.c
	// One head of one sequence: N rows of d, at a stride of C in the row
	// layout and of d in the head layout.
	parallel.ForDynamic(k.b*k.h, max(1, rowGrain/max(k.n*k.d, 1)), func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, i := bh/k.h, bh%k.h
			if zero && i == 0 {
				// The columns outside [off, off+h·d) of sequence b's rows are 0.
				for r := b * k.n; r < (b+1)*k.n; r++ {
					row := y[r*k.c : (r+1)*k.c]
					clear(row[:k.off])
					clear(row[k.off+k.h*k.d:])
				}
			}
			row := b*k.n*k.c + k.off + i*k.d
			head := bh * k.n * k.d
			if k.split {
				vec.CopyRows(y[head:], x[row:], k.n, k.d, k.d, k.c)
			} else {
				vec.CopyRows(y[row:], x[head:], k.n, k.d, k.c, k.d)
			}
		}
	})
}

func (k headsOp) grads() []gradSpec {
	adj := k
	adj.split = !k.split
	return []gradSpec{{op: opBase{adj}, args: []int{argGrad}}}
}
