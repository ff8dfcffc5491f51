package nn

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/machine"
)

// randSlice returns n standard normal draws scaled by s and shifted by c.
func randSlice(rng *rand.Rand, n int, s, c float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64()*s + c
	}
	return out
}

// runForward builds one expression on float64 inputs and returns its value.
func runForward(t *testing.T, build graph.Builder, inputs ...*tensor.Dense) []float64 {
	t.Helper()
	g := gorgonia.NewGraph()
	var nodes []*gorgonia.Node
	for i, in := range inputs {
		nodes = append(nodes, graph.Input(g, string(rune('a'+i)), in))
	}
	out, err := build(g, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if err := graph.Forward(g); err != nil {
		t.Fatal(err)
	}
	v, err := graph.Values[float64](out)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s: entry %d = %.12g, reference %.12g (|diff| %.3g)", what, i, got[i], want[i], d)
		}
	}
}

func checkGrad(t *testing.T, build graph.Builder, inputs []*tensor.Dense, opts graph.CheckOptions) {
	t.Helper()
	rep, err := graph.CheckGradient(build, inputs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatal(rep)
	}
	t.Log(rep)
}

// refNorm is LayerNorm/RMSNorm by the textbook formula, row by row.
func refNorm(x, gamma, beta []float64, d int, center bool, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x)/d; r++ {
		row := x[r*d : (r+1)*d]
		mu := 0.0
		if center {
			for _, v := range row {
				mu += v
			}
			mu /= float64(d)
		}
		v2 := 0.0
		for _, v := range row {
			v2 += (v - mu) * (v - mu)
		}
		v2 /= float64(d)
		for j, v := range row {
			o := (v - mu) / math.Sqrt(v2+eps) * gamma[j]
			if beta != nil {
				o += beta[j]
			}
			y[r*d+j] = o
		}
	}
	return y
}

func TestNorms(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, tc := range []struct {
		name   string
		rms    bool
		shape  []int
		offset float64
	}{
		{"layernorm/2x5", false, []int{2, 5}, 0},
		{"layernorm/3x4/offset", false, []int{3, 4}, 3},
		{"layernorm/rank3", false, []int{2, 2, 3}, 0},
		{"rmsnorm/2x5", true, []int{2, 5}, 0},
		{"rmsnorm/3x4/offset", true, []int{3, 4}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.shape[len(tc.shape)-1]
			n := 1
			for _, s := range tc.shape {
				n *= s
			}
			x := randSlice(rng, n, 1, tc.offset)
			gamma := randSlice(rng, d, 0.5, 1)
			beta := randSlice(rng, d, 0.5, 0)
			build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
				if tc.rms {
					return RMSNormNode(in[0], in[1], 1e-5)
				}
				return LayerNormNode(in[0], in[1], in[2], 1e-5)
			}
			inputs := func() []*tensor.Dense {
				ins := []*tensor.Dense{graph.NewTensor(tc.shape, x), graph.NewTensor([]int{d}, gamma)}
				if !tc.rms {
					ins = append(ins, graph.NewTensor([]int{d}, beta))
				}
				return ins
			}
			var b []float64
			if !tc.rms {
				b = beta
			}
			got := runForward(t, build, inputs()...)
			assertClose(t, "forward", got, refNorm(x, gamma, b, d, !tc.rms, 1e-5), 1e-12)
			checkGrad(t, build, inputs(), graph.CheckOptions{Seed: 1})
		})
	}
}

func TestNormFloat32MatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	x := randSlice(rng, 4*16, 2, 1)
	x32 := make([]float32, len(x))
	for i, v := range x {
		x32[i] = float32(v)
	}
	g := gorgonia.NewGraph()
	in := graph.Input(g, "x", graph.NewTensor([]int{4, 16}, x32))
	out, err := LayerNormNode(in, nil, nil, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if err := graph.Forward(g); err != nil {
		t.Fatal(err)
	}
	got, _ := graph.Values[float32](out)
	ones := make([]float64, 16)
	for i := range ones {
		ones[i] = 1
	}
	want := refNorm(x, ones, nil, 16, true, 1e-5)
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5 {
			t.Fatalf("entry %d: float32 %g, float64 reference %g", i, got[i], want[i])
		}
	}
}

