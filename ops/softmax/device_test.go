package softmax

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/graph"
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
				if ran, err := deviceForward(k, x, y, l); !ran || err != nil {
					t.Fatalf("%s: the device forward did not run: %v", name, err)
				}
				onCPU(func() { forward(k, x, cy, l) })
				if err := compare(y, want, 1e-12, 1e-14); err != nil {
					t.Errorf("%s float64 device forward: %v", name, err)
				}
				if err := compare(cy, want, 1e-12, 1e-14); err != nil {
					t.Errorf("%s float64 CPU forward: %v", name, err)
				}
				dx, cdx := make([]float64, l.outer*l.n*l.inner), make([]float64, l.outer*l.n*l.inner)
				if ran, err := deviceBackward(k, x, want, dy, dx, l); !ran || err != nil {
					t.Fatalf("%s: the device backward did not run: %v", name, err)
				}
				onCPU(func() { backward(k, x, want, dy, cdx, l) })
				if err := compare(dx, wantDx, 1e-11, 1e-14); err != nil {
					t.Errorf("%s float64 device backward: %v", name, err)
				}
				if err := compare(cdx, wantDx, 1e-11, 1e-14); err != nil {
					t.Errorf("%s float64 CPU backward: %v", name, err)
				}

				x32, y32 := narrow(x), make([]float32, ySize)
				if ran, err := deviceForward(k, x32, y32, l); !ran || err != nil {
					t.Fatalf("%s: the float32 device forward did not run: %v", name, err)
				}
				want32 := reference(k, widen(x32), shape, axis)
				if err := compare(y32, want32, 1e-6, 1e-44); err != nil {
					t.Errorf("%s float32 device forward: %v", name, err)
				}
			}
		}
	}
}

// TestDeviceFailurePolicy checks the one device-failure policy (cuda.Offloaded) through the
// ops on a TapeMachine, with stand-in launchers (no GPU needed): a device failure in the
// forward or the backward is the op's error, naming the op and the CUDA error (the op's Do
// returns it wrapped: errors.As finds the *cuda.Error there), and is not computed again on
// the CPU; no device or a problem the kernels do not cover gives the CPU's
// result, checked against the float64 reference loops.
func TestDeviceFailurePolicy(t *testing.T) {
	fault := &cuda.Error{Op: "softmax forward", Call: "cuLaunchKernel(fg_softmax_fwd_rows_f64)", Code: 719,
		Name: "CUDA_ERROR_LAUNCH_FAILED", Msg: "unspecified launch failure"}
	unsupported := fmt.Errorf("cuda: softmax forward: too large: %w", cuda.ErrUnsupported)
	defer func(was bool, d any) { cpuOnly = was; device = d.(typeOfDevice) }(cpuOnly, device)
	cpuOnly = false
	shape, axis := []int{3, 5}, 1
	rng := rand.New(rand.NewSource(5))
	x, w := randSlice(rng, 15, 2), randSlice(rng, 15, 1)
	for _, c := range []struct {
		name           string
		fwdErr, bwdErr error
		wantErr        string // "" means the CPU's result
	}{
		{"forward fails", fault, nil, "CUDA_ERROR_LAUNCH_FAILED"},
		{"backward fails", unsupported, fault, "CUDA_ERROR_LAUNCH_FAILED"},
		{"unsupported", unsupported, unsupported, ""},
		{"no device", cuda.ErrNoDevice, fmt.Errorf("lost: %w", cuda.ErrNoDevice), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls int
			device.enabled = func() bool { return true }
			device.forward = func(cuda.SoftmaxParams) error { calls++; return c.fwdErr }
			device.backward = func(cuda.SoftmaxParams) error { calls++; return c.bwdErr }
			if c.fwdErr == fault { // the op itself returns the *cuda.Error wrapped
				_, err := graph.NewOp(fwdOp{kind: kindSoftmax, axis: axis, dims: 2}).Do(graph.NewTensor(shape, x))
				var ce *cuda.Error
				if !errors.As(err, &ce) || ce != fault {
					t.Fatalf("Do: error %v, want one wrapping the *cuda.Error", err)
				}
				calls = 0
			}
			y, dx, err := runTape(kindSoftmax, x, w, shape, axis)
			if calls != 2 && !(c.fwdErr == fault && calls == 1) {
				t.Fatalf("the device launchers were called %d times", calls)
			}
			if c.wantErr != "" {
				// Gorgonia's VM wraps errors without Unwrap: the text is what reaches the caller.
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "Softmax") {
					t.Fatalf("error %v, want the op's error naming it and the CUDA error %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := compare(y, reference(kindSoftmax, x, shape, axis), 1e-12, 1e-14); err != nil {
				t.Errorf("y: %v", err)
			}
			if err := compare(dx, referenceGrad(kindSoftmax, x, w, shape, axis), 1e-11, 1e-14); err != nil {
				t.Errorf("dx: %v", err)
			}
		})
	}
}

type typeOfDevice = struct {
	enabled           func() bool
	forward, backward func(cuda.SoftmaxParams) error
}
