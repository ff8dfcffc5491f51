package benchkit

import (
	"strings"
	"testing"
)

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

func TestDecodeLines(t *testing.T) {
	in := `{"b":2,"h":4,"n":8,"d":16,"causal":true,"backend":"FLASH","fwd_ms":1.5,"fwdbwd_ms":4,"error":"","threads":3}
not json
{"b":1,"h":1,"n":1,"d":1,"backend":"MATH","error":"unsupported"}
`
	type row struct {
		Torch
		Threads int `json:"threads"`
	}
	var rows []row
	var bad []string
	if err := DecodeLines(strings.NewReader(in), func(r row, _ string) { rows = append(rows, r) },
		func(line string, _ error) { bad = append(bad, line) }); err != nil {
		t.Fatal(err)
	}
	want0 := row{Torch{Shape{B: 2, H: 4, N: 8, D: 16, Causal: true}, "FLASH", 1.5, 4, ""}, 3}
	if len(rows) != 2 || rows[0] != want0 || rows[1].Backend != "MATH" || rows[1].Error != "unsupported" {
		t.Errorf("rows %+v, want %+v and the MATH error", rows, want0)
	}
	if len(bad) != 1 || bad[0] != "not json" {
		t.Errorf("bad lines %q, want [\"not json\"]", bad)
	}
}
