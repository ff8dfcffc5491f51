package machine

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// operandOf allocates a CPU buffer of shape s filled from rng (N(0, 1) + 0.5)
// and returns its operand and its values in float64.
func operandOf(t *testing.T, dt tensor.Dtype, rng *rand.Rand, s tensor.Shape) (Operand, []float64) {
	t.Helper()
	b, err := CPU().Alloc(dt, size(s))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, size(s))
	for i := range want {
		want[i] = rng.NormFloat64() + 0.5
	}
	switch d := b.(*hostBuffer).data.(type) {
	case []float32:
		for i, v := range want {
			d[i] = float32(v)
			want[i] = float64(d[i])
		}
	case []float64:
		copy(d, want)
	}
	return Operand{Buf: b, Shape: s}, want
}

// valuesOf reads an operand's elements as float64.
func valuesOf(o Operand) []float64 {
	out := make([]float64, size(o.Shape))
	switch d := o.Buf.(*hostBuffer).data.(type) {
	case []float32:
		for i := range out {
			out[i] = float64(d[o.Off+i])
		}
	case []float64:
		copy(out, d[o.Off:])
	}
	return out
}

// poison sets every element of a CPU operand's buffer to NaN, so that a
// kernel that leaves an element unwritten fails its check.
func poison(o Operand) {
	switch d := o.Buf.(*hostBuffer).data.(type) {
	case []float32:
		for i := range d {
			d[i] = float32(math.NaN())
		}
	case []float64:
		for i := range d {
			d[i] = math.NaN()
		}
	}
}

// opOf returns the op of the node that build makes from inputs of shapes.
func opOf(t *testing.T, dt tensor.Dtype, shapes []tensor.Shape, build func(in ...*gorgonia.Node) (*gorgonia.Node, error)) gorgonia.Op {
	t.Helper()
	g := gorgonia.NewGraph()
	in := make([]*gorgonia.Node, len(shapes))
	for i, s := range shapes {
		in[i] = gorgonia.NewTensor(g, dt, s.Dims(), gorgonia.WithShape(s...), gorgonia.WithName(fmt.Sprint("x", i)))
	}
	n, err := build(in...)
	if err != nil {
		t.Fatal(err)
	}
	return n.Op()
}

// tol is the error allowed against a float64 reference for a result
// rounded once to dt.
func tol(dt tensor.Dtype, ref float64) float64 {
	if dt == tensor.Float32 {
		return 0x1p-24*math.Abs(ref) + 1e-38
	}
	return 0x1p-53 * math.Abs(ref)
}

func bind(t *testing.T, mk KernelMaker, op gorgonia.Op, out Operand, in ...Operand) Kernel {
	t.Helper()
	k, err := mk(op, out, in)
	if err != nil || k == nil {
		t.Fatalf("%v: kernel %v, error %v", op, k, err)
	}
	return k
}

// TestCPUElemBin checks x + y and x ∘ y against float64 loops, at sizes
// around the vector widths and the parallel blocks, at several GOMAXPROCS
// (each entry rounded once: the same bits for any split).
func TestCPUElemBin(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(1))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, s := range []tensor.Shape{{1}, {17}, {3, 5}, {127, 129}, {1025, 71}} {
			for _, mul := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%v/mul=%t", dt, s, mul), func(t *testing.T) {
					f := gorgonia.Add
					if mul {
						f = gorgonia.HadamardProd
					}
					op := opOf(t, dt, []tensor.Shape{s, s}, func(in ...*gorgonia.Node) (*gorgonia.Node, error) { return f(in[0], in[1]) })
					x, xv := operandOf(t, dt, rng, s)
					y, yv := operandOf(t, dt, rng, s)
					z, _ := operandOf(t, dt, rng, s)
					k := bind(t, cpuElemBin, op, z, x, y)
					for _, procs := range []int{1, 4, 3} {
						runtime.GOMAXPROCS(procs)
						poison(z)
						if err := k(); err != nil {
							t.Fatal(err)
						}
						for i, got := range valuesOf(z) {
							want := xv[i] + yv[i]
							if mul {
								want = xv[i] * yv[i]
							}
							if math.Abs(got-want) > tol(dt, want) {
								t.Fatalf("GOMAXPROCS=%d [%d]: %v, want %v", procs, i, got, want)
							}
						}
					}
				})
			}
		}
	}
}