func TestGELU(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	x := randSlice(rng, 12, 2, 0)
	build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) { return GELU(in[0]) }
	got := runForward(t, build, graph.NewTensor([]int{3, 4}, x))
	want := make([]float64, len(x))
	for i, v := range x {
		// GPT-2's formula, written out independently of gelu().
		want[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*math.Pow(v, 3))))
	}
	assertClose(t, "forward", got, want, 1e-14)
	checkGrad(t, build, []*tensor.Dense{graph.NewTensor([]int{3, 4}, x)}, graph.CheckOptions{})
}

func TestLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, c := range []struct{ bias, fused bool }{{true, false}, {false, false}, {true, true}} {
		bias := c.bias
		m, in, out := 3, 4, 5
		x, w, b := randSlice(rng, m*in, 1, 0), randSlice(rng, in*out, 1, 0), randSlice(rng, out, 1, 0)
		build := func(g *gorgonia.ExprGraph, ns []*gorgonia.Node) (*gorgonia.Node, error) {
			switch {
			case c.fused:
				return apply(linearOp{}, ns...)
			case bias:
				return LinearNode(ns[0], ns[1], ns[2])
			}
			return LinearNode(ns[0], ns[1], nil)
		}
		inputs := func() []*tensor.Dense {
			ts := []*tensor.Dense{graph.NewTensor([]int{m, in}, x), graph.NewTensor([]int{in, out}, w)}
			if bias {
				ts = append(ts, graph.NewTensor([]int{out}, b))
			}
			return ts
		}
		want := make([]float64, m*out)
		for i := 0; i < m; i++ {
			for o := 0; o < out; o++ {
				s := 0.0
				if bias {
					s = b[o]
				}
				for k := 0; k < in; k++ {
					s += x[i*in+k] * w[k*out+o]
				}
				want[i*out+o] = s
			}
		}
		assertClose(t, "forward", runForward(t, build, inputs()...), want, 1e-12)
		checkGrad(t, build, inputs(), graph.CheckOptions{})
	}
}

