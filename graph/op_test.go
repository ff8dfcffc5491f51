package graph

import (
	"testing"

	"gorgonia.org/tensor"
)

func TestAddInto(t *testing.T) {
	dst := NewTensor([]int{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	src := NewTensor([]int{2}, []float64{10, 20})
	if err := AddInto(dst, src, 3); err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2, 3, 14, 25, 6}
	for i, v := range dst.Data().([]float64) {
		if v != want[i] {
			t.Fatalf("dst = %v, want %v", dst.Data(), want)
		}
	}
	// A view as src: the second column of a 2×2 matrix.
	m := NewTensor([]int{2, 2}, []float32{1, 2, 3, 4})
	col, err := m.Slice(nil, tensor.S(1))
	if err != nil {
		t.Fatal(err)
	}
	d32 := NewTensor([]int{2}, []float32{0, 0})
	if err := AddInto(d32, col, 0); err != nil {
		t.Fatal(err)
	}
	if got := d32.Data().([]float32); got[0] != 2 || got[1] != 4 {
		t.Fatalf("adding a column view gave %v, want [2 4]", got)
	}
}
