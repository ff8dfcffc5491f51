package attention

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// TestBadInput is the table of everything a caller of the public API
// (Attention, AttentionLSE, Reference, ReferenceLSE) can get wrong: each
// case must give an error from every one of the four functions, prefixed
// with the function's name and naming the offending shapes, values or
// flags, and never a panic.
func TestBadInput(t *testing.T) {
	f64, f32 := tensor.Float64, tensor.Float32
	type in struct {
		dt    tensor.Dtype
		shape []int
	}
	q4 := in{f64, []int{2, 4, 5, 8}}
	k4 := in{f64, []int{2, 2, 7, 8}}
	huge := 1 << 20
	type nodes func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node)
	mk := func(g *gorgonia.ExprGraph, name string, x in) *gorgonia.Node {
		return gorgonia.NewTensor(g, x.dt, len(x.shape), gorgonia.WithShape(x.shape...), gorgonia.WithName(name))
	}
	cases := []struct {
		name    string
		q, k, v in
		nodes   nodes // when set, builds q, k, v instead of the shapes above
		opts    Options
		want    []string // substrings of the error
	}{
		// Ranks and shapes.
		{name: "q rank 3", q: in{f64, []int{2, 5, 8}}, k: k4, v: k4, want: []string{"q must have rank 4", "(2, 5, 8)"}},
		{name: "k rank 5", q: q4, k: in{f64, []int{2, 2, 7, 8, 1}}, v: k4, want: []string{"k must have rank 4", "(2, 2, 7, 8, 1)"}},
		{name: "v rank 2", q: q4, k: k4, v: in{f64, []int{14, 8}}, want: []string{"v must have rank 4", "(14, 8)"}},
		{name: "head dim", q: q4, k: in{f64, []int{2, 2, 7, 6}}, v: in{f64, []int{2, 2, 7, 6}}, want: []string{"d=8", "d=6"}},
		{name: "k and v lengths differ", q: q4, k: k4, v: in{f64, []int{2, 2, 9, 8}}, want: []string{"(2, 2, 7, 8)", "(2, 2, 9, 8)", "same shape"}},
		{name: "k and v head dims differ", q: q4, k: k4, v: in{f64, []int{2, 2, 7, 6}}, want: []string{"(2, 2, 7, 8)", "(2, 2, 7, 6)", "same shape"}},
		{name: "batch", q: q4, k: in{f64, []int{3, 2, 7, 8}}, v: in{f64, []int{3, 2, 7, 8}}, want: []string{"B=2", "B=3"}},
		{name: "heads not a multiple", q: in{f64, []int{2, 5, 5, 8}}, k: k4, v: k4, want: []string{"H=5", "Hkv=2"}},
		{name: "more kv heads than heads", q: in{f64, []int{2, 2, 5, 8}}, k: in{f64, []int{2, 4, 7, 8}}, v: in{f64, []int{2, 4, 7, 8}}, want: []string{"H=2", "Hkv=4"}},
		// Zero-length dimensions (issue 8, defect 1): refused when the
		// graph is built, naming the dimension.
		{name: "B = 0", q: in{f64, []int{0, 4, 5, 8}}, k: in{f64, []int{0, 2, 7, 8}}, v: in{f64, []int{0, 2, 7, 8}}, want: []string{"(0, 4, 5, 8)", "B = 0", "at least 1"}},
		{name: "H = 0", q: in{f64, []int{2, 0, 5, 8}}, k: k4, v: k4, want: []string{"(2, 0, 5, 8)", "H = 0", "at least 1"}},
		{name: "Hkv = 0", q: q4, k: in{f64, []int{2, 0, 7, 8}}, v: in{f64, []int{2, 0, 7, 8}}, want: []string{"(2, 0, 7, 8)", "Hkv = 0", "at least 1"}},
		{name: "Nq = 0", q: in{f64, []int{2, 4, 0, 8}}, k: k4, v: k4, want: []string{"(2, 4, 0, 8)", "Nq = 0", "at least 1"}},
		{name: "Nk = 0", q: q4, k: in{f64, []int{2, 2, 0, 8}}, v: in{f64, []int{2, 2, 0, 8}}, want: []string{"(2, 2, 0, 8)", "Nk = 0", "at least 1"}},
		{name: "Nk = 0 in v only", q: q4, k: k4, v: in{f64, []int{2, 2, 0, 8}}, want: []string{"v [B,Hkv,Nk,d]", "Nk = 0"}},
		{name: "d = 0", q: in{f64, []int{2, 4, 5, 0}}, k: in{f64, []int{2, 2, 7, 0}}, v: in{f64, []int{2, 2, 7, 0}}, want: []string{"(2, 4, 5, 0)", "d = 0", "at least 1"}},
		{name: "too many elements", q: in{f64, []int{huge, huge, huge, 8}}, k: in{f64, []int{huge, 1, 1, 8}}, v: in{f64, []int{huge, 1, 1, 8}},
			want: []string{"(1048576, 1048576, 1048576, 8)", "2^53"}},
		// Element types.
		{name: "mixed dtypes k", q: q4, k: in{f32, k4.shape}, v: in{f32, k4.shape}, want: []string{"mixed dtypes", "float64", "float32"}},
		{name: "mixed dtypes v", q: q4, k: k4, v: in{f32, k4.shape}, want: []string{"mixed dtypes", "v (2, 2, 7, 8) is float32"}},
		{name: "int tensors", q: in{tensor.Int, q4.shape}, k: in{tensor.Int, k4.shape}, v: in{tensor.Int, k4.shape}, want: []string{"q (2, 4, 5, 8)", "int", "float32 or float64"}},
		{name: "int k", q: q4, k: in{tensor.Int, k4.shape}, v: k4, want: []string{"k (2, 2, 7, 8)", "int", "float32 or float64"}},
		// Options.
		{name: "key lengths count", q: q4, k: k4, v: k4, opts: Options{KeyLengths: []int{7}}, want: []string{"1 entries", "B=2"}},
		{name: "key lengths too many", q: q4, k: k4, v: k4, opts: Options{KeyLengths: []int{7, 7, 7}}, want: []string{"3 entries", "B=2"}},
		{name: "key lengths empty", q: q4, k: k4, v: k4, opts: Options{KeyLengths: []int{}}, want: []string{"0 entries", "B=2"}},
		{name: "key length negative", q: q4, k: k4, v: k4, opts: Options{KeyLengths: []int{3, -1}}, want: []string{"KeyLengths[1] = -1", "Nk=7"}},
		{name: "key length too long", q: q4, k: k4, v: k4, opts: Options{KeyLengths: []int{8, 3}}, want: []string{"KeyLengths[0] = 8", "Nk=7"}},
		{name: "scale NaN", q: q4, k: k4, v: k4, opts: Options{Scale: math.NaN()}, want: []string{"Scale", "NaN"}},
		{name: "scale +Inf", q: q4, k: k4, v: k4, opts: Options{Scale: math.Inf(1)}, want: []string{"Scale", "+Inf"}},
		{name: "scale -Inf", q: q4, k: k4, v: k4, opts: Options{Scale: math.Inf(-1)}, want: []string{"Scale", "-Inf"}},
		// Nodes.
		{name: "nil q", nodes: func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node) {
			return nil, mk(g, "k", k4), mk(g, "v", k4)
		}, want: []string{"q is a nil node"}},
		{name: "nil k", nodes: func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node) {
			return mk(g, "q", q4), nil, mk(g, "v", k4)
		}, want: []string{"k is a nil node"}},
		{name: "nil v", nodes: func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node) {
			return mk(g, "q", q4), mk(g, "k", k4), nil
		}, want: []string{"v is a nil node"}},
		{name: "scalar q", nodes: func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node) {
			return gorgonia.NewScalar(g, f64, gorgonia.WithName("s")), mk(g, "k", k4), mk(g, "v", k4)
		}, want: []string{"q must have rank 4", "()"}},
		{name: "k of another graph", nodes: func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node) {
			return mk(g, "q", q4), mk(gorgonia.NewGraph(), "k", k4), mk(g, "v", k4)
		}, want: []string{"different graphs"}},
		{name: "v of another graph", nodes: func(g *gorgonia.ExprGraph) (q, k, v *gorgonia.Node) {
			return mk(g, "q", q4), mk(g, "k", k4), mk(gorgonia.NewGraph(), "v", k4)
		}, want: []string{"different graphs"}},
	}
	fns := []struct {
		name string
		f    func(q, k, v *gorgonia.Node, opts Options) error
	}{
		{"attention.Attention", func(q, k, v *gorgonia.Node, opts Options) error { _, err := Attention(q, k, v, opts); return err }},
		{"attention.Attention", func(q, k, v *gorgonia.Node, opts Options) error { _, _, err := AttentionLSE(q, k, v, opts); return err }},
		{"attention.Reference", func(q, k, v *gorgonia.Node, opts Options) error { _, err := Reference(q, k, v, opts); return err }},
		{"attention.Reference", func(q, k, v *gorgonia.Node, opts Options) error { _, _, err := ReferenceLSE(q, k, v, opts); return err }},
	}
	for _, c := range cases {
		for i, fn := range fns {
			t.Run(fmt.Sprintf("%s/%s%s", c.name, fn.name, [...]string{"", "LSE", "", "LSE"}[i]), func(t *testing.T) {
				g := gorgonia.NewGraph()
				var q, k, v *gorgonia.Node
				if c.nodes != nil {
					q, k, v = c.nodes(g)
				} else {
					q, k, v = mk(g, "q", c.q), mk(g, "k", c.k), mk(g, "v", c.v)
				}
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("panic: %v", r)
						}
					}()
					err = fn.f(q, k, v, c.opts)
				}()
				if err == nil {
					t.Fatal("no error")
				}
				for _, s := range append([]string{fn.name + ": "}, c.want...) {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
			})
		}
	}
}

