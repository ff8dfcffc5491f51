package nn

import (
	"fmt"
	"math/rand"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// gatherOp looks rows of a table up by index:
//
//	y[m, :] = table[idx[m], :]    table [V, D], idx [M] (tensor.Int), y [M, D]
//
// Its gradient with respect to the table is scatterAddOp; idx is not
// differentiable.
type gatherOp struct{}

var intVec = gorgonia.TensorType{Dims: 1, Of: tensor.Int}

func (k gatherOp) name() string { return "nnGather" }
func (k gatherOp) arity() int   { return 2 }
func (k gatherOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(2), intVec, graph.TensorType(2))
}
func (k gatherOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if in[0].Dims() != 2 || in[1].Dims() != 1 {
		return nil, fmt.Errorf("%s: table %v and indices %v: want table [V, D] and indices [M]", k.name(), in[0], in[1])
	}
	return tensor.Shape{in[1][0], in[0][1]}, nil
}
func (k gatherOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	table := in[0]
	idx, d, err := embedArgs(k.name(), in)
	if err != nil {
		return err
	}
	switch table.Dtype() {
	case tensor.Float32:
		gather(floats[float32](out), floats[float32](table), idx, d)
	default:
		gather(floats[float64](out), floats[float64](table), idx, d)
	}
	return nil
}
func (k gatherOp) grads() []gradSpec {
	return []gradSpec{{op: opBase{scatterAddOp{}}, args: []int{0, 1, argGrad}}, {}}
}

// embedArgs checks the inputs of a gather (table [V, D], idx) or a
// scatter-add (table, idx, g): the tables and g of one float dtype, every
// index in [0, V). It returns the indices and D.
func embedArgs(op string, in []*tensor.Dense) ([]int, int, error) {
	table := in[0]
	if err := sameDtype(op, append([]*tensor.Dense{table}, in[2:]...)...); err != nil {
		return nil, 0, err
	}
	idx, err := indicesOf(op, in[1], table.Shape()[0])
	if err != nil {
		return nil, 0, err
	}
	return idx, table.Shape()[1], nil
}

// indicesOf returns the int indices of idxT, each checked to lie in [0, v),
// or an error naming the op.
func indicesOf(op string, idxT *tensor.Dense, v int) ([]int, error) {
	idx, ok := idxT.Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%s: indices have dtype %v, want int", op, idxT.Dtype())
	}
	if err := checkIndices(idx, v); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return idx, nil
}

func checkIndices(idx []int, v int) error {
	for m, i := range idx {
		if i < 0 || i >= v {
			return fmt.Errorf("index %d at position %d is outside [0, %d)", i, m, v)
		}
	}
	return nil
}

func gather[T float](y, table []T, idx []int, d int) {
	parallel.ForDynamic(len(idx), 256, func(lo, hi int) {
		for m := lo; m < hi; m++ {
			copy(y[m*d:(m+1)*d], table[idx[m]*d:(idx[m]+1)*d])
		}
	})
}

// scatterAddOp is the gradient of gatherOp: inputs table (for its shape),
// idx [M] and g [M, D]; output dT [V, D] with
//
//	dT[v, :] = Σ_{m: idx[m] = v} g[m, :]
type scatterAddOp struct{}

func (k scatterAddOp) name() string { return "nnScatterAdd" }
func (k scatterAddOp) arity() int   { return 3 }
func (k scatterAddOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(2), intVec, graph.TensorType(2), graph.TensorType(2))
}
func (k scatterAddOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if in[0].Dims() != 2 || in[1].Dims() != 1 || in[2].Dims() != 2 || in[2][0] != in[1][0] || in[2][1] != in[0][1] {
		return nil, fmt.Errorf("%s: table %v, indices %v, gradient %v: want [V, D], [M], [M, D]", k.name(), in[0], in[1], in[2])
	}
	return in[0].Clone(), nil
}
func (k scatterAddOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	table, g := in[0], in[2]
	idx, d, err := embedArgs(k.name(), in)
	if err != nil {
		return err
	}
	switch table.Dtype() {
	case tensor.Float32:
		scatterAdd(floats[float32](out), floats[float32](g), idx, d)
	default:
		scatterAdd(floats[float64](out), floats[float64](g), idx, d)
	}
	return nil
}
func (k scatterAddOp) grads() []gradSpec { return nil }