// TestCPURepeat checks the broadcast of axes of length 1 against index
// arithmetic, from a scalar and from [M, 1] and [1, V], at several
// GOMAXPROCS.
func TestCPURepeat(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(2))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, tc := range []struct {
			x, y tensor.Shape
			axis int
		}{
			{tensor.Shape{1, 1}, tensor.Shape{37, 1}, 0},
			{tensor.Shape{37, 1}, tensor.Shape{37, 96}, 1},
			{tensor.Shape{1, 17}, tensor.Shape{129, 17}, 0},
			{tensor.Shape{5, 1, 3}, tensor.Shape{5, 7, 3}, 1},
			{tensor.Shape{1, 96}, tensor.Shape{2048, 96}, 0},
		} {
			t.Run(fmt.Sprintf("%v/%v", dt, tc.y), func(t *testing.T) {
				// BroadcastAdd repeats x along axis to y's shape.
				var op gorgonia.Op
				opOf(t, dt, []tensor.Shape{tc.x, tc.y}, func(in ...*gorgonia.Node) (*gorgonia.Node, error) {
					z, err := gorgonia.BroadcastAdd(in[0], in[1], []byte{byte(tc.axis)}, nil)
					for _, n := range in[0].Graph().AllNodes() {
						if n.Op() != nil && OpKind(n.Op()) == "gorgonia.repeatOp" {
							op = n.Op()
						}
					}
					return z, err
				})
				if op == nil {
					t.Fatal("no repeat op in the graph of BroadcastAdd")
				}
				x, xv := operandOf(t, dt, rng, tc.x)
				y, _ := operandOf(t, dt, rng, tc.y)
				n, _ := operandOf(t, tensor.Int, rng, tensor.ScalarShape()) // the count: read from the shape
				k := bind(t, cpuRepeat, op, y, x, n)
				for _, procs := range []int{1, 4, 3} {
					runtime.GOMAXPROCS(procs)
					poison(y)
					if err := k(); err != nil {
						t.Fatal(err)
					}
					got := valuesOf(y)
					for i := 0; i < size(tc.y); i++ {
						// The index of element i of y in x: the axes where x has length 1 read index 0.
						xi, rest, stride := 0, i, 1
						idx := make([]int, len(tc.y))
						for k := len(tc.y) - 1; k >= 0; k-- {
							idx[k] = rest % tc.y[k]
							rest /= tc.y[k]
						}
						for k := len(tc.y) - 1; k >= 0; k-- {
							if tc.x[k] != 1 {
								xi += idx[k] * stride
							}
							stride *= tc.x[k]
						}
						if got[i] != xv[xi] {
							t.Fatalf("GOMAXPROCS=%d [%v]: %v, want x[%d] = %v", procs, idx, got[i], xi, xv[xi])
						}
					}
				}
			})
		}
	}
}

// TestCPUSum checks the sum of every element against a float64 loop, and
// that it gives the same bits at any GOMAXPROCS.
func TestCPUSum(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(3))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, s := range []tensor.Shape{{1}, {17}, {127, 129}, {2048, 96}, {100003}} {
			t.Run(fmt.Sprintf("%v/%v", dt, s), func(t *testing.T) {
				op := opOf(t, dt, []tensor.Shape{s}, func(in ...*gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Sum(in[0]) })
				x, xv := operandOf(t, dt, rng, s)
				out, _ := operandOf(t, dt, rng, tensor.ScalarShape())
				k := bind(t, cpuSum, op, out, x)
				// A compensated float64 sum; the kernel sums in float64 too,
				// in blocks: its error is far below 1e-13·Σ|x|.
				want, c, abs := 0.0, 0.0, 0.0
				for _, v := range xv {
					y := v - c
					s := want + y
					c = (s - want) - y
					want = s
					abs += math.Abs(v)
				}
				var first float64
				for i, procs := range []int{1, 2, 3, 8} {
					runtime.GOMAXPROCS(procs)
					if err := k(); err != nil {
						t.Fatal(err)
					}
					got := valuesOf(out)[0]
					if math.Abs(got-want) > tol(dt, want)+1e-13*abs {
						t.Fatalf("GOMAXPROCS=%d: %v, want %v", procs, got, want)
					}
					if i == 0 {
						first = got
					} else if got != first {
						t.Fatalf("GOMAXPROCS=%d: %v, with 1: %v", procs, got, first)
					}
				}
			})
		}
	}
}

// TestCPUKernelsDecline: instances the kernels do not cover bind no kernel
// (the node then runs as its Gorgonia op).
func TestCPUKernelsDecline(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	dt := tensor.Float32
	a, _ := operandOf(t, dt, rng, tensor.Shape{3, 4})
	b, _ := operandOf(t, dt, rng, tensor.Shape{3, 4})
	sub := opOf(t, dt, []tensor.Shape{{3, 4}, {3, 4}}, func(in ...*gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Sub(in[0], in[1]) })
	sumRows := opOf(t, dt, []tensor.Shape{{3, 4}}, func(in ...*gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Sum(in[0], 0) })
	v, _ := operandOf(t, dt, rng, tensor.Shape{4})
	for _, tc := range []struct {
		name string
		mk   KernelMaker
		op   gorgonia.Op
		out  Operand
		in   []Operand
	}{
		{"subtraction", cpuElemBin, sub, a, []Operand{a, b}},
		{"an input without a buffer", cpuElemBin, sub, a, []Operand{a, {Shape: tensor.Shape{3, 4}}}},
		{"a sum over one axis", cpuSum, sumRows, v, []Operand{a}},
	} {
		if k, err := tc.mk(tc.op, tc.out, tc.in); k != nil || err != nil {
			t.Errorf("%s: kernel %v, error %v: want neither", tc.name, k != nil, err)
		}
	}
}
