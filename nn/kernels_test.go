package nn

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"
)

// TestColSumAnyCores checks the column sums (bias and gain gradients)
// against a float64 loop, and that they give the same bits whatever the
// number of cores (fixed row blocks, partials added in order), in float32
// and in float64 (where a changed order of the sum shows in the last bits).
func TestColSumAnyCores(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			switch dt {
			case tensor.Float32:
				testColSumAnyCores[float32](t, dt)
			default:
				testColSumAnyCores[float64](t, dt)
			}
		})
	}
}

func testColSumAnyCores[T float](t *testing.T, dt tensor.Dtype) {
	rng := rand.New(rand.NewSource(7))
	shapes := [][2]int{{1, 64}, {100, 96}, {2048, 64}, {5000, 256}, {37, 17}}
	if testing.Short() {
		shapes = shapes[:3]
	}
	for _, sh := range shapes {
		rows, d := sh[0], sh[1]
		for _, prod := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%d/prod=%t", rows, d, prod), func(t *testing.T) {
				x, g := newDense(dt, rows, d), newDense(dt, rows, d)
				xs, gs := floats[T](x), floats[T](g)
				for i := range xs {
					xs[i], gs[i] = T(rng.NormFloat64()), T(rng.NormFloat64()+0.5)
				}
				k, in := colSumOp{dims: 2}, []*tensor.Dense{g}
				if prod {
					k, in = colSumOp{prod: true, dims: 2}, []*tensor.Dense{x, g}
				}
				var outs [][]T
				for _, procs := range []int{1, 2, 5} {
					old := runtime.GOMAXPROCS(procs)
					out, err := run(k, in...)
					runtime.GOMAXPROCS(old)
					if err != nil {
						t.Fatal(err)
					}
					outs = append(outs, floats[T](out))
				}
				for j := 0; j < d; j++ {
					want, mag := 0.0, 0.0
					for r := 0; r < rows; r++ {
						v := float64(gs[r*d+j])
						if prod {
							v *= float64(xs[r*d+j])
						}
						want += v
						mag += math.Abs(v)
					}
					if got := float64(outs[0][j]); math.Abs(got-want) > 1e-7*mag+1e-6*math.Abs(want) {
						t.Fatalf("column %d: %g, float64 reference %g", j, got, want)
					}
					for i := 1; i < len(outs); i++ {
						if outs[i][j] != outs[0][j] {
							t.Fatalf("column %d: %g with one core, %g with more", j, outs[0][j], outs[i][j])
						}
					}
				}
			})
		}
	}
}

// TestScatterAdd checks the embedding gradient against a naive loop, with
// repeated indices and widths around the vector kernels' blocks of 16, at
// several core counts (the same bits: each entry adds its rows in order).
func TestScatterAdd(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for _, d := range []int{1, 5, 16, 64, 70} {
		const v, m = 7, 300
		table, g := newDense(tensor.Float32, v, d), newDense(tensor.Float32, m, d)
		gs := floats[float32](g)
		for i := range gs {
			gs[i] = float32(rng.NormFloat64())
		}
		idxT := tensor.New(tensor.WithShape(m), tensor.Of(tensor.Int))
		idx := idxT.Data().([]int)
		for i := range idx {
			idx[i] = rng.Intn(v)
		}
		want := make([]float32, v*d)
		for i, row := range idx {
			for j := 0; j < d; j++ {
				want[row*d+j] += gs[i*d+j]
			}
		}
		for _, procs := range []int{1, 2, 5} {
			old := runtime.GOMAXPROCS(procs)
			out, err := run(scatterAddOp{}, table, idxT, g)
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range floats[float32](out) {
				if x != want[i] {
					t.Fatalf("d=%d GOMAXPROCS=%d entry %d: %g, want %g", d, procs, i, x, want[i])
				}
			}
		}
	}
}

