package softmax

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// onCPU runs f with the device branch switched off.
func onCPU(f func()) {
	cpuOnly = true
	defer func() { cpuOnly = false }()
	f()
}

// TestDeviceVersusCPU runs every kind on layouts with inner = 1 and inner > 1 (rows of only
// −Inf, a +Inf, a NaN and large offsets planted) through the device branch of forward and
// backward and through the CPU kernels, and compares both with the float64 reference loops:
// the device must agree with the reference as tightly as the CPU op's own tests ask
// (float64 1e-12 forward, 1e-11 backward; float32 within 1e-6 of the float64 result).
// It skips when no device is in use.
func TestDeviceVersusCPU(t *testing.T) {
	if !cuda.Enabled() {
		t.Skipf("no CUDA device in use (%s)", cuda.Device())
	}
	rng := rand.New(rand.NewSource(21))
	for _, shape := range [][]int{{7, 50}, {3, 40, 130}, {5, 1}, {2, 3000}, {1, 9, 1}} {
		for axis := range shape {
			l := layoutOf(shape, axis)
			x := randSlice(rng, l.outer*l.n*l.inner, 3)
			if l.outer*l.inner >= 4 && l.n > 1 {
				row := func(r int) []int { // the flat indices of strided row r = o·inner + j
					o, j := r/l.inner, r%l.inner
					idx := make([]int, l.n)
					for i := range idx {
						idx[i] = o*l.n*l.inner + i*l.inner + j
					}
					return idx
				}
				for _, i := range row(0) {
					x[i] = math.Inf(-1)
				}
				x[row(1)[l.n-1]] = math.Inf(1)
				x[row(2)[l.n/2]] = math.NaN()
				for _, i := range row(3) {
					x[i] += 3000
				}
			}
			for _, k := range kinds {
				name := fmt.Sprintf("%v%v/axis%d", k, shape, axis)
				ySize := l.outer * l.n * l.inner
				if k == kindLogSumExp {
					ySize = l.outer * l.inner
				}
				dy := randSlice(rng, ySize, 1)
				want := reference(k, x, shape, axis)
				wantDx := referenceGrad(k, x, dy, shape, axis)

				y, cy := make([]float64, ySize), make([]float64, ySize)
				if !deviceForward(k, x, y, l) {
					t.Fatalf("%s: the device forward did not run", name)
				}
				onCPU(func() { forward(k, x, cy, l) })
				if err := compare(y, want, 1e-12, 1e-14); err != nil {
					t.Errorf("%s float64 device forward: %v", name, err)
				}
				if err := compare(cy, want, 1e-12, 1e-14); err != nil {
					t.Errorf("%s float64 CPU forward: %v", name, err)
				}
				dx, cdx := make([]float64, l.outer*l.n*l.inner), make([]float64, l.outer*l.n*l.inner)
				if !deviceBackward(k, x, want, dy, dx, l) {
					t.Fatalf("%s: the device backward did not run", name)
				}
				onCPU(func() { backward(k, x, want, dy, cdx, l) })
				if err := compare(dx, wantDx, 1e-11, 1e-14); err != nil {
					t.Errorf("%s float64 device backward: %v", name, err)
				}
				if err := compare(cdx, wantDx, 1e-11, 1e-14); err != nil {
					t.Errorf("%s float64 CPU backward: %v", name, err)
				}

				x32, y32 := narrow(x), make([]float32, ySize)
				if !deviceForward(k, x32, y32, l) {
					t.Fatalf("%s: the float32 device forward did not run", name)
				}
				want32 := reference(k, widen(x32), shape, axis)
				if err := compare(y32, want32, 1e-6, 1e-44); err != nil {
					t.Errorf("%s float32 device forward: %v", name, err)
				}
			}
		}
	}
}
