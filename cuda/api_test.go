package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// attnOK returns a valid forward problem of the given element type.
func attnOK(f64 bool) AttentionParams {
	p := AttentionParams{B: 2, H: 4, Hkv: 2, Nq: 3, Nk: 5, D: 8, Scale: 0.5}
	q, k, l := p.B*p.H*p.Nq*p.D, p.B*p.Hkv*p.Nk*p.D, p.B*p.H*p.Nq
	if f64 {
		p.Q, p.K, p.V, p.O, p.L = make([]float64, q), make([]float64, k), make([]float64, k), make([]float64, q), make([]float64, l)
		p.DO, p.DQ, p.DK, p.DV = make([]float64, q), make([]float64, q), make([]float64, k), make([]float64, k)
	} else {
		p.Q, p.K, p.V, p.O, p.L = make([]float32, q), make([]float32, k), make([]float32, k), make([]float32, q), make([]float32, l)
		p.DO, p.DQ, p.DK, p.DV = make([]float32, q), make([]float32, q), make([]float32, k), make([]float32, k)
	}
	return p
}

// TestAttentionParamsCheck checks that bad problems are refused with an error naming what is
// wrong, and good ones pass, in both element types.
func TestAttentionParamsCheck(t *testing.T) {
	for _, c := range []struct {
		name     string
		edit     func(p *AttentionParams)
		backward bool
		want     string // substring of the error; "" means valid
		unsup    bool   // the error wraps ErrUnsupported
	}{
		{"valid forward", func(p *AttentionParams) {}, false, "", false},
		{"valid backward", func(p *AttentionParams) {}, true, "", false},
		{"valid backward with DL", func(p *AttentionParams) { p.DL = make([]float64, 24) }, true, "", false},
		{"zero Nq", func(p *AttentionParams) { p.Nq = 0 }, false, "at least 1", false},
		// Every zero-length dimension, forward and backward (issue 8, defect 1): an error naming
		// the sizes, never a launch (nor a division by Hkv = 0).
		{"zero Nq backward", func(p *AttentionParams) { p.Nq = 0 }, true, "every size must be at least 1 (B=2 H=4 Hkv=2 Nq=0 Nk=5 D=8)", false},
		{"zero Nk", func(p *AttentionParams) { p.Nk = 0 }, false, "Nk=0", false},
		{"zero Nk backward", func(p *AttentionParams) { p.Nk = 0 }, true, "Nk=0", false},
		{"zero B", func(p *AttentionParams) { p.B = 0 }, true, "B=0", false},
		{"zero H", func(p *AttentionParams) { p.H = 0 }, false, "H=0", false},
		{"zero Hkv", func(p *AttentionParams) { p.Hkv = 0 }, true, "Hkv=0", false},
		{"zero D", func(p *AttentionParams) { p.D = 0 }, false, "D=0", false},
		{"negative Nk", func(p *AttentionParams) { p.Nk = -3 }, true, "Nk=-3", false},
		{"H not multiple of Hkv", func(p *AttentionParams) { p.Hkv = 3 }, false, "H=4 is not a multiple of Hkv=3", false},
		{"zero scale", func(p *AttentionParams) { p.Scale = 0 }, false, "Scale=0", false},
		{"short Q", func(p *AttentionParams) { p.Q = make([]float64, 5) }, false, "Q has 5 elements, want 192", false},
		{"mixed types", func(p *AttentionParams) { p.V = make([]float32, 80) }, false, "all slices must share", false},
		{"not a float slice", func(p *AttentionParams) { p.K = []int{1} }, false, "K is []int", false},
		{"key lengths count", func(p *AttentionParams) { p.KeyLengths = []int{1} }, false, "KeyLengths has 1 entries [1], want one per batch element (B=2)", false},
		{"key length range", func(p *AttentionParams) { p.KeyLengths = []int{1, 6} }, false, "KeyLengths[1] = 6 is outside [0, Nk=5]", false},
		{"missing DO", func(p *AttentionParams) { p.DO = nil }, true, "DO is <nil>", false},
		{"D over 256", func(p *AttentionParams) { p.D = 257 }, false, "D=257 over", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := attnOK(true)
			c.edit(&p)
			_, err := p.check(c.backward)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			case c.unsup != (err != nil && errors.Is(err, ErrUnsupported)):
				t.Fatalf("error %v: wraps ErrUnsupported = %v, want %v", err, errors.Is(err, ErrUnsupported), c.unsup)
			}
		})
	}
	p := attnOK(false)
	if dt, err := p.check(true); err != nil || dt != f32 {
		t.Fatalf("float32 problem: %v, %v", dt, err)
	}
}

// TestSoftmaxParamsCheck checks the softmax launchers' validation.
func TestSoftmaxParamsCheck(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        SoftmaxParams
		backward bool
		want     string
	}{
		{"valid", SoftmaxParams{Kind: Softmax, Outer: 2, N: 3, Inner: 4, X: make([]float32, 24), Y: make([]float32, 24)}, false, ""},
		{"valid lse", SoftmaxParams{Kind: LogSumExp, Outer: 2, N: 3, Inner: 4, X: make([]float64, 24), Y: make([]float64, 8)}, false, ""},
		{"valid lse backward", SoftmaxParams{Kind: LogSumExp, Outer: 2, N: 3, Inner: 1, X: make([]float64, 6), Y: make([]float64, 2),
			DY: make([]float64, 2), DX: make([]float64, 6)}, true, ""},
		{"valid log-softmax backward", SoftmaxParams{Kind: LogSoftmax, Outer: 1, N: 3, Inner: 1, Y: make([]float64, 3),
			DY: make([]float64, 3), DX: make([]float64, 3)}, true, ""},
		{"lse Y too long", SoftmaxParams{Kind: LogSumExp, Outer: 2, N: 3, Inner: 4, X: make([]float64, 24), Y: make([]float64, 24)}, false, "Y has 24 elements, want 8"},
		{"negative", SoftmaxParams{Kind: Softmax, Outer: -1, N: 3, Inner: 4}, false, "negative size"},
		{"kind", SoftmaxParams{Kind: 7}, false, "unknown kind 7"},
		{"types", SoftmaxParams{Kind: Softmax, Outer: 1, N: 2, Inner: 1, X: make([]float32, 2), Y: make([]float64, 2)}, false, "all slices must share"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.p.check(c.backward)
			if c.want == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestOffloaded checks the ops' device-failure policy on each kind of launcher result.
func TestOffloaded(t *testing.T) {
	fault := &Error{Op: "attention forward", Call: "cuLaunchKernel", Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED"}
	for _, c := range []struct {
		name    string
		err     error
		ran     bool
		wantErr error
	}{
		{"done", nil, true, nil},
		{"no device", ErrNoDevice, false, nil},
		{"device lost", fmt.Errorf("cuda: attention forward: %w", ErrNoDevice), false, nil},
		{"unsupported", fmt.Errorf("cuda: attention forward: D=300: %w", ErrUnsupported), false, nil},
		{"fault", fault, true, fault},
		{"bad arguments", errors.New("cuda: attention forward: Q has 5 elements, want 192"), true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran, err := Offloaded(c.err)
			if ran != c.ran {
				t.Fatalf("Offloaded(%v) ran = %t, want %t", c.err, ran, c.ran)
			}
			if want := c.wantErr; want == nil && c.ran && c.err != nil {
				want = c.err // any other error comes back as it is
				if err != want {
					t.Fatalf("Offloaded(%v) error %v, want it back", c.err, err)
				}
			} else if err != want {
				t.Fatalf("Offloaded(%v) error %v, want %v", c.err, err, want)
			}
		})
	}
}
