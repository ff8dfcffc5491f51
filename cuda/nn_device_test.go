package cuda

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The nn kernels on the device against float64 loops written here from nn's definitions
// (nn/gelu.go, norm.go, affine.go, embedding.go, loss.go, optim.go, dropout.go). Inputs are
// rounded to the element type before the references see them.

var lengths = []int{1, 17, 127, 129, 1025, 100003}

func TestElementwiseDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(10))
	// The tanh form of GELU and its derivative, as written in nn.GELU's documentation.
	k := math.Sqrt(2 / math.Pi)
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(k*(x+0.044715*x*x*x))) }
	geluPrime := func(x float64) float64 {
		u := k * (x + 0.044715*x*x*x)
		th := math.Tanh(u)
		return 0.5*(1+th) + 0.5*x*(1-th*th)*k*(1+3*0.044715*x*x)
	}
	for _, dt := range dtypes {
		// Lengths that are multiples of 4 run the 16-byte kernels, the others one element at a time.
		for _, n := range append(lengths, 1024, 3*4096) {
			t.Run(fmt.Sprintf("%v/n=%d", dt, n), func(t *testing.T) {
				a, b := rounded(randn(rng, n, 3), dt), rounded(randn(rng, n, 3), dt)
				A, B, Y := devBuf(t, dt, a), devBuf(t, dt, b), devOut(t, dt, n)
				want := make([]float64, n)
				check := func(what string, err error, out *Buffer, f func(i int) float64, tl float64) {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
					for i := range want {
						want[i] = f(i)
					}
					compare(t, what, host(t, out), want, tl)
				}
				check("add", Add(Y, A, B), Y, func(i int) float64 { return a[i] + b[i] }, tol(dt))
				check("mul", Mul(Y, A, B), Y, func(i int) float64 { return a[i] * b[i] }, tol(dt))
				check("assign", Assign(Y, A), Y, func(i int) float64 { return a[i] }, 0)
				// float32 GELU: a few ulp of float32 arithmetic on arguments up to |u| ≈ 100.
				gt := map[DType]float64{Float32: 2e-6, Float64: 1e-13}[dt]
				check("gelu", GELU(Y, A), Y, func(i int) float64 { return gelu(a[i]) }, gt)
				check("gelu backward", GELUBackward(Y, A, B), Y, func(i int) float64 { return b[i] * geluPrime(a[i]) }, 10*gt)
				// In place: the result replaces x.
				check("gelu in place", GELU(A, A), A, func(i int) float64 { return gelu(a[i]) }, gt)
			})
		}
		t.Run(dt.String()+"/gelu-extremes", func(t *testing.T) {
			x := []float64{0, math.Copysign(0, -1), 1e4, -1e4, 88, -88, 50, -50, 20, -20}
			X, Y := devBuf(t, dt, x), devOut(t, dt, len(x))
			if err := GELU(Y, X); err != nil {
				t.Fatal(err)
			}
			y := host(t, Y)
			if err := GELUBackward(Y, X, devBuf(t, dt, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})); err != nil {
				t.Fatal(err)
			}
			dy := host(t, Y)
			for i, v := range x {
				wantY, wantD := 0.0, 0.0 // the limits: gelu(x) → x, gelu' → 1 for x → +∞; → 0 for x → −∞
				if v > 10 {
					wantY, wantD = v, 1
				}
				if v == 0 {
					wantD = 0.5
				}
				if wantY != 0 && math.Abs(y[i]-wantY) > 1e-6*math.Abs(wantY) || wantY == 0 && math.Abs(y[i]) > 1e-12 || math.Abs(dy[i]-wantD) > 1e-6 {
					t.Errorf("x=%g: gelu %v (want %v), gelu' %v (want %v)", v, y[i], wantY, dy[i], wantD)
				}
			}
		})
	}
}

func TestAffineDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(11))
	for _, dt := range dtypes {
		// Rows of 8 and 256 run the 16-byte kernel, the others and x one element off a 16-byte
		// boundary (shift 1) the one-element kernel.
		for _, sh := range [][3]int{{1, 1, 0}, {17, 33, 0}, {129, 7, 0}, {3, 1025, 0}, {33, 8, 0}, {64, 256, 0}, {64, 256, 1}} {
			for _, mode := range []string{"bias", "gain", "both"} {
				rows, d, shift := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%v/%dx%d/shift%d/%s", dt, rows, d, shift, mode), func(t *testing.T) {
					x, g, bt := rounded(randn(rng, rows*d, 1), dt), rounded(randn(rng, d, 1), dt), rounded(randn(rng, d, 1), dt)
					var G, Bt *Buffer
					if mode != "bias" {
						G = devBuf(t, dt, g)
					}
					if mode != "gain" {
						Bt = devBuf(t, dt, bt)
					}
					Y := devOut(t, dt, rows*d)
					X, err := devBuf(t, dt, append(make([]float64, shift), x...)).View(shift, rows*d)
					if err != nil {
						t.Fatal(err)
					}
					if err := Affine(Y, X, G, Bt); err != nil {
						t.Fatal(err)
					}
					want := make([]float64, rows*d)
					for r := 0; r < rows; r++ {
						for j := 0; j < d; j++ {
							v := x[r*d+j]
							if G != nil {
								v *= g[j]
							}
							if Bt != nil {
								v += bt[j]
							}
							want[r*d+j] = v
						}
					}
					compare(t, "y", host(t, Y), want, tol(dt))
				})
			}
		}
	}
}

func TestColSumDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(12))
	for _, dt := range dtypes {
		// Rows whose length is a multiple of 4 run the 16-byte first stage, unless g and x are
		// off a 16-byte boundary (shift 2).
		for _, sh := range [][3]int{{1, 1, 0}, {63, 33, 0}, {64, 32, 0}, {65, 300, 0}, {1000, 17, 0}, {20000, 5, 0}, {257, 132, 0}, {4096, 768, 0}, {300, 64, 2}} {
			for _, prod := range []bool{false, true} {
				rows, d, shift := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%v/%dx%d/shift%d/prod=%t", dt, rows, d, shift, prod), func(t *testing.T) {
					g, x, old := rounded(randn(rng, rows*d, 1), dt), rounded(randn(rng, rows*d, 1), dt), rounded(randn(rng, d, 1), dt)
					view := func(v []float64) *Buffer {
						b, err := devBuf(t, dt, append(make([]float64, shift), v...)).View(shift, len(v))
						if err != nil {
							t.Fatal(err)
						}
						return b
					}
					p := ColSumParams{Rows: rows, D: d, G: view(g), Out: devOut(t, dt, d), Work: devOut(t, Float64, ColSumWorkspace(rows, d))}
					if prod {
						p.X = view(x)
					}
					want := make([]float64, d)
					for r := 0; r < rows; r++ {
						for j := 0; j < d; j++ {
							if prod {
								want[j] += g[r*d+j] * x[r*d+j]
							} else {
								want[j] += g[r*d+j]
							}
						}
					}
					if err := ColSum(p); err != nil {
						t.Fatal(err)
					}
					compare(t, "sums", host(t, p.Out), want, tol(dt))
					// Accumulate adds to Out.
					if err := p.Out.Upload(toType(old, dt == Float64)); err != nil {
						t.Fatal(err)
					}
					p.Accumulate = true
					if err := ColSum(p); err != nil {
						t.Fatal(err)
					}
					for j := range want {
						want[j] += old[j]
					}
					compare(t, "accumulated sums", host(t, p.Out), want, tol(dt))
				})
			}
		}
	}
}

func TestEmbeddingDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(13))
	for _, dt := range dtypes {
		for _, c := range []struct{ v, d, m int }{{1, 1, 1}, {5, 17, 127}, {300, 64, 1025}, {7, 1100, 33}, {50, 3, 4000}} {
			t.Run(fmt.Sprintf("%v/V=%d/D=%d/M=%d", dt, c.v, c.d, c.m), func(t *testing.T) {
				table := rounded(randn(rng, c.v*c.d, 1), dt)
				dy := rounded(randn(rng, c.m*c.d, 1), dt)
				old := rounded(randn(rng, c.v*c.d, 1), dt)
				idx := make([]int32, c.m)
				for i := range idx {
					idx[i] = int32(rng.Intn(c.v))
				}
				T, I, Y := devBuf(t, dt, table), devInts(t, idx), devOut(t, dt, c.m*c.d)
				if err := Gather(Y, T, I, c.d); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, c.m*c.d)
				for m, v := range idx {
					copy(want[m*c.d:(m+1)*c.d], table[int(v)*c.d:(int(v)+1)*c.d])
				}
				compare(t, "gather", host(t, Y), want, 0)

				// Scatter-add: the sums in increasing m, in the element type (as nn's CPU
				// scatterAdd), so the result equals the reference to the bit.
				dtab := make([]float64, c.v*c.d)
				for m, v := range idx {
					for j := 0; j < c.d; j++ {
						at := int(v)*c.d + j
						if dt == Float32 {
							dtab[at] = float64(float32(dtab[at]) + float32(dy[m*c.d+j]))
						} else {
							dtab[at] += dy[m*c.d+j]
						}
					}
				}
				DT := devOut(t, dt, c.v*c.d)
				if err := ScatterAdd(DT, I, devBuf(t, dt, dy), c.d, false); err != nil {
					t.Fatal(err)
				}
				compare(t, "scatter-add", host(t, DT), dtab, 0)
				if err := DT.Upload(toType(old, dt == Float64)); err != nil {
					t.Fatal(err)
				}
				if err := ScatterAdd(DT, I, devBuf(t, dt, dy), c.d, true); err != nil {
					t.Fatal(err)
				}
				for i := range dtab {
					dtab[i] += old[i]
				}
				compare(t, "scatter-add accumulated", host(t, DT), dtab, tol(dt))
			})
		}
	}
	t.Run("bad index", func(t *testing.T) {
		T, I, Y := devBuf(t, Float32, []float64{1, 2, 3, 4}), devInts(t, []int32{1, 2, -1}), devOut(t, Float32, 6)
		if err := Gather(Y, T, I, 2); err != nil {
			t.Fatal(err)
		}
		y := host(t, Y)
		if y[0] != 3 || y[1] != 4 || !math.IsNaN(y[2]) || !math.IsNaN(y[5]) {
			t.Errorf("gather with indices 1, 2, -1 of a 2-row table: %v, want [3 4 NaN NaN NaN NaN]", y)
		}
		D := devOut(t, Float32, 4)
		if err := ScatterAdd(D, I, devBuf(t, Float32, []float64{1, 1, 5, 5, 9, 9}), 2, false); err != nil {
			t.Fatal(err)
		}
		if d := host(t, D); fmt.Sprint(d) != "[0 0 1 1]" {
			t.Errorf("scatter with indices 1, 2, -1: %v, want [0 0 1 1]", d)
		}
	})
}

// refNorm returns nn's normalization of the rows of x [rows, d] and the row statistics.
func refNorm(x []float64, rows, d int, rms bool, eps float64) (xh, mu, rstd []float64) {
	xh, mu, rstd = make([]float64, rows*d), make([]float64, rows), make([]float64, rows)
	for r := 0; r < rows; r++ {
		row := x[r*d : (r+1)*d]
		if !rms {
			for _, v := range row {
				mu[r] += v
			}
			mu[r] /= float64(d)
		}
		ss := 0.0
		for _, v := range row {
			ss += (v - mu[r]) * (v - mu[r])
		}
		rstd[r] = 1 / math.Sqrt(ss/float64(d)+eps)
		for j, v := range row {
			xh[r*d+j] = (v - mu[r]) * rstd[r]
		}
	}
	return
}

// refNormLoss is Σ w∘(x̂·γ + β), the scalar whose gradient the backward references are.
func refNormLoss(x, g, b, w []float64, rows, d int, rms bool, eps float64) float64 {
	xh, _, _ := refNorm(x, rows, d, rms, eps)
	s := 0.0
	for i, v := range xh {
		y := v
		if g != nil {
			y *= g[i%d]
		}
		if b != nil {
			y += b[i%d]
		}
		s += w[i] * y
	}
	return s
}

func TestNormDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(14))
	const eps = 1e-5
	for _, dt := range dtypes {
		for _, sh := range [][2]int{{1, 1}, {3, 7}, {17, 64}, {300, 129}, {5, 1025}} {
			for _, rms := range []bool{false, true} {
				for _, affine := range []bool{false, true} {
					rows, d := sh[0], sh[1]
					name := fmt.Sprintf("%v/%dx%d/rms=%t/affine=%t", dt, rows, d, rms, affine)
					t.Run(name, func(t *testing.T) {
						x := randn(rng, rows*d, 2)
						for i := range x {
							x[i] += 3 // an offset the centering must remove
						}
						x = rounded(x, dt)
						dy := rounded(randn(rng, rows*d, 1), dt)
						var g, b []float64
						p := NormParams{Rows: rows, D: d, Eps: eps, RMS: rms, X: devBuf(t, dt, x), Y: devOut(t, dt, rows*d),
							Mean: devOut(t, Float64, rows), Rstd: devOut(t, Float64, rows)}
						if affine {
							g, b = rounded(randn(rng, d, 1), dt), rounded(randn(rng, d, 1), dt)
							p.Gamma = devBuf(t, dt, g)
							if !rms {
								p.Beta = devBuf(t, dt, b)
							} else {
								b = nil
							}
						}
						if err := NormForward(p); err != nil {
							t.Fatal(err)
						}
						xh, mu, rstd := refNorm(x, rows, d, rms, eps)
						y := make([]float64, rows*d)
						for i, v := range xh {
							y[i] = v
							if g != nil {
								y[i] *= g[i%d]
							}
							if b != nil {
								y[i] += b[i%d]
							}
						}
						compare(t, "y", host(t, p.Y), y, tol(dt))
						compare(t, "mean", host(t, p.Mean), mu, 1e-13)
						compare(t, "rstd", host(t, p.Rstd), rstd, 1e-12)

						// Backward references: nn's formulas, written out.
						dx, dg, db := make([]float64, rows*d), make([]float64, d), make([]float64, d)
						for r := 0; r < rows; r++ {
							var sg, sgx float64
							for j := 0; j < d; j++ {
								gv := dy[r*d+j]
								if g != nil {
									gv *= g[j]
								}
								sg += gv
								sgx += gv * xh[r*d+j]
								dg[j] += dy[r*d+j] * xh[r*d+j]
								db[j] += dy[r*d+j]
							}
							mg, mgx := sg/float64(d), sgx/float64(d)
							if rms {
								mg = 0
							}
							for j := 0; j < d; j++ {
								gv := dy[r*d+j]
								if g != nil {
									gv *= g[j]
								}
								dx[r*d+j] = rstd[r] * (gv - mg - xh[r*d+j]*mgx)
							}
						}
						// The reference formula itself against central differences of the
						// float64 forward (small shapes only).
						if rows*d <= 200 {
							for _, i := range []int{0, rows*d/2 + 1, rows*d - 1} {
								if i >= rows*d {
									continue
								}
								xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
								xp[i] += 1e-6
								xm[i] -= 1e-6
								fd := (refNormLoss(xp, g, b, dy, rows, d, rms, eps) - refNormLoss(xm, g, b, dy, rows, d, rms, eps)) / 2e-6
								if math.Abs(fd-dx[i]) > 1e-5+1e-3*math.Abs(dx[i]) {
									t.Fatalf("reference dx[%d] = %v, central difference %v", i, dx[i], fd)
								}
							}
						}
						p.DY, p.DX = devBuf(t, dt, dy), devOut(t, dt, rows*d)
						p.DGamma, p.Work = devOut(t, dt, d), devOut(t, Float64, NormWorkspace(rows, d))
						if !rms {
							p.DBeta = devOut(t, dt, d)
						}
						if err := NormBackward(p); err != nil {
							t.Fatal(err)
						}
						// dx subtracts near-equal terms: its float32 error is relative to the
						// terms, rstd·|g|, not to dx.
						compare(t, "dx", host(t, p.DX), dx, 4*tol(dt))
						compare(t, "dgamma", host(t, p.DGamma), dg, tol(dt))
						if !rms {
							compare(t, "dbeta", host(t, p.DBeta), db, tol(dt))
						}
					})
				}
			}
		}
	}
}

func TestCrossEntropyDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(15))
	const ignore = -1
	for _, dt := range dtypes {
		for _, c := range []struct {
			m, v    int
			ignored string // "none", "some", "all"
			offset  float64
		}{{1, 1, "none", 0}, {17, 5, "some", 0}, {300, 1000, "some", 0}, {4, 50257, "some", 0}, {33, 7, "all", 0}, {9, 129, "some", 1e4}} {
			t.Run(fmt.Sprintf("%v/M=%d/V=%d/%s/offset=%g", dt, c.m, c.v, c.ignored, c.offset), func(t *testing.T) {
				x := randn(rng, c.m*c.v, 3)
				for i := range x {
					x[i] += c.offset
				}
				x = rounded(x, dt)
				tg := make([]int32, c.m)
				for i := range tg {
					tg[i] = int32(rng.Intn(c.v))
					if c.ignored == "all" || c.ignored == "some" && rng.Intn(3) == 0 {
						tg[i] = ignore
					}
				}
				// Reference: log-sum-exp per row, loss = mean over rows not ignored.
				loss, n := 0.0, 0
				dx := make([]float64, c.m*c.v)
				lse := make([]float64, c.m)
				for r := 0; r < c.m; r++ {
					row := x[r*c.v : (r+1)*c.v]
					lse[r] = refSoftmax(LogSumExp, row, 1, c.v, 1)[0]
					if tg[r] != ignore {
						loss += lse[r] - row[tg[r]]
						n++
					}
				}
				const dloss = 0.7
				if n > 0 {
					loss /= float64(n)
					for r := 0; r < c.m; r++ {
						if tg[r] == ignore {
							continue
						}
						for j := 0; j < c.v; j++ {
							oh := 0.0
							if j == int(tg[r]) {
								oh = 1
							}
							dx[r*c.v+j] = dloss / float64(n) * (math.Exp(x[r*c.v+j]-lse[r]) - oh)
						}
					}
				}
				p := CrossEntropyParams{M: c.m, V: c.v, IgnoreIndex: ignore, Logits: devBuf(t, dt, x), Targets: devInts(t, tg),
					Loss: devOut(t, dt, 1), DLoss: devBuf(t, dt, []float64{dloss}), DLogits: devOut(t, dt, c.m*c.v),
					Work: devOut(t, Float64, CrossEntropyWorkspace(c.m))}
				if err := CrossEntropyForward(p); err != nil {
					t.Fatal(err)
				}
				compare(t, "loss", host(t, p.Loss), []float64{loss}, tol(dt))
				if err := CrossEntropyBackward(p); err != nil {
					t.Fatal(err)
				}
				compare(t, "dlogits", host(t, p.DLogits), dx, tol(dt))
			})
		}
	}
}

func TestAdamWDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(16))
	for _, dt := range dtypes {
		for _, decay := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/decay=%t", dt, decay), func(t *testing.T) {
				const n = 10007
				const lr, b1, b2, eps, wd = 3e-3, 0.9, 0.95, 1e-8, 0.1
				w := rounded(randn(rng, n, 1), dt)
				m, v := make([]float64, n), make([]float64, n)
				P, M, V := devBuf(t, dt, w), devBuf(t, dt, m), devBuf(t, dt, v)
				for step := 1; step <= 3; step++ {
					g := rounded(randn(rng, n, 0.1), dt)
					if err := AdamW(AdamWParams{Param: P, Grad: devBuf(t, dt, g), M: M, V: V, LR: lr, Beta1: b1, Beta2: b2, Eps: eps,
						WeightDecay: wd, Decay: decay, Step: step}); err != nil {
						t.Fatal(err)
					}
					// nn/optim.go's update, with m and v stored in the element type.
					c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
					dec := 0.0
					if decay {
						dec = lr * wd
					}
					for i := range w {
						mi := b1*m[i] + (1-b1)*g[i]
						vi := b2*v[i] + (1-b2)*g[i]*g[i]
						w[i] = w[i]*(1-dec) - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps)
						m[i], v[i] = mi, vi
					}
					w, m, v = rounded(w, dt), rounded(m, dt), rounded(v, dt)
					// One rounding of each stored value: within one ulp of the reference.
					ulp := map[DType]float64{Float32: 1.2e-7, Float64: 4e-16}[dt]
					compare(t, fmt.Sprintf("step %d: param", step), host(t, P), w, 2*ulp*4)
					compare(t, fmt.Sprintf("step %d: m", step), host(t, M), m, 2*ulp)
					compare(t, fmt.Sprintf("step %d: v", step), host(t, V), v, 2*ulp)
				}
			})
		}
	}
}

func TestGradNormClipDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(17))
	lens := []int{1, 1000, 100003, 17}
	types := []DType{Float32, Float64, Float32, Float64}
	var grads []*Buffer
	var vals [][]float64
	ss := 0.0
	for i, n := range lens {
		x := rounded(randn(rng, n, 0.01), types[i])
		for _, v := range x {
			ss += v * v
		}
		vals = append(vals, x)
		grads = append(grads, devBuf(t, types[i], x))
	}
	want := math.Sqrt(ss)
	norm, work := devOut(t, Float64, 1), devOut(t, Float64, GradNormWorkspace(grads...))
	if err := GradNorm(norm, work, grads...); err != nil {
		t.Fatal(err)
	}
	got := host(t, norm)
	compare(t, "norm", got, []float64{want}, 1e-13)
	// Deterministic: the same bits again.
	if err := GradNorm(norm, work, grads...); err != nil {
		t.Fatal(err)
	}
	if again := host(t, norm); math.Float64bits(again[0]) != math.Float64bits(got[0]) {
		t.Errorf("norm %v, then %v", got[0], again[0])
	}
	// maxNorm above the norm, or 0: nothing changes.
	for _, maxNorm := range []float64{2 * want, 0} {
		if err := ClipByNorm(norm, maxNorm, grads...); err != nil {
			t.Fatal(err)
		}
		for i, g := range grads {
			compare(t, fmt.Sprintf("maxNorm %g: grads[%d]", maxNorm, i), host(t, g), vals[i], 0)
		}
	}
	// maxNorm below: g ← g·maxNorm/norm, rounded once.
	maxNorm := want / 3
	if err := ClipByNorm(norm, maxNorm, grads...); err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		w := make([]float64, len(vals[i]))
		for j, v := range vals[i] {
			w[j] = v * (maxNorm / got[0])
		}
		compare(t, fmt.Sprintf("clipped grads[%d]", i), host(t, g), rounded(w, types[i]), 0)
	}
	if err := GradNorm(norm, work, grads...); err != nil {
		t.Fatal(err)
	}
	compare(t, "norm after clipping", host(t, norm), []float64{maxNorm}, 1e-6)
}

func TestDropoutDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(18))
	for _, dt := range dtypes {
		for _, p := range []float64{0, 0.1, 0.5} {
			for _, n := range []int{1, 17, 100003} {
				t.Run(fmt.Sprintf("%v/p=%g/n=%d", dt, p, n), func(t *testing.T) {
					const seed, offset = 0x1234_5678_9abc, 77
					x := rounded(randn(rng, n, 1), dt)
					mask, y := make([]float64, n), make([]float64, n)
					keep := rounded([]float64{1 / (1 - p)}, dt)[0]
					kept := 0
					for i := range mask {
						if DropoutKeep(seed, offset, i, p) {
							mask[i] = keep
							kept++
						}
						y[i] = rounded([]float64{x[i] * mask[i]}, dt)[0]
					}
					M := devOut(t, dt, n)
					if err := Dropout(DropoutParams{P: p, Seed: seed, Offset: offset, Y: M}); err != nil {
						t.Fatal(err)
					}
					compare(t, "mask", host(t, M), mask, 0)
					Y := devOut(t, dt, n)
					if err := Dropout(DropoutParams{P: p, Seed: seed, Offset: offset, X: devBuf(t, dt, x), Y: Y}); err != nil {
						t.Fatal(err)
					}
					compare(t, "x∘mask", host(t, Y), y, 0)
					if n > 1000 {
						sd := math.Sqrt(p * (1 - p) / float64(n))
						if f := float64(kept) / float64(n); math.Abs(f-(1-p)) > 5*sd+1e-12 {
							t.Errorf("keep fraction %.5f, want %.5f ± %.5f", f, 1-p, 5*sd)
						}
					}
				})
			}
		}
	}
}