// TestLinearFused: the fused linear layer gives the bits of the product and
// then the bias (matmulOp, affineOp) in float32, at the sizes of a GPT's
// layers (split over the cores by rows) and small ones; a scope whose
// machine runs it builds it, another the two ops.
func TestLinearFused(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, s := range [][3]int{{2048, 64, 192}, {3, 4, 5}, {100, 256, 64}} {
		m, in, out := s[0], s[1], s[2]
		x, w, b := newDense(tensor.Float32, m, in), newDense(tensor.Float32, in, out), newDense(tensor.Float32, out)
		for _, d := range []*tensor.Dense{x, w, b} {
			fromF64(d, randSlice(rng, d.Shape().TotalSize(), 1, 0))
		}
		got, err := run(linearOp{}, x, w, b)
		if err != nil {
			t.Fatal(err)
		}
		xw, err := run(matmulOp{}, x, w)
		if err != nil {
			t.Fatal(err)
		}
		want, err := run(affineOp{shift: true, dims: 2}, xw, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range floats[float32](want) {
			if g := floats[float32](got)[i]; g != v {
				t.Fatalf("%v: y[%d] = %v, product and bias %v", s, i, g, v)
			}
		}
	}
	for _, native := range []bool{false, true} {
		g := gorgonia.NewGraph()
		sc := NewScope(g, tensor.Float64, false)
		if native {
			sc.native = func(string) bool { return true }
		}
		l, err := NewLinear("l", 4, 5, true, tensor.Float64, rng, 0.02)
		if err != nil {
			t.Fatal(err)
		}
		x := graph.Input(g, "x", graph.NewTensor([]int{3, 4}, randSlice(rng, 12, 1, 0)))
		y, err := l.Forward(sc, x)
		if err != nil {
			t.Fatal(err)
		}
		want := "nn.affineOp"
		if native {
			want = "nn.linearOp"
		}
		if k := machine.OpKind(y.Op()); k != want {
			t.Fatalf("native %t: the layer's output is a %s, want %s", native, k, want)
		}
	}
}

func TestEmbedding(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	v, d := 5, 3
	table := randSlice(rng, v*d, 1, 0)
	idx := []int{4, 0, 4, 2, 1, 4} // repeats exercise the scatter-add
	build := func(g *gorgonia.ExprGraph, ns []*gorgonia.Node) (*gorgonia.Node, error) {
		ix, err := IndexInput(g, "idx", len(idx))
		if err != nil {
			return nil, err
		}
		if err := SetIndices(ix, idx); err != nil {
			return nil, err
		}
		return EmbedNode(ns[0], ix)
	}
	want := make([]float64, 0, len(idx)*d)
	for _, i := range idx {
		want = append(want, table[i*d:(i+1)*d]...)
	}
	assertClose(t, "forward", runForward(t, build, graph.NewTensor([]int{v, d}, table)), want, 0)
	checkGrad(t, build, []*tensor.Dense{graph.NewTensor([]int{v, d}, table)}, graph.CheckOptions{})

	// An index outside the table is an error, not a panic.
	g := gorgonia.NewGraph()
	tab := graph.Input(g, "table", graph.NewTensor([]int{v, d}, table))
	ix, err := IndexInput(g, "idx", 2)
	if err != nil {
		t.Fatal(err)
	}
	_ = SetIndices(ix, []int{1, v})
	if _, err := EmbedNode(tab, ix); err != nil {
		t.Fatal(err)
	}
	if err := graph.Forward(g); err == nil {
		t.Fatal("index out of range: no error")
	} else {
		t.Log(err)
	}
}

func TestHeadsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	b, n, h, d, c, off := 2, 3, 2, 2, 9, 3
	x := randSlice(rng, b*n*c, 1, 0)
	split := func(g *gorgonia.ExprGraph, ns []*gorgonia.Node) (*gorgonia.Node, error) {
		return apply(headsOp{split: true, b: b, n: n, h: h, d: d, off: off, c: c}, ns[0])
	}
	got := runForward(t, split, graph.NewTensor([]int{b * n, c}, x))
	for bi := 0; bi < b; bi++ {
		for i := 0; i < h; i++ {
			for ti := 0; ti < n; ti++ {
				for j := 0; j < d; j++ {
					if g, w := got[((bi*h+i)*n+ti)*d+j], x[(bi*n+ti)*c+off+i*d+j]; g != w {
						t.Fatalf("split[%d,%d,%d,%d] = %g, want %g", bi, i, ti, j, g, w)
					}
				}
			}
		}
	}
	checkGrad(t, split, []*tensor.Dense{graph.NewTensor([]int{b * n, c}, x)}, graph.CheckOptions{})
	merge := func(g *gorgonia.ExprGraph, ns []*gorgonia.Node) (*gorgonia.Node, error) {
		return apply(headsOp{b: b, n: n, h: h, d: d, off: 0, c: h * d}, ns[0])
	}
	checkGrad(t, merge, []*tensor.Dense{graph.NewTensor([]int{b, h, n, d}, randSlice(rng, b*h*n*d, 1, 0))}, graph.CheckOptions{})
}

