package softmax

import (
	"fmt"
	"math"
	"math/rand"
	"sync"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

var kinds = []kind{kindSoftmax, kindLogSoftmax, kindLogSumExp}

// apply1 adds k's op on x along axis through the public constructors.
func apply1(k kind, x *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	switch k {
	case kindSoftmax:
		return Softmax(x, axis)
	case kindLogSoftmax:
		return LogSoftmax(x, axis)
	default:
		return LogSumExp(x, axis)
	}
}

// weightedLoss returns Σ w∘y for a w of y's shape (a scalar w·y when y is
// a scalar), so that the upstream gradient of y is w.
func weightedLoss[T graph.Float](g *gorgonia.ExprGraph, y *gorgonia.Node, w []T) (*gorgonia.Node, error) {
	wn := graph.Input(g, "w", graph.NewTensor(y.Shape(), w))
	if y.IsScalar() {
		return gorgonia.Mul(y, wn)
	}
	p, err := gorgonia.HadamardProd(y, wn)
	if err != nil {
		return nil, err
	}
	return gorgonia.Sum(p)
}

// checkTape runs k on x (shape, axis) with upstream gradient w on a
// TapeMachine and compares y and dx with the float64 reference loops on the
// same inputs, within tol = {rtol, atol} of y, then of dx.
func checkTape[T graph.Float](t *testing.T, name string, k kind, x, w []T, shape []int, axis int, tol [4]float64) {
	t.Helper()
	y, dx, err := runTape(k, x, w, shape, axis)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := compare(y, reference(k, widenAny(x), shape, axis), tol[0], tol[1]); err != nil {
		t.Errorf("%s forward: %v", name, err)
	}
	if err := compare(dx, referenceGrad(k, widenAny(x), widenAny(w), shape, axis), tol[2], tol[3]); err != nil {
		t.Errorf("%s backward: %v", name, err)
	}
}

// weightedGraph builds, on a new graph, y = k(x) along axis and the loss
// Σ w∘y, with x an input node holding x.
func weightedGraph[T graph.Float](k kind, x, w []T, shape []int, axis int) (xn, y, loss *gorgonia.Node, err error) {
	g := gorgonia.NewGraph()
	xn = graph.Input(g, "x", graph.NewTensor(shape, x))
	if y, err = apply1(k, xn, axis); err != nil {
		return nil, nil, nil, err
	}
	loss, err = weightedLoss(g, y, w)
	return xn, y, loss, err
}

// runTape runs k on x (shape, axis) forward and backward on a TapeMachine
// with upstream gradient w and returns y and dx.
func runTape[T graph.Float](k kind, x, w []T, shape []int, axis int) (y, dx []T, err error) {
	xn, yn, loss, err := weightedGraph(k, x, w, shape, axis)
	if err != nil {
		return nil, nil, err
	}
	if err := graph.ForwardBackward(loss, xn); err != nil {
		return nil, nil, err
	}
	if y, err = graph.Values[T](yn); err != nil {
		return nil, nil, err
	}
	dx, err = graph.Grads[T](xn)
	return y, dx, err
}

// outShape is the shape of k's output for x of shape along axis ≥ 0.
func outShape(k kind, shape []int, axis int) []int {
	if k != kindLogSumExp {
		return shape
	}
	return append(append([]int{}, shape[:axis]...), shape[axis+1:]...)
}

func size(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func randSlice(rng *rand.Rand, n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64() * scale
	}
	return x
}

func narrow(x []float64) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = float32(v)
	}
	return r
}

// testShapes cover every rank up to 3, unit dimensions, strided panels
// wider than panelWidth (inner 70, 130) and sizes that split over cores.
var testShapes = [][]int{
	{1}, {5}, {2, 3}, {3, 1}, {1, 4}, {2, 3, 4},
	{2, 5, 70}, {3, 40, 130}, {64, 1024}, {4, 33, 9, 2},
}

