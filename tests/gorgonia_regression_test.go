package tests

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// view returns the [outer, n, inner] view of shape around axis: element
// (o, i, j) at (o·n + i)·inner + j.
func view(shape []int, axis int) (outer, n, inner int) {
	outer, n, inner = 1, shape[axis], 1
	for _, s := range shape[:axis] {
		outer *= s
	}
	for _, s := range shape[axis+1:] {
		inner *= s
	}
	return outer, n, inner
}

// naiveSoftmax is softmax along axis by the textbook loop: for every row
// (o, j) of the [outer, n, inner] view, subtract the row's maximum,
// exponentiate, divide by the sum; a row of only −Inf gives zeros.
func naiveSoftmax(x []float64, shape []int, axis int) []float64 {
	outer, n, inner := view(shape, axis)
	y := make([]float64, len(x))
	for o := range outer {
		for j := range inner {
			at := func(i int) int { return (o*n+i)*inner + j }
			m := math.Inf(-1)
			for i := range n {
				m = math.Max(m, x[at(i)])
			}
			if math.IsInf(m, -1) {
				continue // zeros
			}
			sum := 0.0
			for i := range n {
				sum += math.Exp(x[at(i)] - m)
			}
			for i := range n {
				y[at(i)] = math.Exp(x[at(i)]-m) / sum
			}
		}
	}
	return y
}

// naiveSoftmaxGrad is ∂(Σ w∘softmax(x))/∂x by the Jacobian of each row,
// J_ki = p_k(δ_ki − p_i): dx_i = Σ_k w_k p_k (δ_ki − p_i).
func naiveSoftmaxGrad(x, w []float64, shape []int, axis int) []float64 {
	p := naiveSoftmax(x, shape, axis)
	outer, n, inner := view(shape, axis)
	dx := make([]float64, len(x))
	for o := range outer {
		for j := range inner {
			at := func(i int) int { return (o*n+i)*inner + j }
			for i := range n {
				for k := range n {
					delta := 0.0
					if k == i {
						delta = 1
					}
					dx[at(i)] += w[at(k)] * p[at(k)] * (delta - p[at(i)])
				}
			}
		}
	}
	return dx
}

// softmaxFunc builds a softmax node: ours or Gorgonia's.
type softmaxFunc func(x *gorgonia.Node, axis int) (*gorgonia.Node, error)

func ours(x *gorgonia.Node, axis int) (*gorgonia.Node, error) { return softmax.Softmax(x, axis) }

func gorgonias(x *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	return gorgonia.SoftMax(x, axis)
}

// run computes y = f(x) and ∂(Σ w∘y)/∂x in float64 on a TapeMachine. A
// panic inside Gorgonia is returned as an error.
func run(f softmaxFunc, x, w []float64, shape []int, axis int) (y, dx []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	g := gorgonia.NewGraph()
	xn := graph.Input(g, "x", graph.NewTensor(shape, append([]float64(nil), x...)))
	wn := graph.Input(g, "w", graph.NewTensor(shape, append([]float64(nil), w...)))
	yn, err := f(xn, axis)
	if err != nil {
		return nil, nil, err
	}
	prod, err := gorgonia.HadamardProd(yn, wn)
	if err != nil {
		return nil, nil, err
	}
	loss, err := gorgonia.Sum(prod)
	if err != nil {
		return nil, nil, err
	}
	if err := graph.ForwardBackward(loss, xn); err != nil {
		return nil, nil, err
	}
	if y, err = graph.Values[float64](yn); err != nil {
		return nil, nil, err
	}
	dx, err = graph.Grads[float64](xn)
	return y, dx, err
}