// TestBadValues calls the ops' Do with values that do not match what they
// were built for (a caller of Do other than the machines could): each must
// return an error naming the shape or type, not panic.
func TestBadValues(t *testing.T) {
	p := params{B: 1, H: 2, Hkv: 1, Nq: 3, Nk: 5, D: 4, Scale: 0.5}
	fwd := fwdOp{p: p, dtype: tensor.Float64}
	dense := func(dt tensor.Dtype, shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
	}
	q, k := dense(tensor.Float64, 1, 2, 3, 4), dense(tensor.Float64, 1, 1, 5, 4)
	packed := dense(tensor.Float64, fwd.packedLen())
	cases := []struct {
		name string
		op   graph.OpDef
		vals []gorgonia.Value
		want string
	}{
		{"fwd arity", fwd, []gorgonia.Value{q, k}, "got 2 inputs"},
		{"fwd k shape", fwd, []gorgonia.Value{q, dense(tensor.Float64, 1, 1, 6, 4), k}, "(1, 1, 6, 4)"},
		{"fwd dtype", fwd, []gorgonia.Value{q, k, dense(tensor.Float32, 1, 1, 5, 4)}, "float32"},
		{"fwd scalar", fwd, []gorgonia.Value{gorgonia.NewF64(1), k, k}, "q has shape ()"},
		{"fwd nil value", fwd, []gorgonia.Value{q, nil, k}, "k has no value"},
		// An empty tensor (its Data panics in gorgonia.org/tensor) is refused
		// by its shape before anything reads it.
		{"fwd empty k", fwd, []gorgonia.Value{q, dense(tensor.Float64, 1, 1, 0, 4), k}, "(1, 1, 0, 4)"},
		{"fwd empty q", fwd, []gorgonia.Value{dense(tensor.Float64, 1, 2, 0, 4), k, k}, "(1, 2, 0, 4)"},
		{"bwd arity", bwdOp{fwd: fwd}, []gorgonia.Value{q, k, k, packed}, "got 4 inputs"},
		{"bwd empty dv", bwdOp{fwd: fwd}, []gorgonia.Value{q, k, dense(tensor.Float64, 1, 1, 5, 0), packed, packed}, "(1, 1, 5, 0)"},
		{"bwd gradient length", bwdOp{fwd: fwd}, []gorgonia.Value{q, k, k, packed, dense(tensor.Float64, 7)}, "(7)"},
		{"mask shape", maskOp{p: p, dtype: tensor.Float64, keys: true}, []gorgonia.Value{dense(tensor.Float64, 1, 1, 5, 3)}, "(1, 1, 5, 3)"},
		{"mask dtype", maskOp{p: p, dtype: tensor.Float64, keys: true}, []gorgonia.Value{dense(tensor.Float32, 1, 1, 5, 4)}, "float32"},
		{"bwd packed", bwdOp{fwd: fwd}, []gorgonia.Value{q, k, k, dense(tensor.Float64, 3), packed}, "(3)"},
		{"take length", takeOp{shape: tensor.Shape{2, 2}, srcLen: 9}, []gorgonia.Value{dense(tensor.Float64, 8)}, "(8)"},
		{"take dtype", takeOp{shape: tensor.Shape{2, 2}, srcLen: 4}, []gorgonia.Value{dense(tensor.Int, 4)}, "int"},
		{"scatter shape", scatterOp{shape: tensor.Shape{2, 2}, dstLen: 9}, []gorgonia.Value{dense(tensor.Float64, 2, 3)}, "(2, 3)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			_, err := graph.NewOp(c.op).Do(c.vals...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
