package attention_test

import (
	"fmt"
	"log"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/ops/attention"
)

// Causal attention over three positions, and the gradient of Σ o with
// respect to v. With q = 0 every score is 0, so each query attends
// uniformly to the keys it sees: o_i = mean(v_0 … v_i), L_i = ln(i+1), and
// ∂Σo/∂v_j = Σ_{i≥j} 1/(i+1) — the values printed below.
func Example() {
	g := gorgonia.NewGraph()
	input := func(name string, data []float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 2), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 2), tensor.WithBacking(data))))
	}
	q := input("q", []float64{0, 0, 0, 0, 0, 0})           // [B=1, H=1, N=3, d=2]
	k := input("k", []float64{0.3, -1, 2, 0.5, -0.7, 1.1}) // [B=1, Hkv=1, N=3, d=2]
	v := input("v", []float64{1, 2, 3, 4, 5, 6})

	o, lse, err := attention.AttentionLSE(q, k, v, attention.Options{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(o))
	if _, err := gorgonia.Grad(loss, v); err != nil {
		log.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(v))
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(err)
	}
	dv, _ := v.Grad()
	fmt.Printf("o  = %.4f\n", o.Value().Data())
	fmt.Printf("L  = %.4f\n", lse.Value().Data())
	fmt.Printf("dv = %.4f\n", dv.Data())
	// Output:
	// o  = [1.0000 2.0000 2.0000 3.0000 3.0000 4.0000]
	// L  = [0.0000 0.6931 1.0986]
	// dv = [1.8333 1.8333 0.8333 0.8333 0.3333 0.3333]
}