// TestNNNoAllocation runs every launcher twice on planned buffers and checks that the
// package's device memory does not change: a step allocates nothing.
func TestNNNoAllocation(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(19))
	const rows, d, v = 64, 32, 11
	x := devBuf(t, Float32, randn(rng, rows*d, 1))
	y := devOut(t, Float32, rows*d)
	w := devBuf(t, Float32, randn(rng, d*v, 1))
	logits := devOut(t, Float32, rows*v)
	g, b := devBuf(t, Float32, randn(rng, d, 1)), devBuf(t, Float32, randn(rng, d, 1))
	mean, rstd := devOut(t, Float64, rows), devOut(t, Float64, rows)
	tg := make([]int32, rows)
	for i := range tg {
		tg[i] = int32(rng.Intn(v))
	}
	targets := devInts(t, tg)
	loss, dloss := devOut(t, Float32, 1), devBuf(t, Float32, []float64{1})
	work := devOut(t, Float64, NormWorkspace(rows, d)+GradNormWorkspace(w)+rows)
	norm := devOut(t, Float64, 1)
	dlogits, dw, m, vv := devOut(t, Float32, rows*v), devOut(t, Float32, d*v), devOut(t, Float32, d*v), devOut(t, Float32, d*v)
	for _, z := range []*Buffer{m, vv} {
		if err := z.Zero(); err != nil {
			t.Fatal(err)
		}
	}
	step := func(i int) {
		for _, err := range []error{
			NormForward(NormParams{Rows: rows, D: d, Eps: 1e-5, X: x, Gamma: g, Beta: b, Y: y, Mean: mean, Rstd: rstd}),
			GELU(y, y),
			Gemm(GemmParams{M: rows, N: v, K: d, Alpha: 1, A: y, B: w, C: logits}),
			CrossEntropyForward(CrossEntropyParams{M: rows, V: v, IgnoreIndex: -1, Logits: logits, Targets: targets, Loss: loss, Work: work}),
			CrossEntropyBackward(CrossEntropyParams{M: rows, V: v, IgnoreIndex: -1, Logits: logits, Targets: targets, DLoss: dloss, DLogits: dlogits, Work: work}),
			Gemm(GemmParams{TransA: true, M: d, N: v, K: rows, Alpha: 1, A: y, B: dlogits, C: dw}),
			GradNorm(norm, work, dw),
			ClipByNorm(norm, 1, dw),
			AdamW(AdamWParams{Param: w, Grad: dw, M: m, V: vv, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: i}),
			Synchronize(),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	step(1)
	before := MemoryInUse()
	for i := 2; i <= 5; i++ {
		step(i)
	}
	if after := MemoryInUse(); after != before {
		t.Errorf("device memory %d bytes after step 1, %d after step 5", before, after)
	}
	l := host(t, loss)
	if math.IsNaN(l[0]) || l[0] <= 0 {
		t.Errorf("loss %v", l[0])
	}
}

// BenchmarkNN times a few nn kernels at GPT sizes (rows = batch·context) in float32; the
// metric is the bandwidth of the bytes each call must move at least.
func BenchmarkNN(b *testing.B) {
	if !Enabled() {
		b.Skip("no device")
	}
	const rows, d, v, np = 8192, 768, 50304, 10 << 20
	x, y := devOut(b, Float32, rows*d), devOut(b, Float32, rows*d)
	for _, z := range []*Buffer{x} {
		if err := z.Zero(); err != nil {
			b.Fatal(err)
		}
	}
	mean, rstd := devOut(b, Float64, rows), devOut(b, Float64, rows)
	b.Run("layernorm-fwd-8192x768", func(b *testing.B) {
		p := NormParams{Rows: rows, D: d, Eps: 1e-5, X: x, Y: y, Mean: mean, Rstd: rstd}
		benchDevice(b, func() error { return NormForward(p) }, 0, 2*4*rows*d)
	})
	b.Run("layernorm-bwd-8192x768", func(b *testing.B) {
		dy, dx, dg, db := devOut(b, Float32, rows*d), devOut(b, Float32, rows*d), devOut(b, Float32, d), devOut(b, Float32, d)
		if err := dy.Zero(); err != nil {
			b.Fatal(err)
		}
		p := NormParams{Rows: rows, D: d, Eps: 1e-5, X: x, Mean: mean, Rstd: rstd, DY: dy, DX: dx, DGamma: dg, DBeta: db,
			Work: devOut(b, Float64, NormWorkspace(rows, d))}
		if err := NormForward(p); err != nil {
			b.Fatal(err)
		}
		benchDevice(b, func() error { return NormBackward(p) }, 0, 3*4*rows*d)
	})
	b.Run("scatter-add-50304x768-m8192", func(b *testing.B) {
		dt, dy := devOut(b, Float32, v*d), devOut(b, Float32, rows*d)
		if err := dy.Zero(); err != nil {
			b.Fatal(err)
		}
		idx := make([]int32, rows)
		rng := rand.New(rand.NewSource(1))
		for i := range idx {
			idx[i] = int32(rng.Intn(v))
		}
		I := devInts(b, idx)
		benchDevice(b, func() error { return ScatterAdd(dt, I, dy, d, false) }, 0, 4*(v*d+rows*d))
	})
	b.Run("gelu-8192x3072", func(b *testing.B) {
		h := devOut(b, Float32, rows*4*d)
		if err := h.Zero(); err != nil {
			b.Fatal(err)
		}
		benchDevice(b, func() error { return GELU(h, h) }, 0, 2*4*rows*4*d)
	})
	b.Run("adamw-10M", func(b *testing.B) {
		bufs := make([]*Buffer, 4)
		for i := range bufs {
			bufs[i] = devOut(b, Float32, np)
			if err := bufs[i].Zero(); err != nil {
				b.Fatal(err)
			}
		}
		p := AdamWParams{Param: bufs[0], Grad: bufs[1], M: bufs[2], V: bufs[3], LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}
		benchDevice(b, func() error { return AdamW(p) }, 0, 7*4*np)
	})
	b.Run("cross-entropy-fwd+bwd-2048x50304", func(b *testing.B) {
		const m = 2048
		logits, dl := devOut(b, Float32, m*v), devOut(b, Float32, m*v)
		if err := logits.Zero(); err != nil {
			b.Fatal(err)
		}
		p := CrossEntropyParams{M: m, V: v, IgnoreIndex: -1, Logits: logits, Targets: devInts(b, make([]int32, m)),
			Loss: devOut(b, Float32, 1), DLoss: devBuf(b, Float32, []float64{1}), DLogits: dl, Work: devOut(b, Float64, m)}
		benchDevice(b, func() error {
			if err := CrossEntropyForward(p); err != nil {
				return err
			}
			return CrossEntropyBackward(p)
		}, 0, 3*4*m*v)
	})
}

// TestSoftmaxBuffersDevice runs the softmax family on Buffers against reference_test.go's
// float64 references (TestSoftmaxDevice covers the edge cases through the same kernels).
func TestSoftmaxBuffersDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(20))
	for _, dt := range dtypes {
		for _, sh := range [][3]int{{5, 7, 1}, {4, 6, 5}, {300, 65, 1}, {2, 40, 300}} {
			for _, kind := range []SoftmaxKind{Softmax, LogSoftmax, LogSumExp} {
				outer, n, inner := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%v/%v/%dx%dx%d", dt, kind, outer, n, inner), func(t *testing.T) {
					x := rounded(randn(rng, outer*n*inner, 3), dt)
					want := refSoftmax(kind, x, outer, n, inner)
					p := SoftmaxBuffers{Kind: kind, Outer: outer, N: n, Inner: inner, X: devBuf(t, dt, x), Y: devOut(t, dt, len(want))}
					if err := SoftmaxForwardBuffers(p); err != nil {
						t.Fatal(err)
					}
					y := host(t, p.Y)
					compare(t, "forward", y, want, tol(dt))
					dy := rounded(randn(rng, len(want), 1), dt)
					wantDx := refSoftmaxBackward(kind, x, dy, outer, n, inner)
					p.Y, p.DY, p.DX = devBuf(t, dt, rounded(want, dt)), devBuf(t, dt, dy), devOut(t, dt, len(x))
					if err := SoftmaxBackwardBuffers(p); err != nil {
						t.Fatal(err)
					}
					compare(t, "backward", host(t, p.DX), wantDx, tol(dt))
				})
			}
		}
	}
}

