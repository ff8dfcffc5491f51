package isa

import "testing"

func TestCapped(t *testing.T) {
	cases := []struct {
		hw      Level
		env     string
		want    Level
		wantErr bool
	}{
		{AVX512, "", AVX512, false},
		{AVX512, "avx2", AVX2, false},
		{AVX512, "GENERIC", Generic, false},
		{AVX2, "avx512", AVX2, false},
		{Generic, "avx2", Generic, false},
		{AVX2, "sse", AVX2, true},
	}
	for _, c := range cases {
		t.Run(c.hw.String()+"/"+c.env, func(t *testing.T) {
			got, err := capped(c.hw, c.env)
			if got != c.want || (err != nil) != c.wantErr {
				t.Fatalf("capped(%v, %q) = %v, %v; want %v, error %v", c.hw, c.env, got, err, c.want, c.wantErr)
			}
		})
	}
}

func TestSupported(t *testing.T) {
	s := Supported()
	if len(s) == 0 || s[0] != Generic || s[len(s)-1] != Hardware() {
		t.Fatalf("Supported() = %v, want Generic..%v", s, Hardware())
	}
	if Get() > Hardware() {
		t.Fatalf("Get() = %v above Hardware() = %v", Get(), Hardware())
	}
	t.Logf("level %s", Describe())
}
