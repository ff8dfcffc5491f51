package softmax

import (
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// BenchmarkSoftmax4096x4096 compares, on a (4096, 4096) float32 input along
// the last axis, the three reference algorithms (rows split over the cores
// with parallel.For, as the op does), the op's kernel, the Softmax op and
// Gorgonia's own SoftMax (both run by a TapeMachine, which allocates the
// output anew on every run). Throughput counts the bytes read and written
// once: 2·4096²·4 per run; Gelem/s the entries per second. Compare with
// the machine's streaming bandwidth measured in the same session
// (shared/tools/peak.c, triad_gbs).
//
//	go test -run '^$' -bench Softmax4096 ./ops/softmax/
func BenchmarkSoftmax4096x4096(b *testing.B) {
	const n = 4096
	x := graph.RandTensor[float32](rand.New(rand.NewSource(1)), n, n)
	xs := x.Data().([]float32)
	ys := make([]float32, n*n)
	rowsOver := func(f func(dst, src []float32)) func() {
		return func() {
			parallel.For(n, 1, func(lo, hi int) {
				for r := lo; r < hi; r++ {
					f(ys[r*n:(r+1)*n], xs[r*n:(r+1)*n])
				}
			})
		}
	}
	tape := func(build func(*gorgonia.Node) (*gorgonia.Node, error)) func() {
		g := gorgonia.NewGraph()
		_, err := build(graph.Input(g, "x", x))
		if err != nil {
			b.Fatal(err)
		}
		m := gorgonia.NewTapeMachine(g)
		b.Cleanup(func() { m.Close() })
		return func() {
			m.Reset()
			if err := m.RunAll(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"threepass", rowsOver(func(d, s []float32) { SoftmaxThreePass(d, s) })},
		{"online", rowsOver(func(d, s []float32) { SoftmaxOnline(d, s) })},
		{"tiled", rowsOver(func(d, s []float32) { SoftmaxTiled(d, s, 512) })},
		// The op's kernel alone, into a preallocated output: the op minus
		// the TapeMachine and the allocation of a fresh 64 MiB output.
		{"kernel", func() { forward(kindSoftmax, xs, ys, layout{outer: n, n: n, inner: 1}) }},
		{"op", tape(func(x *gorgonia.Node) (*gorgonia.Node, error) { return Softmax(x, 1) })},
		{"gorgonia", tape(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.SoftMax(x, 1) })},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(2 * 4 * n * n)
			c.run() // warm up: first run allocates
			b.ResetTimer()
			for b.Loop() {
				c.run()
			}
			b.ReportMetric(float64(b.N)*n*n/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
