package benchkit

import "testing"

func TestFLOPs(t *testing.T) {
	// B=1, H=8, N=1024, d=64: 4·8·1024²·64 = 2^31.
	if got, want := (Shape{1, 8, 1024, 64, false}).FwdFLOPs(), float64(1<<31); got != want {
		t.Fatalf("non-causal: %g, want %g", got, want)
	}
	if got, want := (Shape{1, 8, 1024, 64, true}).FwdFLOPs(), float64(1<<30); got != want {
		t.Fatalf("causal: %g, want %g", got, want)
	}
}

func TestInts(t *testing.T) {
	if v, err := Ints(" 1, 17 ,1025"); err != nil || len(v) != 3 || v[0] != 1 || v[1] != 17 || v[2] != 1025 {
		t.Fatalf("Ints = %v, %v", v, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-3", "x"} {
		if _, err := Ints(bad); err == nil {
			t.Errorf("Ints(%q): no error", bad)
		}
	}
}
