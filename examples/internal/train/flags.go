// Package train is the training loop that examples/gpt and examples/sort
// share: their common flags, each numeric flag checked against its range
// before any work, the step loop with its progress bar, ETA and optional
// time limit, periodic evaluation, the loss history with its plot and CSV,
// and checkpoints that are written only when everything in them is finite.
package train

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"
)

// Main runs a program: run(os.Args[1:], os.Stdout, os.Stderr), then exit
// status 0 on success or -h, else 1 after "name: error" on stderr.
func Main(name string, run func(args []string, stdout, stderr io.Writer) error) {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Range is the set of valid values of a numeric flag: Lo ≤ v ≤ Hi, a bound
// excluded when its Open field is set. Whatever the bounds, a value must be
// finite: NaN and ±Inf never pass.
type Range struct {
	Lo, Hi         float64
	LoOpen, HiOpen bool
}

var (
	// Any is every finite value.
	Any = Range{Lo: math.Inf(-1), Hi: math.Inf(1), LoOpen: true, HiOpen: true}
	// NonNegative is [0, ∞).
	NonNegative = AtLeast(0)
	// Positive is (0, ∞).
	Positive = Range{Lo: 0, LoOpen: true, Hi: math.Inf(1), HiOpen: true}
)

// AtLeast is [lo, ∞).
func AtLeast(lo float64) Range { return Range{Lo: lo, Hi: math.Inf(1), HiOpen: true} }

// Between is [lo, hi].
func Between(lo, hi float64) Range { return Range{Lo: lo, Hi: hi} }

// Contains tells whether v is finite and inside r.
func (r Range) Contains(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if v < r.Lo || (r.LoOpen && v == r.Lo) {
		return false
	}
	return v < r.Hi || (!r.HiOpen && v == r.Hi)
}

// String describes r: "≥ 1", "> 0", "in [0, 1)", "any finite number".
func (r Range) String() string {
	lo, hi := !math.IsInf(r.Lo, -1), !math.IsInf(r.Hi, 1)
	switch {
	case lo && hi:
		b := [2]string{"[", "]"}
		if r.LoOpen {
			b[0] = "("
		}
		if r.HiOpen {
			b[1] = ")"
		}
		return fmt.Sprintf("in %s%s, %s%s", b[0], num(r.Lo), num(r.Hi), b[1])
	case lo && r.LoOpen:
		return "> " + num(r.Lo)
	case lo:
		return "≥ " + num(r.Lo)
	case hi && r.HiOpen:
		return "< " + num(r.Hi)
	case hi:
		return "≤ " + num(r.Hi)
	}
	return "any finite number"
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Flags is a flag.FlagSet whose numeric flags carry their valid range.
// Parse rejects a value outside its range with an error that names the
// flag, the value and the range, then runs the cross-flag rules of Check.
type Flags struct {
	*flag.FlagSet
	ranges map[string]Range
	rules  []func() error
}

// NewFlags returns an empty set for the program name, printing usage and
// parse errors to stderr; Parse returns flag.ErrHelp for -h.
func NewFlags(name string, stderr io.Writer) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &Flags{FlagSet: fs, ranges: map[string]Range{}}
}

// Int defines an int flag with values in r.
func (f *Flags) Int(p *int, name string, def int, r Range, usage string) {
	f.IntVar(p, name, def, usage)
	f.ranges[name] = r
}

// Int64 defines an int64 flag with values in r.
func (f *Flags) Int64(p *int64, name string, def int64, r Range, usage string) {
	f.Int64Var(p, name, def, usage)
	f.ranges[name] = r
}

// Float defines a float64 flag with values in r (finite by Range's rule).
func (f *Flags) Float(p *float64, name string, def float64, r Range, usage string) {
	f.Float64Var(p, name, def, usage)
	f.ranges[name] = r
}

// Duration defines a duration flag with values in r (in seconds).
func (f *Flags) Duration(p *time.Duration, name string, def time.Duration, r Range, usage string) {
	f.DurationVar(p, name, def, usage)
	f.ranges[name] = r
}

// Check adds a rule that involves several flags; rules run in the order
// added, after every flag has passed its own range.
func (f *Flags) Check(rule func() error) { f.rules = append(f.rules, rule) }

// Parse parses args, refuses positional arguments, and checks every ranged
// flag (defaults included) and then the rules.
func (f *Flags) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", f.Args())
	}
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		r, ok := f.ranges[fl.Name]
		if !ok || err != nil {
			return
		}
		v, ok := numeric(fl.Value)
		if !ok {
			err = fmt.Errorf("flag -%s has a range but is not numeric", fl.Name)
			return
		}
		if !r.Contains(v) {
			err = fmt.Errorf("-%s %s: must be %s", fl.Name, fl.Value, describe(r, fl.Value))
		}
	})
	if err != nil {
		return err
	}
	for _, rule := range f.rules {
		if err := rule(); err != nil {
			return err
		}
	}
	return nil
}

// describe is r for the error message of a flag of value v: durations are
// in seconds, floats must also be finite.
func describe(r Range, v flag.Value) string {
	switch v.(flag.Getter).Get().(type) {
	case time.Duration:
		return "a duration (seconds) " + r.String()
	case float64:
		return "a finite number " + r.String()
	}
	return "an integer " + r.String()
}

// numeric returns the value of a numeric flag as a float64 (durations in
// seconds).
func numeric(v flag.Value) (float64, bool) {
	g, ok := v.(flag.Getter)
	if !ok {
		return 0, false
	}
	switch x := g.Get().(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case time.Duration:
		return x.Seconds(), true
	}
	return 0, false
}

// Unranged lists the numeric flags defined without a range (directly on
// the FlagSet): a test of each program requires it to be empty, so that no
// numeric flag escapes validation.
func (f *Flags) Unranged() []string {
	var out []string
	f.VisitAll(func(fl *flag.Flag) {
		if _, ranged := f.ranges[fl.Name]; !ranged {
			if _, ok := numeric(fl.Value); ok {
				out = append(out, fl.Name)
			}
		}
	})
	return out
}
