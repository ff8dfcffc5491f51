package machine_test

import (
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/machine"
)

// TestCPUKernelsInGraph runs graphs of nn and ops/attention on the CPU, whose
// registry runs Gorgonia's additions, products, repeats and sums, and
// checks loss and gradients against the CPU running every node as its
// Gorgonia op (opsOnly): equal up to the rounding of float64 (1e-12) or of
// float32 sums in another order (1e-5, relative to the largest gradient
// entry).
func TestCPUKernelsInGraph(t *testing.T) {
	for _, c := range []string{"attention/causal", "nn/layers", "nn/gpt"} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", c, dt), func(t *testing.T) {
				ref, loss, _, grads := onMachine(t, named(c), dt, machine.WithBackend(opsOnly{machine.CPU()}))
				wantLoss, wantGrads := results(t, ref, loss, grads)
				m, loss, _, grads := onMachine(t, named(c), dt)
				gotLoss, gotGrads := results(t, m, loss, grads)
				if k := m.Report().DeviceKernels; k == 0 {
					t.Fatalf("no node ran as a kernel of the CPU's registry")
				}
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				if math.Abs(gotLoss-wantLoss) > tol*(1+math.Abs(wantLoss)) {
					t.Fatalf("loss %v, %v with Gorgonia's ops", gotLoss, wantLoss)
				}
				for i := range wantGrads {
					scale := 0.0
					for _, v := range wantGrads[i] {
						scale = math.Max(scale, math.Abs(v))
					}
					for j, want := range wantGrads[i] {
						if math.Abs(gotGrads[i][j]-want) > tol*(scale+1e-30) {
							t.Fatalf("gradient %d [%d]: %v, %v with Gorgonia's ops", i, j, gotGrads[i][j], want)
						}
					}
				}
			})
		}
	}
}
