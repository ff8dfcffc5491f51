//go:build !purego

package vec

import (
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
