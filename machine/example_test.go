package machine_test

import (
	"fmt"
	"log"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// The log-sum-exp of x = (0, ln 2, ln 3) is ln 6, and its gradient is
// softmax(x) = (1/6, 2/6, 3/6).
func ExampleNew() {
	g := gorgonia.NewGraph()
	x := graph.Input(g, "x", graph.NewTensor([]int{3}, []float64{0, math.Log(2), math.Log(3)}))
	lse, err := softmax.LogSumExp(x, 0)
	if err != nil {
		log.Fatal(err)
	}
	grads, err := gorgonia.Grad(lse, x)
	if err != nil {
		log.Fatal(err)
	}
	m, err := machine.New(g, machine.Keep(lse, grads[0]))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(err)
	}
	v, _ := m.Value(lse)
	d, _ := m.Value(grads[0])
	fmt.Printf("lse = %.4f (ln 6 = %.4f)\n", v.Data(), math.Log(6))
	fmt.Printf("∂lse/∂x = %.4f\n", d.Data())
	// Output:
	// lse = 1.7918 (ln 6 = 1.7918)
	// ∂lse/∂x = [0.1667 0.3333 0.5000]
}
