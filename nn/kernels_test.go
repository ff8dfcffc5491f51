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