func TestDropout(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	x := randSlice(rng, 40*50, 1, 0)
	for _, train := range []bool{true, false} {
		g := gorgonia.NewGraph()
		s := NewScope(g, tensor.Float64, train)
		in := graph.Input(g, "x", graph.NewTensor([]int{40, 50}, x))
		y, err := s.Dropout(in, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		if !train {
			if y != in || len(s.DropoutMasks()) != 0 {
				t.Fatal("dropout active outside training")
			}
			continue
		}
		s.ResampleDropout(rand.New(rand.NewSource(8)))
		if err := graph.Forward(g); err != nil {
			t.Fatal(err)
		}
		got, _ := graph.Values[float64](y)
		zeros := 0
		for i, v := range got {
			switch {
			case v == 0:
				zeros++
			case math.Abs(v-x[i]/0.75) > 1e-12:
				t.Fatalf("kept entry %d = %g, want x/(1-p) = %g", i, v, x[i]/0.75)
			}
		}
		if frac := float64(zeros) / float64(len(got)); math.Abs(frac-0.25) > 0.03 {
			t.Fatalf("dropped fraction %.3f, want ≈ 0.25", frac)
		}
	}
	g := gorgonia.NewGraph()
	s := NewScope(g, tensor.Float64, true)
	in := graph.Input(g, "x", graph.NewTensor([]int{2}, []float64{1, 2}))
	for _, p := range []float64{-0.1, 1, math.NaN()} {
		if _, err := s.Dropout(in, p); err == nil {
			t.Fatalf("p = %g accepted", p)
		}
	}
}

func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	m, n, k := 3, 4, 5
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			as, bs := []int{m, k}, []int{k, n}
			if tA {
				as = []int{k, m}
			}
			if tB {
				bs = []int{n, k}
			}
			a, b := randSlice(rng, m*k, 1, 0), randSlice(rng, k*n, 1, 0)
			build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
				return MatMul(in[0], in[1], tA, tB)
			}
			want := make([]float64, m*n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					for p := 0; p < k; p++ {
						av, bv := a[i*k+p], b[p*n+j]
						if tA {
							av = a[p*m+i]
						}
						if tB {
							bv = b[j*k+p]
						}
						want[i*n+j] += av * bv
					}
				}
			}
			inputs := func() []*tensor.Dense { return []*tensor.Dense{graph.NewTensor(as, a), graph.NewTensor(bs, b)} }
			assertClose(t, "forward", runForward(t, build, inputs()...), want, 1e-12)
			checkGrad(t, build, inputs(), graph.CheckOptions{})

			// The float32 path (internal/kernels/gemm) against the same reference.
			a32, b32 := make([]float32, len(a)), make([]float32, len(b))
			for i := range a {
				a32[i] = float32(a[i])
			}
			for i := range b {
				b32[i] = float32(b[i])
			}
			g := gorgonia.NewGraph()
			y, err := MatMul(graph.Input(g, "a", graph.NewTensor(as, a32)), graph.Input(g, "b", graph.NewTensor(bs, b32)), tA, tB)
			if err != nil {
				t.Fatal(err)
			}
			if err := graph.Forward(g); err != nil {
				t.Fatal(err)
			}
			got, _ := graph.Values[float32](y)
			for i := range got {
				if math.Abs(float64(got[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("float32 tA=%t tB=%t entry %d: %g, want %g", tA, tB, i, got[i], want[i])
				}
			}
		}
	}
	g := gorgonia.NewGraph()
	x := graph.Input(g, "x", graph.NewTensor([]int{2, 3}, make([]float64, 6)))
	if _, err := MatMul(x, x, false, false); err == nil {
		t.Fatal("[2,3]·[2,3] accepted")
	}
}