// TestNNDeterminism runs the kernels that reduce (scatter-add with many repeated indices, the
// norm's column sums, the cross-entropy's mean) twice on the same inputs and requires the same
// bits: no atomics, fixed reduction orders.
func TestNNDeterminism(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(21))
	const rows, d, v = 4000, 96, 50
	x, dy := devBuf(t, Float32, randn(rng, rows*d, 1)), devBuf(t, Float32, randn(rng, rows*d, 1))
	idx := make([]int32, rows)
	for i := range idx {
		idx[i] = int32(rng.Intn(v))
	}
	I := devInts(t, idx)
	tg := make([]int32, rows)
	for i := range tg {
		tg[i] = int32(rng.Intn(d))
	}
	T := devInts(t, tg)
	np := NormParams{Rows: rows, D: d, Eps: 1e-5, X: x, Mean: devOut(t, Float64, rows), Rstd: devOut(t, Float64, rows), DY: dy,
		DGamma: devOut(t, Float32, d), DBeta: devOut(t, Float32, d), Work: devOut(t, Float64, NormWorkspace(rows, d))}
	ce := CrossEntropyParams{M: rows, V: d, IgnoreIndex: -1, Logits: x, Targets: T, Loss: devOut(t, Float32, 1), Work: devOut(t, Float64, rows)}
	dtab := devOut(t, Float32, v*d)
	once := func() [][]float64 {
		for _, err := range []error{ScatterAdd(dtab, I, dy, d, false), NormForward(np), NormBackward(np), CrossEntropyForward(ce)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		return [][]float64{host(t, dtab), host(t, np.DGamma), host(t, np.DBeta), host(t, ce.Loss)}
	}
	a, b := once(), once()
	// The column sums' 16-byte first stage adds each column's rows in the one-element
	// kernel's order: the same bits from g aligned to 16 bytes (the 16-byte kernel) and from g
	// one element past it (one element at a time).
	g := randn(rng, rows*d, 1)
	colsum := func(shift int) []float64 {
		G, err := devBuf(t, Float32, append(make([]float64, shift), g...)).View(shift, rows*d)
		if err != nil {
			t.Fatal(err)
		}
		p := ColSumParams{Rows: rows, D: d, G: G, Out: devOut(t, Float32, d), Work: devOut(t, Float64, ColSumWorkspace(rows, d))}
		if err := ColSum(p); err != nil {
			t.Fatal(err)
		}
		return host(t, p.Out)
	}
	a, b = append(a, colsum(0)), append(b, colsum(1))
	for k, name := range []string{"scatter-add", "dgamma", "dbeta", "loss", "column sums, 16-byte and one-element first stage"} {
		for i := range a[k] {
			if math.Float64bits(a[k][i]) != math.Float64bits(b[k][i]) {
				t.Errorf("%s[%d]: %v, then %v", name, i, a[k][i], b[k][i])
				break
			}
		}
	}
}
