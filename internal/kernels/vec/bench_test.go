package vec

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// BenchmarkKernels times each float32 kernel on every instruction set the
// machine runs, on rows of 64 (an attention tile row) and 4096 (in L1)
// entries, in GB/s (bytes read + written) and elements/s:
//
//	go test -run '^$' -bench Kernels ./internal/kernels/vec/
func BenchmarkKernels(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{64, 4096} {
		x, y, z := randRow(rng, n, 3), randRow(rng, n, 1), randRow(rng, n, 1)
		var sink float64
		kernels := []struct {
			name  string
			bytes int // per element
			f     func()
		}{
			{"Max", 4, func() { sink += float64(Max(x)) }},
			{"ExpShiftSum", 8, func() { sink += ExpShiftSum(y, x, 1, 2) }},
			{"ExpShiftSum/nodst", 4, func() { sink += ExpShiftSum(nil, x, 1, 2) }},
			{"Exp2Shifts", 16, func() { Exp2Shifts(y, x, z, z) }},
			{"Sum", 4, func() { sink += Sum(x) }},
			{"Dot", 8, func() { sink += Dot(x, y) }},
			{"Scale", 8, func() { Scale(y, 1) }},
			{"StreamScaled", 8, func() { StreamScaled(z, y, 1) }},
			{"MulDiff", 12, func() { MulDiff(z, x, y, 0.5) }},
			{"MulDiffs", 16, func() { MulDiffs(z, x, y, x) }},
			{"SubScaled", 12, func() { SubScaled(z, x, y, 0.5) }},
			{"SubShift", 8, func() { SubShift(z, x, 1, 2) }},
		}
		for _, k := range kernels {
			for _, l := range isa.Supported() {
				b.Run(fmt.Sprintf("%s/n=%d/%v", k.name, n, l), func(b *testing.B) {
					defer useLevel(l)()
					b.SetBytes(int64(k.bytes * n))
					for b.Loop() {
						k.f()
					}
					b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				})
			}
		}
		_ = sink
	}
}

// BenchmarkTiles times the attention tile kernels on a 128×128 float32
// tile (attention's blocks), every row fully visible, in elements/s, next
// to the same work done row by row with the row kernels; OnlineExp2Rows-causal
// is the diagonal tile of a causal mask (row r sees r+1 entries: a masked
// partial vector in 15 rows of 16), in elements of the whole tile per second:
//
//	go test -run '^$' -bench Tiles ./internal/kernels/vec/
func BenchmarkTiles(b *testing.B) {
	const rows, cols = 128, 128
	rng := rand.New(rand.NewSource(1))
	s, ds, work := randRow(rng, rows*cols, 3), randRow(rng, rows*cols, 1), make([]float32, rows*cols)
	hi, lo, delta := randRow(rng, cols, 1), make([]float32, cols), randRow(rng, cols, 1)
	n, first, stair := make([]int, rows), make([]int, rows), make([]int, rows)
	for r := range n {
		n[r], stair[r] = cols, r+1
	}
	m, sum := make([]float32, rows), make([]float64, rows)
	kernels := []struct {
		name string
		f    func()
	}{
		{"OnlineExp2Rows", func() { OnlineExp2Rows(work, cols, rows, cols, n, m, sum) }},
		{"OnlineExp2Rows-causal", func() { OnlineExp2Rows(work, cols, rows, cols, stair, m, sum) }},
		{"Max+Exp2ShiftSum-rows", func() {
			for r := 0; r < rows; r++ {
				row := work[r*cols : (r+1)*cols]
				m[r] = max(m[r], Max(row))
				sum[r] = Exp2ShiftSum(row, row, 1, m[r])
			}
		}},
		{"Exp2MulDiffRows", func() { Exp2MulDiffRows(work, ds, cols, rows, cols, first, hi, lo, delta) }},
		{"Exp2Shifts+MulDiffs-rows", func() {
			for r := 0; r < rows; r++ {
				row, d := work[r*cols:(r+1)*cols], ds[r*cols:(r+1)*cols]
				Exp2Shifts(row, row, hi, lo)
				MulDiffs(d, row, d, delta)
			}
		}},
	}
	for _, k := range kernels {
		for _, l := range isa.Supported() {
			b.Run(fmt.Sprintf("%s/%v", k.name, l), func(b *testing.B) {
				defer useLevel(l)()
				for b.Loop() {
					b.StopTimer()
					copy(work, s)
					for r := range m {
						m[r] = -1e30
					}
					b.StartTimer()
					k.f()
				}
				b.ReportMetric(float64(b.N)*rows*cols/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}
