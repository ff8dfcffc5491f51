package attention

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestBadInput checks that every kind of bad input gives an error that
// names the offending shapes or values, from both Attention and Reference,
// and never a panic.
func TestBadInput(t *testing.T) {
	f64, f32 := tensor.Float64, tensor.Float32
	type in struct {
		dt    tensor.Dtype
		shape []int
	}
	q4 := in{f64, []int{2, 4, 5, 8}}
	k4 := in{f64, []int{2, 2, 7, 8}}
	cases := []struct {
		name    string
		q, k, v in
		opts    Options
		want    []string // substrings of the error
	}{
		{"q rank 3", in{f64, []int{2, 5, 8}}, k4, k4, Options{}, []string{"q must have rank 4", "(2, 5, 8)"}},
		{"k rank 5", q4, in{f64, []int{2, 2, 7, 8, 1}}, k4, Options{}, []string{"k must have rank 4", "(2, 2, 7, 8, 1)"}},
		{"v rank 2", q4, k4, in{f64, []int{14, 8}}, Options{}, []string{"v must have rank 4", "(14, 8)"}},
		{"head dim", q4, in{f64, []int{2, 2, 7, 6}}, in{f64, []int{2, 2, 7, 6}}, Options{}, []string{"d=8", "d=6"}},
		{"k and v differ", q4, k4, in{f64, []int{2, 2, 9, 8}}, Options{}, []string{"(2, 2, 7, 8)", "(2, 2, 9, 8)", "same shape"}},
		{"batch", q4, in{f64, []int{3, 2, 7, 8}}, in{f64, []int{3, 2, 7, 8}}, Options{}, []string{"B=2", "B=3"}},
		{"heads", in{f64, []int{2, 5, 5, 8}}, k4, k4, Options{}, []string{"H=5", "Hkv=2"}},
		{"mixed dtypes k", q4, in{f32, k4.shape}, in{f32, k4.shape}, Options{}, []string{"mixed dtypes", "float64", "float32"}},
		{"mixed dtypes v", q4, k4, in{f32, k4.shape}, Options{}, []string{"mixed dtypes", "v (2, 2, 7, 8) is float32"}},
		{"zero dim", in{f64, []int{2, 4, 0, 8}}, k4, k4, Options{}, []string{"(2, 4, 0, 8)", "at least 1"}},
		{"key lengths count", q4, k4, k4, Options{KeyLengths: []int{7}}, []string{"1 entries", "B=2"}},
		{"key length negative", q4, k4, k4, Options{KeyLengths: []int{3, -1}}, []string{"KeyLengths[1] = -1", "Nk=7"}},
		{"key length too long", q4, k4, k4, Options{KeyLengths: []int{8, 3}}, []string{"KeyLengths[0] = 8", "Nk=7"}},
		{"scale NaN", q4, k4, k4, Options{Scale: math.NaN()}, []string{"Scale", "NaN"}},
		{"scale +Inf", q4, k4, k4, Options{Scale: math.Inf(1)}, []string{"Scale", "+Inf"}},
		{"scale -Inf", q4, k4, k4, Options{Scale: math.Inf(-1)}, []string{"Scale", "-Inf"}},
	}
	for _, c := range cases {
		for _, m := range []impl{fused, decomposed} {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				g := gorgonia.NewGraph()
				node := func(name string, x in) *gorgonia.Node {
					return gorgonia.NewTensor(g, x.dt, len(x.shape), gorgonia.WithShape(x.shape...), gorgonia.WithName(name))
				}
				q, k, v := node("q", c.q), node("k", c.k), node("v", c.v)
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("panic: %v", r)
						}
					}()
					if m == fused {
						_, err = Attention(q, k, v, c.opts)
					} else {
						_, err = Reference(q, k, v, c.opts)
					}
				}()
				if err == nil {
					t.Fatal("no error")
				}
				for _, s := range c.want {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
			})
		}
	}
}

// TestBadInputNodes covers nil nodes and nodes of different graphs.
func TestBadInputNodes(t *testing.T) {
	g1, g2 := gorgonia.NewGraph(), gorgonia.NewGraph()
	mk := func(g *gorgonia.ExprGraph, name string) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName(name))
	}
	q := mk(g1, "q")
	if _, err := Attention(q, nil, mk(g1, "v"), Options{}); err == nil || !strings.Contains(err.Error(), "k is a nil node") {
		t.Errorf("nil k: got %v", err)
	}
	if _, err := Attention(q, mk(g2, "k"), mk(g1, "v"), Options{}); err == nil || !strings.Contains(err.Error(), "different graphs") {
		t.Errorf("two graphs: got %v", err)
	}
	s := gorgonia.NewScalar(g1, tensor.Float64, gorgonia.WithName("s"))
	if _, err := Attention(s, q, q, Options{}); err == nil || !strings.Contains(err.Error(), "rank 4") {
		t.Errorf("scalar q: got %v", err)
	}
	i := gorgonia.NewTensor(g1, tensor.Int, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName("i"))
	if _, err := Attention(i, i, i, Options{}); err == nil || !strings.Contains(err.Error(), "float32 or float64") {
		t.Errorf("int q: got %v", err)
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
		op   gorgonia.Op
		vals []gorgonia.Value
		want string
	}{
		{"fwd arity", fwd, []gorgonia.Value{q, k}, "got 2 inputs"},
		{"fwd k shape", fwd, []gorgonia.Value{q, dense(tensor.Float64, 1, 1, 6, 4), k}, "(1, 1, 6, 4)"},
		{"fwd dtype", fwd, []gorgonia.Value{q, k, dense(tensor.Float32, 1, 1, 5, 4)}, "float32"},
		{"fwd scalar", fwd, []gorgonia.Value{gorgonia.NewF64(1), k, k}, "*gorgonia.F64"},
		{"bwd packed", bwdOp{fwd}, []gorgonia.Value{q, k, k, dense(tensor.Float64, 3), packed}, "(3)"},
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
			_, err := c.op.Do(c.vals...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
