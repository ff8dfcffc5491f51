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