// TestRowKernelsAnyCores runs the row and elementwise kernels of the GPT
// step (LayerNorm and RMSNorm with their gradients, the affine gain and
// bias, GELU and its gradient, the heads split and scatter, the embedding
// gather) in float32 on inputs large enough for many chunks, at several
// GOMAXPROCS: the same bits every time, and within float32 rounding of a
// float64 loop.
func TestRowKernelsAnyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(9))
	const rows, d = 1000, 256
	const eps = 1e-5
	dense := func(scale, shift float64, shape ...int) (*tensor.Dense, []float64) {
		x := newDense(tensor.Float32, shape...)
		fromF64(x, randSlice(rng, x.Shape().TotalSize(), scale, shift))
		return x, toF64(x)
	}
	x, xv := dense(1.5, 0.3, rows, d)
	g, gv := dense(1, 0.1, rows, d)
	gamma, gammav := dense(0.5, 1, d)
	beta, betav := dense(0.5, 0, d)
	ones := make([]float64, d)
	for j := range ones {
		ones[j] = 1
	}
	// normGrad is ∂L/∂x = r·(g − [center]·mean(g) − x̂·mean(g∘x̂)) of each row.
	normGrad := func(center bool) []float64 {
		xh := refNorm(xv, ones, nil, d, center, eps)
		out := make([]float64, len(xv))
		for r := 0; r < rows; r++ {
			mu, v2 := 0.0, 0.0
			if center {
				for _, v := range xv[r*d : (r+1)*d] {
					mu += v / d
				}
			}
			for _, v := range xv[r*d : (r+1)*d] {
				v2 += (v - mu) * (v - mu) / d
			}
			inv := 1 / math.Sqrt(v2+eps)
			mg, mgx := 0.0, 0.0
			for j := r * d; j < (r+1)*d; j++ {
				mg += gv[j] / d
				mgx += gv[j] * xh[j] / d
			}
			if !center {
				mg = 0
			}
			for j := r * d; j < (r+1)*d; j++ {
				out[j] = inv * (gv[j] - mg - xh[j]*mgx)
			}
		}
		return out
	}
	const k = 0.7978845608028654 // √(2/π)
	gelu := func(grad bool) []float64 {
		out := make([]float64, len(xv))
		for i, v := range xv {
			u := k * (v + 0.044715*v*v*v)
			th := math.Tanh(u)
			out[i] = 0.5 * v * (1 + th)
			if grad {
				out[i] = gv[i] * (0.5*(1+th) + 0.5*v*(1-th*th)*k*(1+3*0.044715*v*v))
			}
		}
		return out
	}
	// Heads: qkv [B·N, 3·h·hd], whose middle third (the keys) the split
	// reads and the scatter writes (zeros elsewhere).
	const b, n, h, hd = 5, 40, 8, 32
	c := 3 * h * hd
	qkv, qkvv := dense(1, 0, b*n, c)
	split := headsOp{split: true, b: b, n: n, h: h, d: hd, off: h * hd, c: c}
	heads, headsv := dense(1, 0, b, h, n, hd)
	scatter := headsOp{b: b, n: n, h: h, d: hd, off: h * hd, c: c}
	headsRef := func(toHeads bool) []float64 {
		out := make([]float64, b*n*c)
		if toHeads {
			out = out[:b*h*n*hd]
		}
		for bi := 0; bi < b; bi++ {
			for i := 0; i < h; i++ {
				for ti := 0; ti < n; ti++ {
					for j := 0; j < hd; j++ {
						hi, ri := ((bi*h+i)*n+ti)*hd+j, (bi*n+ti)*c+h*hd+i*hd+j
						if toHeads {
							out[hi] = qkvv[ri]
						} else {
							out[ri] = headsv[hi]
						}
					}
				}
			}
		}
		return out
	}
	idxT := tensor.New(tensor.WithShape(rows), tensor.Of(tensor.Int))
	idx := idxT.Data().([]int)
	for i := range idx {
		idx[i] = rng.Intn(97)
	}
	table, tablev := dense(1, 0, 97, d)
	gatherRef := func() []float64 {
		out := make([]float64, 0, rows*d)
		for _, v := range idx {
			out = append(out, tablev[v*d:(v+1)*d]...)
		}
		return out
	}
	affine := make([]float64, len(xv))
	for i, v := range xv {
		affine[i] = v*gammav[i%d] + betav[i%d]
	}
	for _, tc := range []struct {
		name string
		op   kernel
		in   []*tensor.Dense
		want []float64
		tol  float64 // relative to 1 + |want|
	}{
		{"layernorm", normOp{center: true, eps: eps, dims: 2}, []*tensor.Dense{x}, refNorm(xv, ones, nil, d, true, eps), 1e-6},
		{"rmsnorm", normOp{eps: eps, dims: 2}, []*tensor.Dense{x}, refNorm(xv, ones, nil, d, false, eps), 1e-6},
		{"layernorm-grad", normGradOp{center: true, eps: eps, dims: 2}, []*tensor.Dense{x, g}, normGrad(true), 1e-5},
		{"rmsnorm-grad", normGradOp{eps: eps, dims: 2}, []*tensor.Dense{x, g}, normGrad(false), 1e-5},
		{"affine", affineOp{scale: true, shift: true, dims: 2}, []*tensor.Dense{x, gamma, beta}, affine, 1e-7},
		{"gelu", geluOp{dims: 2}, []*tensor.Dense{x}, gelu(false), 1e-6},
		{"gelu-grad", geluOp{grad: true, dims: 2}, []*tensor.Dense{x, g}, gelu(true), 1e-6},
		{"heads-split", split, []*tensor.Dense{qkv}, headsRef(true), 0},
		{"heads-scatter", scatter, []*tensor.Dense{heads}, headsRef(false), 0},
		{"gather", gatherOp{}, []*tensor.Dense{table, idxT}, gatherRef(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var first []float32
			for _, procs := range []int{1, 4, 3} {
				runtime.GOMAXPROCS(procs)
				out, err := run(tc.op, tc.in...)
				if err != nil {
					t.Fatal(err)
				}
				got := floats[float32](out)
				if first == nil {
					for i, v := range got {
						if w := tc.want[i]; !(math.Abs(float64(v)-w) <= tc.tol*(1+math.Abs(w))) {
							t.Fatalf("entry %d: %v, float64 reference %v", i, v, w)
						}
					}
					first = append([]float32(nil), got...)
					continue
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
						t.Fatalf("GOMAXPROCS=%d: entry %d is %v, with one core %v", procs, i, got[i], first[i])
					}
				}
			}
		})
	}
}