// mismatch describes the first entry where got and want differ by more than
// 1e-12 + 1e-10·|want| (NaN never matches), or returns "".
func mismatch(got, want []float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= 1e-12+1e-10*math.Abs(want[i])) {
			return fmt.Sprintf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

func TestGorgoniaSoftmaxRegressions(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randn := func(n int, scale float64) []float64 {
		r := make([]float64, n)
		for i := range r {
			r[i] = rng.NormFloat64() * scale
		}
		return r
	}
	// Gorgonia's row maximum starts from the tensor's first element and
	// skips the row's own first entry. A batch whose odd rows start with
	// 1000 (and hold small values after it) overflows exp in those rows.
	batch := randn(6*5, 2)
	for r := 1; r < 6; r += 2 {
		batch[r*5] += 1000
	}
	inf := math.Inf(1)
	type tc struct {
		name  string
		x     []float64
		shape []int
		axes  []int
		// gorgoniaDefault calls Gorgonia's SoftMax without an axis, which
		// its forward resolves to axis 0 for a column vector (n,1) and its
		// backward to the last axis.
		gorgoniaDefault bool
	}
	cases := []tc{
		{"large logit row [[0 0 0] [1000 0 1]]", []float64{0, 0, 0, 1000, 0, 1}, []int{2, 3}, []int{1, -1}, false},
		{"batch of shifted rows, gradient of every row", batch, []int{6, 5}, []int{1}, false},
		{"shape (n,1) along axis 0", []float64{1, 2, 3, 4}, []int{4, 1}, []int{0}, false},
		{"shape (n,1) along axis 0, Gorgonia's default axis", []float64{1, 2, 3, 4}, []int{4, 1}, []int{0}, true},
		{"shape (n,1) along axis 1", []float64{1, 2, 3, 4}, []int{4, 1}, []int{1}, false},
		{"3-D along every axis", randn(2*3*4, 3), []int{2, 3, 4}, []int{0, 1, 2}, false},
		{"fully -Inf row", []float64{1, 2, 3, -inf, -inf, -inf}, []int{2, 3}, []int{1}, false},
	}
	for _, c := range cases {
		for _, axis := range c.axes {
			t.Run(fmt.Sprintf("%s/axis%d", c.name, axis), func(t *testing.T) {
				a := axis
				if a < 0 {
					a += len(c.shape)
				}
				w := randn(len(c.x), 1)
				wantY := naiveSoftmax(c.x, c.shape, a)
				wantDx := naiveSoftmaxGrad(c.x, w, c.shape, a)

				y, dx, err := run(ours, c.x, w, c.shape, axis)
				if err != nil {
					t.Fatalf("ours: %v", err)
				}
				if m := mismatch(y, wantY); m != "" {
					t.Errorf("ours, softmax: %s", m)
				}
				if m := mismatch(dx, wantDx); m != "" {
					t.Errorf("ours, gradient: %s", m)
				}

				theirs := gorgonias
				if c.gorgoniaDefault {
					theirs = func(x *gorgonia.Node, _ int) (*gorgonia.Node, error) { return gorgonia.SoftMax(x) }
				}
				gy, gdx, err := run(theirs, c.x, w, c.shape, axis)
				switch {
				case err != nil:
					t.Logf("Gorgonia SoftMax fails: %v", err)
				default:
					if m := mismatch(gy, wantY); m != "" {
						t.Logf("Gorgonia SoftMax is wrong: %s (all: %v)", m, gy)
					}
					if m := mismatch(gdx, wantDx); m != "" {
						t.Logf("Gorgonia SoftMax gradient is wrong: %s (all: %v)", m, gdx)
					}
				}
			})
		}
	}
}

// TestGorgoniaLogSoftmaxRegression: Gorgonia's LogSoftMax shares SoftMax's
// row maximum, so the row [1000 0 1] comes out wrong there too.
func TestGorgoniaLogSoftmaxRegression(t *testing.T) {
	x := []float64{0, 0, 0, 1000, 0, 1}
	w := []float64{0.5, -1, 2, 1.5, 0.25, -0.75}
	shape := []int{2, 3}
	// log softmax(x)_i = x_i − m − log Σ_k e^{x_k − m}, and the gradient of
	// Σ w∘logsoftmax(x) is dx_i = w_i − p_i·Σ_k w_k, row by row.
	p := naiveSoftmax(x, shape, 1)
	wantY, wantDx := make([]float64, 6), make([]float64, 6)
	for r := range 2 {
		row := x[3*r : 3*r+3]
		m := math.Max(row[0], math.Max(row[1], row[2]))
		sum, sw := 0.0, 0.0
		for k := range 3 {
			sum += math.Exp(row[k] - m)
			sw += w[3*r+k]
		}
		for i := range 3 {
			wantY[3*r+i] = row[i] - m - math.Log(sum)
			wantDx[3*r+i] = w[3*r+i] - p[3*r+i]*sw
		}
	}
	y, dx, err := run(func(x *gorgonia.Node, axis int) (*gorgonia.Node, error) { return softmax.LogSoftmax(x, axis) }, x, w, shape, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := mismatch(y, wantY); m != "" {
		t.Errorf("ours, log-softmax: %s", m)
	}
	if m := mismatch(dx, wantDx); m != "" {
		t.Errorf("ours, gradient: %s", m)
	}
	gy, gdx, err := run(func(x *gorgonia.Node, axis int) (*gorgonia.Node, error) { return gorgonia.LogSoftMax(x, axis) }, x, w, shape, 1)
	switch {
	case err != nil:
		t.Logf("Gorgonia LogSoftMax fails: %v", err)
	default:
		if m := mismatch(gy, wantY); m != "" {
			t.Logf("Gorgonia LogSoftMax is wrong: %s (all: %v)", m, gy)
		}
		if m := mismatch(gdx, wantDx); m != "" {
			t.Logf("Gorgonia LogSoftMax gradient is wrong: %s (all: %v)", m, gdx)
		}
	}
}