// TestOpsAgainstReference runs every op on every shape along every axis
// (and its negative twin) in float64 and float32, forward and backward, and
// compares with the float64 loops of ref_test.go. The float32 results must
// be within 1e-6 relative of the float64 op's on the same inputs.
func TestOpsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, shape := range testShapes {
		for axis := -len(shape); axis < len(shape); axis++ {
			a := axis
			if a < 0 {
				a += len(shape)
			}
			if axis < 0 && size(shape) > 5000 {
				continue // the positive axis covered it; keep the run short
			}
			// The reference gradient costs size·N (a Jacobian per row):
			// 67M for [64 1024] along its last axis, most of a minute
			// under -race. -short keeps the rest, [64 1024] along axis 0
			// included, whose 16 panels still split over the cores.
			if testing.Short() && size(shape)*shape[a] > 5e6 {
				continue
			}
			x32 := narrow(randSlice(rng, size(shape), 3))
			x := widen(x32) // exactly the float32 inputs
			for _, k := range kinds {
				name := fmt.Sprintf("%v%v/axis%d", k, shape, axis)
				w := randSlice(rng, size(outShape(k, shape, a)), 1)
				w32 := narrow(w)
				w = widen(w32)

				y, dx, err := runTape(k, x, w, shape, axis)
				if err != nil {
					t.Fatalf("%s float64: %v", name, err)
				}
				if err := compare(y, reference(k, x, shape, a), 1e-12, 1e-14); err != nil {
					t.Errorf("%s float64 forward: %v", name, err)
				}
				if err := compare(dx, referenceGrad(k, x, w, shape, a), 1e-11, 1e-14); err != nil {
					t.Errorf("%s float64 backward: %v", name, err)
				}

				y32, dx32, err := runTape(k, x32, w32, shape, axis)
				if err != nil {
					t.Fatalf("%s float32: %v", name, err)
				}
				// 1e-44: below the float32 subnormal spacing, where only
				// underflow to 0 or a subnormal can differ. A log-sum-exp
				// m + log Σ e^{x−m} can cancel to near 0 although its terms
				// are of the inputs' size (|x| ≤ 3 here): there its error is
				// judged against that size, 1e-7 (under one float32 ulp of
				// 3; a float32 loop that sums float32 exponentials is off by
				// a few times that).
				atol := 1e-44
				if k == kindLogSumExp {
					atol = 1e-7
				}
				if err := compare(y32, y, 1e-6, atol); err != nil {
					t.Errorf("%s float32 forward vs float64: %v", name, err)
				}
				if err := compareGrad32(dx32, dx, w, k, shape, a); err != nil {
					t.Errorf("%s float32 backward vs float64: %v", name, err)
				}
			}
		}
	}
}

// compareGrad32 holds a float32 gradient dx to the float64 one within
// 1e-6·(|dx_i| + Σ_row |dy|): relative to the entry and to the size of the
// row's upstream gradient dy. A bound relative to the entry alone cannot
// hold for any backward that reads the float32 forward output y: softmax's
// dx_i = y_i(dy_i − Σ dy∘y) and log-softmax's dy_i − e^{y_i}·Σ dy cancel
// to near zero in some entries, and in a row with y_0 = 1 − 3e-7 the float32
// y_0 (spacing 6e-8 there) knows 1 − y_0 only to 20%. The error from y's
// rounding is bounded by a few 1e-8 times Σ|dy|.
func compareGrad32(got []float32, want []float64, dy []float64, k kind, shape []int, axis int) error {
	var err error
	got64 := widen(got)
	rows(shape, axis, func(idx []int, r int) {
		scale := 0.0
		if k == kindLogSumExp {
			scale = math.Abs(dy[r])
		} else {
			for _, i := range idx {
				scale += math.Abs(dy[i])
			}
		}
		if e := compare(gather(got64, idx), gather(want, idx), 1e-6, 1e-6*scale+1e-44); e != nil && err == nil {
			err = fmt.Errorf("row %v: %v", idx, e)
		}
	})
	return err
}