// TestGELUFloat32 checks the float32 kernel (vectorized exponential, float32
// arithmetic) against GPT-2's formula in float64 over a sweep of x, forward
// and gradient, with the special values.
func TestGELUFloat32(t *testing.T) {
	var xs []float64
	for v := -12.0; v <= 12; v += 1.0 / 64 {
		xs = append(xs, v)
	}
	xs = append(xs, -1e30, -100, -30, 1e-30, -1e-30, 0, 30, 100, 1e30)
	const n = 300 // several blocks of the kernel, and a tail
	for len(xs)%n != 0 {
		xs = append(xs, float64(len(xs)%7)-3.5)
	}
	x32, g32 := make([]float32, len(xs)), make([]float32, len(xs))
	for i, v := range xs {
		x32[i] = float32(v)
		g32[i] = float32(1 + i%3)
	}
	xt := tensor.New(tensor.WithShape(len(xs)/n, n), tensor.WithBacking(x32))
	gt := tensor.New(tensor.WithShape(len(xs)/n, n), tensor.WithBacking(g32))
	y, err := run(geluOp{dims: 2}, xt)
	if err != nil {
		t.Fatal(err)
	}
	dy, err := run(geluOp{grad: true, dims: 2}, xt, gt)
	if err != nil {
		t.Fatal(err)
	}
	ys, dys := y.Data().([]float32), dy.Data().([]float32)
	k := math.Sqrt(2 / math.Pi)
	for i := range xs {
		v := float64(x32[i]) // the float32 input, exactly
		u := k * (v + 0.044715*v*v*v)
		// ½(1 + tanh u) and 1 − tanh² u from e^{−2|u|}, without the
		// cancellation of 1 + tanh u in float64 for u ≪ 0.
		a := math.Exp(-2 * math.Abs(u))
		half := 1 / (1 + a) // ½(1 + tanh|u|)
		if u < 0 {
			half = a / (1 + a)
		}
		sech2 := 4 * a / ((1 + a) * (1 + a))
		want := v * half
		dwant := float64(g32[i]) * (half + 0.5*v*sech2*k*(1+3*0.044715*v*v))
		// The argument u (up to ~0.07·|x|³) is rounded once in float32: a
		// relative error of ~2⁻²⁴·|u| in e^{−2u}, hence in the result's
		// smaller part; a few ulp besides.
		tol := 4e-7 * (1 + 2*math.Abs(u)) * math.Max(math.Abs(want), 1e-30)
		if math.IsInf(want, 0) || math.Abs(float64(ys[i])-want) > tol {
			if !(math.IsInf(want, 0) && float64(ys[i]) == want) {
				t.Errorf("gelu(%g) = %g, want %g (tolerance %.2g)", v, ys[i], want, tol)
			}
		}
		dtol := 4e-7 * (1 + 2*math.Abs(u)) * (math.Abs(dwant) + float64(g32[i])*math.Abs(v)*k*1e-3 + 1e-30)
		if math.Abs(v) < 1e29 && math.Abs(float64(dys[i])-dwant) > dtol+1e-7*float64(g32[i]) {
			t.Errorf("gelu'(%g)·%g = %g, want %g", v, g32[i], dys[i], dwant)
		}
	}
}

// TestHeadsScatterZeroes: the scatter writes every element of its output,
// zeros outside the heads' columns, into a buffer that starts as NaN (the
// machine's buffers hold earlier values), for each sequence of the batch.
func TestHeadsScatterZeroes(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	b, n, h, d, c, off := 5, 7, 2, 4, 15, 3
	k := headsOp{b: b, n: n, h: h, d: d, off: off, c: c}
	x := graph.NewTensor([]int{b, h, n, d}, randSlice(rng, b*h*n*d, 1, 0))
	out := newDense(tensor.Float64, b*n, c)
	y := floats[float64](out)
	for i := range y {
		y[i] = math.NaN()
	}
	if err := k.do(out, []*tensor.Dense{x}); err != nil {
		t.Fatal(err)
	}
	xs := floats[float64](x)
	for r := 0; r < b*n; r++ {
		for j := 0; j < c; j++ {
			want := 0.0
			if i := (j - off) / d; j >= off && i < h {
				want = xs[((r/n*h+i)*n+r%n)*d+(j-off)%d]
			}
			if got := y[r*c+j]; got != want {
				t.Fatalf("row %d column %d: %g, want %g", r, j, got, want)
			}
		}
	}
}
