package train

import (
	"errors"
	"flag"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRangeContains(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name string
		r    Range
		v    float64
		want bool
	}{
		{"positive 1", Positive, 1, true},
		{"positive tiny", Positive, 1e-300, true},
		{"positive 0", Positive, 0, false},
		{"positive -1", Positive, -1, false},
		{"positive +Inf", Positive, inf, false},
		{"positive NaN", Positive, nan, false},
		{"non-negative 0", NonNegative, 0, true},
		{"non-negative -0.5", NonNegative, -0.5, false},
		{"non-negative huge", NonNegative, 1e300, true},
		{"at least 1: 1", AtLeast(1), 1, true},
		{"at least 1: 0.999", AtLeast(1), 0.999, false},
		{"[0,1]: 0", Between(0, 1), 0, true},
		{"[0,1]: 1", Between(0, 1), 1, true},
		{"[0,1]: 1.001", Between(0, 1), 1.001, false},
		{"(0,1): 0", Range{Lo: 0, Hi: 1, LoOpen: true, HiOpen: true}, 0, false},
		{"(0,1): 1", Range{Lo: 0, Hi: 1, LoOpen: true, HiOpen: true}, 1, false},
		{"(0,1): 0.5", Range{Lo: 0, Hi: 1, LoOpen: true, HiOpen: true}, 0.5, true},
		{"[0,1): 1", Range{Lo: 0, Hi: 1, HiOpen: true}, 1, false},
		{"any -1e300", Any, -1e300, true},
		{"any -Inf", Any, math.Inf(-1), false},
		{"any NaN", Any, nan, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Contains(tc.v); got != tc.want {
				t.Fatalf("%v.Contains(%g) = %t, want %t", tc.r, tc.v, got, tc.want)
			}
		})
	}
}

func TestRangeString(t *testing.T) {
	for _, tc := range []struct {
		r    Range
		want string
	}{
		{Positive, "> 0"},
		{NonNegative, "≥ 0"},
		{AtLeast(2), "≥ 2"},
		{Between(0, 1), "in [0, 1]"},
		{Range{Lo: 0, Hi: 1, HiOpen: true}, "in [0, 1)"},
		{Range{Lo: 0, Hi: 1, LoOpen: true, HiOpen: true}, "in (0, 1)"},
		{Any, "any finite number"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.r, got, tc.want)
		}
	}
}

// testFlags is a small program's flag set with one flag of each kind and
// one cross-flag rule.
func testFlags() (*Flags, *struct {
	n    int
	seed int64
	x    float64
	d    time.Duration
	s    string
}) {
	v := &struct {
		n    int
		seed int64
		x    float64
		d    time.Duration
		s    string
	}{}
	f := NewFlags("prog", io.Discard)
	f.Int(&v.n, "n", 3, AtLeast(1), "count")
	f.Int64(&v.seed, "seed", 1, Any, "seed")
	f.Float(&v.x, "x", 0.5, Range{Lo: 0, Hi: 1, HiOpen: true}, "fraction")
	f.Duration(&v.d, "d", 0, NonNegative, "limit")
	f.StringVar(&v.s, "s", "", "name")
	f.Check(func() error {
		if float64(v.n)*v.x > 2 {
			return errors.New("-n times -x must be at most 2")
		}
		return nil
	})
	return f, v
}

func TestFlagsParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"-n", "1", "-x", "0", "-d", "1m", "-seed", "-7", "-s", "NaN"}, ""},
		{[]string{"-n", "0"}, "-n 0: must be an integer ≥ 1"},
		{[]string{"-n", "-5"}, "-n -5: must be an integer ≥ 1"},
		{[]string{"-n", "1.5"}, `invalid value "1.5" for flag -n`},
		{[]string{"-x", "1"}, "-x 1: must be a finite number in [0, 1)"},
		{[]string{"-x", "-0.1"}, "-x -0.1: must be a finite number in [0, 1)"},
		{[]string{"-x", "NaN"}, "-x NaN: must be a finite number"},
		{[]string{"-x", "Inf"}, "-x +Inf: must be a finite number"},
		{[]string{"-x", "-Inf"}, "-x -Inf: must be a finite number"},
		{[]string{"-d", "-1s"}, "-d -1s: must be a duration (seconds) ≥ 0"},
		{[]string{"-n", "5", "-x", "0.9"}, "-n times -x must be at most 2"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f, _ := testFlags()
			wantError(t, f.Parse(tc.args), tc.want)
		})
	}
	f, _ := testFlags()
	if err := f.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestUnranged(t *testing.T) {
	f, _ := testFlags()
	if u := f.Unranged(); len(u) != 0 {
		t.Fatalf("Unranged() = %v, want none", u)
	}
	var a, b int
	var c float64
	var q bool
	f.IntVar(&a, "plain_int", 0, "")
	f.Float64Var(&c, "plain_float", 0, "")
	f.UintVar(new(uint), "plain_uint", 0, "")
	f.BoolVar(&q, "flag", false, "")
	f.Int(&b, "ranged", 0, NonNegative, "")
	if got, want := f.Unranged(), []string{"plain_float", "plain_int", "plain_uint"}; !slices.Equal(got, want) {
		t.Fatalf("Unranged() = %v, want %v", got, want)
	}
}

func TestCommonRegister(t *testing.T) {
	def := Common{Steps: 10, Batch: 2, EvalEvery: 5, Warmup: 1, Layers: 1, Heads: 2, Width: 8, LR: 0.1, Seed: 3}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"-steps", "-1"}, "-steps -1: must be an integer ≥ 0"},
		{[]string{"-batch", "0"}, "-batch 0: must be an integer ≥ 1"},
		{[]string{"-eval_every", "0"}, "-eval_every 0"},
		{[]string{"-warmup", "-1"}, "-warmup -1"},
		{[]string{"-layers", "0"}, "-layers 0"},
		{[]string{"-heads", "0"}, "-heads 0"},
		{[]string{"-width", "0"}, "-width 0"},
		{[]string{"-width", "9"}, "-width 9 must be a multiple of -heads 2"},
		{[]string{"-lr", "0"}, "-lr 0: must be a finite number > 0"},
		{[]string{"-lr", "Inf"}, "-lr +Inf: must be a finite number > 0"},
		{[]string{"-lr", "NaN"}, "-lr NaN"},
		{[]string{"-time", "-1m"}, "-time -1m0s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var c Common
			f := NewFlags("prog", io.Discard)
			c.Register(f, def)
			wantError(t, f.Parse(tc.args), tc.want)
			if tc.want == "" {
				want := def
				if c != want {
					t.Fatalf("defaults %+v, want %+v (no time limit, progress on)", c, want)
				}
			}
		})
	}
}

// wantError fails t unless err contains want, or is nil when want is "".
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}