// TestGradientCheck is the finite-difference check (graph.CheckGradient,
// float64 central differences, eps 1e-6, atol 1e-5, rtol 1e-3) of the three
// ops on the shapes along every axis.
func TestGradientCheck(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, shape := range [][]int{{1}, {5}, {2, 3}, {3, 1}, {2, 3, 4}} {
		for axis := range shape {
			for _, k := range kinds {
				x := graph.RandTensor[float64](rng, shape...)
				build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
					return apply1(k, in[0], axis)
				}
				rep, err := graph.CheckGradient(build, []*tensor.Dense{x}, graph.CheckOptions{Seed: 3})
				if err != nil {
					t.Fatalf("%v%v axis %d: %v", k, shape, axis, err)
				}
				if !rep.OK {
					t.Errorf("%v%v axis %d: %v", k, shape, axis, rep)
				}
			}
		}
	}
}

// TestEdgeCases checks the documented edge semantics row by row, along the
// last axis (contiguous rows) and along the first (the same rows strided),
// forward and backward, in both precisions.
func TestEdgeCases(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	rowsIn := [][]float64{
		{1, 2, 3},
		{1000, 0, 1},
		{-inf, 0, 1},
		{-inf, -inf, -inf},
		{0, nan, 1},
		{0, inf, 1},
		{1e4, -1e4, 0},
		{1e30, -1e30, 1e30},
		{-inf, nan, -inf},
		{-1e30, -1e30, -1e30},
	}
	n, c := len(rowsIn), 3
	x := make([]float64, 0, n*c)
	for _, r := range rowsIn {
		x = append(x, r...)
	}
	xt := make([]float64, n*c) // transposed: the rows become columns
	for i := range n {
		for j := range c {
			xt[j*n+i] = x[i*c+j]
		}
	}
	rng := rand.New(rand.NewSource(3))
	for _, layoutCase := range []struct {
		name  string
		x     []float64
		shape []int
		axis  int
	}{{"rows", x, []int{n, c}, 1}, {"columns", xt, []int{c, n}, 0}} {
		for _, k := range kinds {
			shape, axis := layoutCase.shape, layoutCase.axis
			w := randSlice(rng, size(outShape(k, shape, axis)), 1)
			name := fmt.Sprintf("%v %s", k, layoutCase.name)
			checkTape(t, name, k, layoutCase.x, w, shape, axis, [4]float64{1e-15, 0, 1e-14, 1e-300})
			// float32: ±1e30 and ±1e4 are exactly representable as
			// float32, so the same expectations hold in float32.
			checkTape(t, name+" float32", k, narrow(layoutCase.x), narrow(w), shape, axis, [4]float64{1e-6, 0, 1e-6, 1e-7})
		}
	}
	// Spelled out for the cases the issue names.
	y, _, _ := runTape(kindSoftmax, []float64{1000, 0, 1, 1e30, -1e30, 1e30, -inf, -inf, -inf}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1}, []int{3, 3}, 1)
	wantY := []float64{1, 0, 0, 0.5, 0, 0.5, 0, 0, 0}
	for i := range wantY {
		if y[i] != wantY[i] {
			t.Errorf("softmax [[1000 0 1] [1e30 -1e30 1e30] [-Inf -Inf -Inf]] = %v, want exactly %v", y, wantY)
			break
		}
	}
}

// TestShapes checks the output shapes, including log-sum-exp's scalar.
func TestShapes(t *testing.T) {
	for _, c := range []struct {
		shape []int
		axis  int
		want  tensor.Shape
	}{
		{[]int{5}, 0, tensor.ScalarShape()},
		{[]int{5}, -1, tensor.ScalarShape()},
		{[]int{3, 1}, 0, tensor.Shape{1}},
		{[]int{3, 1}, 1, tensor.Shape{3}},
		{[]int{2, 3, 4}, 1, tensor.Shape{2, 4}},
		{[]int{2, 3, 4}, -1, tensor.Shape{2, 3}},
	} {
		g := gorgonia.NewGraph()
		x := graph.Input(g, "x", graph.NewTensor(c.shape, make([]float64, size(c.shape))))
		for _, k := range kinds {
			y, err := apply1(k, x, c.axis)
			if err != nil {
				t.Fatalf("%v%v axis %d: %v", k, c.shape, c.axis, err)
			}
			want := c.want
			if k != kindLogSumExp {
				want = tensor.Shape(c.shape)
			}
			if !y.Shape().Eq(want) || (want.IsScalar() != y.IsScalar()) {
				t.Errorf("%v%v axis %d: shape %v, want %v", k, c.shape, c.axis, y.Shape(), want)
			}
		}
	}
}

