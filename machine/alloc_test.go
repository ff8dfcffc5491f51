package machine_test

import (
	"fmt"
	"hash"
	"testing"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/machine"
)

// twiceOp is y = 2·x writing into the machine's buffer and allocating
// nothing, to measure what the machine itself allocates per run.
type twiceOp struct{}

func (twiceOp) Arity() int    { return 1 }
func (twiceOp) Type() hm.Type { return hm.NewFnType(graph.TensorType(2), graph.TensorType(2)) }
func (twiceOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op twiceOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	out := tensor.New(tensor.WithShape(in[0].Shape().Clone()...), tensor.Of(tensor.Float64))
	return out, op.DoInto(out, in...)
}
func (twiceOp) DoInto(out gorgonia.Value, in ...gorgonia.Value) error {
	x, y := in[0].(*tensor.Dense).Float64s(), out.(*tensor.Dense).Float64s()
	for i := range y {
		y[i] = 2 * x[i]
	}
	return nil
}
func (twiceOp) ReturnsPtr() bool      { return false }
func (twiceOp) CallsExtern() bool     { return false }
func (twiceOp) OverwritesInput() int  { return -1 }
func (twiceOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "twice") }
func (twiceOp) Hashcode() uint32      { return graph.OpHash(twiceOp{}) }
func (twiceOp) String() string        { return "twice" }

// TestRunAllocatesNothing: a run on the CPU of ops that write into their
// buffers (with a view between them) allocates nothing in the machine, and gives
// 2⁶·x.
func TestRunAllocatesNothing(t *testing.T) {
	g := gorgonia.NewGraph()
	x := graph.Input(g, "x", graph.NewTensor([]int{4, 6}, make([]float64, 24)))
	y := x
	for i := 0; i < 6; i++ {
		y = gorgonia.Must(gorgonia.ApplyOp(twiceOp{}, y))
		if i == 2 {
			y = gorgonia.Must(gorgonia.Reshape(y, tensor.Shape{6, 4}))
		}
	}
	m, err := machine.New(g, machine.OnDevice("cpu")) // the host machine's own allocations
	if err != nil {
		t.Fatal(err)
	}
	xs := x.Value().Data().([]float64)
	for i := range xs {
		xs[i] = float64(i)
	}
	if allocs := testing.AllocsPerRun(10, func() {
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
	v, err := m.Value(y)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range v.Data().([]float64) {
		if e != 64*float64(i) {
			t.Fatalf("y[%d] = %v, want %v", i, e, 64*float64(i))
		}
	}
	if r := m.Report(); r.Views != 1 || r.Buffers != 2 || len(r.Copied) != 0 {
		t.Errorf("report %+v: want 1 view, 2 buffers (ping-pong), nothing copied", r)
	}
}
