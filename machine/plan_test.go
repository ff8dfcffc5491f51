package machine_test

import (
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/nn"
)

// TestCopiedOps lists, for a GPT's training graph, the op nodes whose
// result the machine copies into its planned buffer (no DoInto or
// UsePreallocDo, or a scalar result), and checks that none is one of this
// project's ops.
func TestCopiedOps(t *testing.T) {
	m, _, _, _ := onMachine(t, gpt(gptConfig, 2), tensor.Float32)
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	r := m.Report()
	for _, c := range r.Copied {
		t.Logf("copied: %s", c)
		for _, ours := range []string{"(nn.", "(softmax.", "(attention."} {
			if strings.Contains(c, ours) {
				t.Errorf("one of our ops is copied: %s", c)
			}
		}
	}
	t.Logf("%d ops, %d views, %d inputs, %d constants; %d buffers, %d bytes for %d bytes of outputs",
		r.Ops, r.Views, r.Inputs, r.Constants, r.Buffers, r.BufferBytes, r.OutputBytes)
	if r.Views != 4*gptConfig.Layers {
		t.Errorf("%d views, want o, dq, dk, dv of each of %d layers", r.Views, gptConfig.Layers)
	}
}

// TestReset: after Reset no kept value can be read until the next run,
// which gives the same values; after Close nothing runs.
func TestReset(t *testing.T) {
	m, loss, _, grads := onMachine(t, named("attention/causal"), tensor.Float64)
	l1, g1 := results(t, m, loss, grads)
	m.Reset()
	if _, err := m.Value(loss); err == nil {
		t.Fatal("Value after Reset: no error")
	}
	l2, g2 := results(t, m, loss, grads)
	sameResults(t, "after Reset", "before", l2, l1, g2, g1)
	// The kept values are bound to their nodes on the CPU.
	if v := grads[0].Value(); v == nil || flat(t, v)[0] != g1[0][0] {
		t.Fatalf("node value %v, machine value %v", v, g1[0][0])
	}
	dst := tensor.New(tensor.WithShape(grads[0].Shape()...), tensor.Of(tensor.Float64))
	if err := m.Read(grads[0], dst); err != nil || dst.Data().([]float64)[0] != g1[0][0] {
		t.Fatalf("Read: %v, %v", err, dst.Data().([]float64)[0])
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.RunAll(); err == nil {
		t.Fatal("RunAll after Close: no error")
	}
}

// TestErrors: graphs and uses the machine refuses, each with an error
// naming the node or value.
func TestErrors(t *testing.T) {
	x64 := func(g *gorgonia.ExprGraph) *gorgonia.Node {
		return graph.Input(g, "x", graph.NewTensor([]int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
	}
	for _, tc := range []struct {
		name, want string
		run        func() error
	}{
		{"nil graph", "empty or nil graph", func() error { _, err := machine.New(nil); return err }},
		{"unknown device", `device "tpu"`, func() error {
			g := gorgonia.NewGraph()
			gorgonia.Must(gorgonia.Tanh(x64(g)))
			_, err := machine.New(g, machine.OnDevice("tpu"))
			return err
		}},
		{"cuda by name", "no CUDA device", func() error {
			g := gorgonia.NewGraph()
			gorgonia.Must(gorgonia.Tanh(x64(g)))
			_, err := machine.New(g, machine.OnDevice("cuda:0"))
			return err
		}},
		{"unsupported dtype", "dtype uint8", func() error {
			g := gorgonia.NewGraph()
			gorgonia.NewTensor(g, tensor.Uint8, 1, gorgonia.WithShape(4), gorgonia.WithName("bytes"))
			_, err := machine.New(g)
			return err
		}},
		{"kept node of another graph", "is not in the graph", func() error {
			g, h := gorgonia.NewGraph(), gorgonia.NewGraph()
			gorgonia.Must(gorgonia.Tanh(x64(g)))
			_, err := machine.New(g, machine.Keep(x64(h)))
			return err
		}},
		{"input without value", `input "w" has no value`, func() error {
			g := gorgonia.NewGraph()
			w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("w"))
			gorgonia.Must(gorgonia.Add(x64(g), w))
			m, err := machine.New(g)
			if err != nil {
				return err
			}
			return m.RunAll()
		}},
		{"input rebound with another shape", `input "x" is bound to a float64 value of shape (3, 2)`, func() error {
			g := gorgonia.NewGraph()
			x := x64(g)
			gorgonia.Must(gorgonia.Tanh(x))
			m, err := machine.New(g)
			if err != nil {
				return err
			}
			// Let refuses another shape, but the bound tensor can be reshaped.
			if err := x.Value().(*tensor.Dense).Reshape(3, 2); err != nil {
				return err
			}
			return m.RunAll()
		}},
		{"op failing at run time", "index 7", func() error {
			g := gorgonia.NewGraph()
			idx := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(2), gorgonia.WithName("idx"),
				gorgonia.WithValue(tensor.New(tensor.WithBacking([]int{0, 7}))))
			table := x64(g)
			gather, err := nn.EmbedNode(table, idx)
			if err != nil {
				return err
			}
			m, err := machine.New(g, machine.Keep(gather))
			if err != nil {
				return err
			}
			return m.RunAll()
		}},
		{"value of a node not kept", "is not kept", func() error {
			g := gorgonia.NewGraph()
			y := gorgonia.Must(gorgonia.Tanh(x64(g)))
			gorgonia.Must(gorgonia.Sum(y))
			m, err := machine.New(g)
			if err != nil {
				return err
			}
			if err := m.RunAll(); err != nil {
				return err
			}
			_, err = m.Value(y)
			return err
		}},
		{"value before a run", "has not run", func() error {
			g := gorgonia.NewGraph()
			y := gorgonia.Must(gorgonia.Tanh(x64(g)))
			m, err := machine.New(g)
			if err != nil {
				return err
			}
			_, err = m.Value(y)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if onGPU[tc.name] != "" && cuda.Enabled() {
				t.Skip(onGPU[tc.name])
			}
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestCopiedGorgoniaOps logs what the machine copies for Gorgonia's own ops
// (gorgonia/arithmetic), for the record.
func TestCopiedGorgoniaOps(t *testing.T) {
	m, _, _, _ := onMachine(t, named("gorgonia/arithmetic"), tensor.Float64)
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Report().Copied {
		t.Logf("copied: %s", c)
	}
}

// onGPU names the error cases that do not apply when the machine runs on a
// GPU, and why.
var onGPU = map[string]string{
	"cuda by name": "there is a CUDA device",
}