// TestLispMachine runs forward and backward on the LispMachine (DoDiff), and
// twice, with new input values in between.
func TestLispMachine(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{5}, 0}, {[]int{3, 4}, 1}, {[]int{3, 4}, 0}, {[]int{2, 3, 70}, 1}} {
		for _, k := range kinds {
			name := fmt.Sprintf("%v%v axis %d", k, c.shape, c.axis)
			x := randSlice(rng, size(c.shape), 2)
			w := randSlice(rng, size(outShape(k, c.shape, c.axis)), 1)
			xn, y, loss, err := weightedGraph(k, x, w, c.shape, c.axis)
			if err != nil {
				t.Fatal(err)
			}
			g := xn.Graph()
			for run := range 2 {
				copy(x, randSlice(rng, len(x), 2))
				zeroGrad(xn) // machines add into the input's gradient
				m := gorgonia.NewLispMachine(g)
				if err := m.RunAll(); err != nil {
					t.Fatalf("%s run %d: %v", name, run, err)
				}
				got, err := graph.Values[float64](y)
				if err != nil {
					t.Fatal(err)
				}
				if err := compare(got, reference(k, x, c.shape, c.axis), 1e-12, 1e-14); err != nil {
					t.Errorf("%s run %d forward: %v", name, run, err)
				}
				dx, err := graph.Grads[float64](xn)
				if err != nil {
					t.Fatal(err)
				}
				if err := compare(dx, referenceGrad(k, x, w, c.shape, c.axis), 1e-11, 1e-14); err != nil {
					t.Errorf("%s run %d backward: %v", name, run, err)
				}
				m.Close()
				_ = loss
			}
		}
	}
}

// TestTapeMachineRepeated runs one compiled TapeMachine several times with
// new input values, so that the output buffers are reused (UsePreallocDo).
func TestTapeMachineRepeated(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, k := range kinds {
		for _, c := range []struct {
			shape []int
			axis  int
		}{{[]int{4, 6}, 1}, {[]int{4, 6}, 0}, {[]int{6}, 0}} {
			name := fmt.Sprintf("%v%v axis %d", k, c.shape, c.axis)
			x := make([]float32, size(c.shape))
			w := narrow(randSlice(rng, size(outShape(k, c.shape, c.axis)), 1))
			xn, y, loss, err := weightedGraph(k, x, w, c.shape, c.axis)
			if err != nil {
				t.Fatal(err)
			}
			g := xn.Graph()
			if _, err := gorgonia.Grad(loss, xn); err != nil {
				t.Fatal(err)
			}
			m := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(xn))
			for run := range 3 {
				copy(x, narrow(randSlice(rng, len(x), 2)))
				zeroGrad(xn)
				m.Reset()
				if err := m.RunAll(); err != nil {
					t.Fatalf("%s run %d: %v", name, run, err)
				}
				got, _ := graph.Values[float32](y)
				if err := compare(got, reference(k, widen(x), c.shape, c.axis), 1e-6, 1e-44); err != nil {
					t.Errorf("%s run %d forward: %v", name, run, err)
				}
				dx, _ := graph.Grads[float32](xn)
				if err := compare(dx, referenceGrad(k, widen(x), widen(w), c.shape, c.axis), 1e-5, 1e-6); err != nil {
					t.Errorf("%s run %d backward: %v", name, run, err)
				}
			}
			m.Close()
		}
	}
}

