//go:build !purego

package vec

import (
	"math"
	"testing"
	"unsafe"
)

// TestExpTableLayout pins the table layout that kernels_amd64.s reads by
// offset (T_* there: entry k at 32·k).
func TestExpTableLayout(t *testing.T) {
	if tabLen != 17 || unsafe.Sizeof(expTable{}) != 17*32 {
		t.Fatalf("expTable: %d entries of %d bytes, kernels_amd64.s expects 17 of 32", tabLen, unsafe.Sizeof(expTable{})/uintptr(tabLen))
	}
	offsets := map[string]int{"T_LOG2BASE": tabLog2Base, "T_C1": tabC1, "T_C2": tabC2, "T_LO": tabLo, "T_HI": tabHi,
		"T_ELO": tabELo, "T_EHI": tabEHi, "T_Q6": tabQ6, "T_Q1": tabQ1, "T_ONE": tabOne, "T_BMIN": tabBMin, "T_BIAS": tabBias}
	want := map[string]int{"T_LOG2BASE": 0, "T_C1": 32, "T_C2": 64, "T_LO": 96, "T_HI": 128,
		"T_ELO": 160, "T_EHI": 192, "T_Q6": 224, "T_Q1": 384, "T_ONE": 416, "T_BMIN": 448, "T_BIAS": 512}
	for name, k := range offsets {
		if 32*k != want[name] {
			t.Errorf("%s: entry %d at offset %d, kernels_amd64.s reads %d", name, k, 32*k, want[name])
		}
	}
}

// TestExp2Table16Layout pins the offsets at which LOADEXP2TAB512 reads
// exp2Table16, and its table against 2^(j/16).
func TestExp2Table16Layout(t *testing.T) {
	var x exp2Table16
	got := []uintptr{unsafe.Offsetof(x.pow), unsafe.Offsetof(x.lo), unsafe.Offsetof(x.s),
		unsafe.Offsetof(x.c3), unsafe.Offsetof(x.c2), unsafe.Offsetof(x.c1), unsafe.Offsetof(x.least)}
	want := []uintptr{0, 64, 68, 72, 76, 80, 84}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("field %d at offset %d, kernels_amd64.s reads %d", i, got[i], want[i])
		}
	}
	for j, v := range exp2Tab16.pow {
		if w := math.Exp2(float64(j) / 16); math.Abs(float64(v)-w) > 0x1p-24*w {
			t.Errorf("pow[%d] = %v, want 2^(%d/16) = %v rounded", j, v, j, w)
		}
	}
}