// scatterAdd splits the D columns over cores so that two workers never add
// into the same entry; each entry adds its rows in index order (the same
// bits for any number of cores). A worker adds whole rows of its columns
// with vec.AffineRows (dst = dst + g), in column ranges of a multiple of 16
// so that the vector kernels cover them.
func scatterAdd[T float](dt, g []T, idx []int, d int) {
	clear(dt) // out may hold a previous value (a machine's buffer)
	cols := (d + 15) / 16
	parallel.ForDynamic(cols, max(1, rowGrain/(16*max(len(idx), 1))), func(lo, hi int) {
		lo, hi = lo*16, min(hi*16, d)
		for m, v := range idx {
			dst := dt[v*d+lo : v*d+hi]
			vec.AffineRows(dst, dst, nil, g[m*d+lo:m*d+hi])
		}
	})
}

// EmbedNode returns table[idx[m], :] for each m: table [V, D], idx [M] of
// dtype tensor.Int, result [M, D]. An index outside [0, V) is an error at run
// time.
func EmbedNode(table, idx *gorgonia.Node) (*gorgonia.Node, error) {
	if table == nil || idx == nil {
		return nil, fmt.Errorf("nn.Embed: table %v or indices %v is nil", table, idx)
	}
	if table.Dims() != 2 || idx.Dims() != 1 {
		return nil, fmt.Errorf("nn.Embed: table %v and indices %v: want table [V, D] and indices [M]", table.Shape(), idx.Shape())
	}
	if idx.Dtype() != tensor.Int {
		return nil, fmt.Errorf("nn.Embed: indices %s have dtype %v, want int", idx.Name(), idx.Dtype())
	}
	return apply(gatherOp{}, table, idx)
}

// Embedding is a lookup table [V, D] named "<name>.weight", initialized from
// N(0, 0.02²) as in GPT-2.
type Embedding struct {
	W *Param
}

// NewEmbedding returns an embedding of v rows of width d (both positive;
// dt float32 or float64; rng not nil).
func NewEmbedding(name string, v, d int, dt tensor.Dtype, rng *rand.Rand) (*Embedding, error) {
	if err := checkInit("nn.NewEmbedding "+name, dt, rng, gpt2Std, v, d); err != nil {
		return nil, err
	}
	e := &Embedding{W: newParam(name+".weight", dt, true, v, d)}
	e.W.fillNormal(rng, gpt2Std)
	return e, nil
}

// Params returns the table.
func (e *Embedding) Params() []*Param { return []*Param{e.W} }

// Forward looks idx [M] up in scope s, giving [M, D].
func (e *Embedding) Forward(s *Scope, idx *gorgonia.Node) (*gorgonia.Node, error) {
	if err := s.check("nn.Embedding"); err != nil {
		return nil, err
	}
	if e == nil || e.W == nil {
		return nil, fmt.Errorf("nn.Embedding: the layer is nil or was not made by NewEmbedding")
	}
	return EmbedNode(s.Node(e.W), idx)
}

// IndexInput adds to g an input node of m > 0 ints named name, bound to a
// zeroed tensor; set its entries before a run with SetIndices.
func IndexInput(g *gorgonia.ExprGraph, name string, m int) (*gorgonia.Node, error) {
	if g == nil {
		return nil, fmt.Errorf("nn.IndexInput %s: the graph is nil", name)
	}
	if m <= 0 || m > maxElements {
		return nil, fmt.Errorf("nn.IndexInput %s: length %d must be in [1, %d]", name, m, maxElements)
	}
	t := tensor.New(tensor.WithShape(m), tensor.Of(tensor.Int))
	return gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(m), gorgonia.WithName(name), gorgonia.WithValue(t)), nil
}

// SetIndices copies idx into the value of an index input node, checking the
// length.
func SetIndices(n *gorgonia.Node, idx []int) error {
	if n == nil {
		return fmt.Errorf("nn.SetIndices: the node is nil")
	}
	t, ok := n.Value().(*tensor.Dense)
	if !ok || t.Dtype() != tensor.Int {
		return fmt.Errorf("nn.SetIndices: node %s is not an int input", n.Name())
	}
	dst := t.Data().([]int)
	if len(dst) != len(idx) {
		return fmt.Errorf("nn.SetIndices: node %s holds %d indices, got %d", n.Name(), len(dst), len(idx))
	}
	copy(dst, idx)
	return nil
}