// TestConcurrentGraphs builds and runs separate graphs from several
// goroutines at once (run with -race).
func TestConcurrentGraphs(t *testing.T) {
	var wg sync.WaitGroup
	for gi := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + gi)))
			shape := []int{2 + gi%3, 50 + 37*gi}
			k := kinds[gi%3]
			for range 3 {
				x := randSlice(rng, size(shape), 2)
				w := randSlice(rng, size(outShape(k, shape, 1)), 1)
				y, dx, err := runTape(k, x, w, shape, 1)
				if err != nil {
					t.Errorf("goroutine %d: %v", gi, err)
					return
				}
				if err := compare(y, reference(k, x, shape, 1), 1e-12, 1e-14); err != nil {
					t.Errorf("goroutine %d forward: %v", gi, err)
				}
				if err := compare(dx, referenceGrad(k, x, w, shape, 1), 1e-11, 1e-14); err != nil {
					t.Errorf("goroutine %d backward: %v", gi, err)
				}
			}
		}()
	}
	wg.Wait()
}

// zeroGrad clears the gradient bound to n, if any: both machines add each
// run's gradient into it.
func zeroGrad(n *gorgonia.Node) {
	if d, err := n.Grad(); err == nil {
		if t, ok := d.(tensor.Tensor); ok {
			t.Zero()
		}
	}
}

// noPanic runs f, turning a panic into a test failure.
func noPanic(t *testing.T, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("panic: %v", r)
			err = fmt.Errorf("panicked")
		}
	}()
	return f()
}

// TestUsePrealloc checks that the ops write into a suitable preallocated
// output and allocate anew when it has the wrong shape or is an input.
func TestUsePrealloc(t *testing.T) {
	x := []float64{1, 2, 3, -1, 0, 5}
	xt := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(append([]float64(nil), x...)))
	want := reference(kindSoftmax, x, []int{2, 3}, 1)
	fresh := tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float64))
	for _, c := range []struct {
		name     string
		prealloc gorgonia.Value
		reuse    bool
	}{
		{"fits", fresh, true},
		{"wrong shape", tensor.New(tensor.WithShape(3, 2), tensor.Of(tensor.Float64)), false},
		{"wrong dtype", tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float32)), false},
		{"is the input", xt, false},
		{"nil", nil, false},
	} {
		v, err := graph.NewOp(fwdOp{kind: kindSoftmax, axis: 1, dims: 2}).UsePreallocDo(c.prealloc, xt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := v == c.prealloc; got != c.reuse {
			t.Errorf("%s: reused %v, want %v", c.name, got, c.reuse)
		}
		if err := compare(v.Data().([]float64), want, 1e-14, 0); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if err := compare(xt.Data().([]float64), x, 0, 0); err != nil {
			t.Errorf("%s: input changed: %v", c.name, err)
		}
	}
	y := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(want))
	dy := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 0, -1, 2, 0.5, 0}))
	dx := tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float64))
	v, err := graph.NewOp(bwdOp{kind: kindSoftmax, axis: 1, dims: 2}).UsePreallocDo(dx, y, dy)
	if err != nil {
		t.Fatal(err)
	}
	if v != dx {
		t.Errorf("backward did not reuse a fitting output")
	}
	if err := compare(dx.Data().([]float64), referenceGrad(kindSoftmax, x, dy.Data().([]float64), []int{2, 3}, 1), 1e-13, 1e-15); err != nil {
		t.Errorf("backward into prealloc: %v", err)
	}
}

// TestOpHashes: ops that differ in a parameter (kind, axis, rank, forward
// or backward) hash apart, so Gorgonia never merges their nodes; equal
// ones hash alike.
func TestOpHashes(t *testing.T) {
	var defs []graph.OpDef
	for _, k := range kinds {
		for _, axis := range []int{0, 1} {
			for _, dims := range []int{2, 3} {
				defs = append(defs, fwdOp{kind: k, axis: axis, dims: dims}, bwdOp{kind: k, axis: axis, dims: dims})
			}
		}
	}
	seen := map[uint32]graph.OpDef{}
	for _, d := range defs {
		h := graph.NewOp(d).Hashcode()
		if other, dup := seen[h]; dup {
			t.Errorf("%#v and %#v hash alike (%x)", d, other, h)
		}
		seen[h] = d
		if again := graph.NewOp(d).Hashcode(); again != h {
			t.Errorf("%#v hashes to %x and %x", d, h, again)
		}
	}
}
