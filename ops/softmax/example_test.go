package softmax_test

import (
	"fmt"
	"log"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// Softmax and LogSumExp along the last axis of a 2×3 matrix, with the row
// on which Gorgonia's own SoftMax returns NaN, and the gradient of a loss
// through both.
func Example() {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{
			0, 0, 0,
			1000, 0, 1,
		}))))
	p, err := softmax.Softmax(x, -1) // [2, 3]
	if err != nil {
		log.Fatal(err)
	}
	lse, err := softmax.LogSumExp(x, 1) // [2]
	if err != nil {
		log.Fatal(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(lse)) // ∂loss/∂x = softmax(x)
	if _, err := gorgonia.Grad(loss, x); err != nil {
		log.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(x))
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(err)
	}
	dx, _ := x.Grad()
	fmt.Printf("softmax:\n%.4f\n", p.Value())
	fmt.Printf("logsumexp: %.4f\n", lse.Value())
	fmt.Printf("gradient of Σ logsumexp:\n%.4f\n", dx)
	// Output:
	// softmax:
	// ⎡0.3333  0.3333  0.3333⎤
	// ⎣1.0000  0.0000  0.0000⎦
	//
	// logsumexp: [   1.0986  1000.0000]
	// gradient of Σ logsumexp:
	// ⎡0.3333  0.3333  0.3333⎤
	// ⎣1.0000  0.0000  0.0000⎦
}
