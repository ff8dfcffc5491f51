package nn

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func TestAdamWAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	const lr, b1, b2, eps, wd = 0.01, 0.9, 0.95, 1e-8, 0.1
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		w := newParam("w", dt, true, 3, 4)
		b := newParam("b", dt, false, 4)
		big := newParam("big", dt, true, 200, 201) // several spans
		w.fillNormal(rng, 1)
		b.fillNormal(rng, 1)
		big.fillNormal(rng, 1)
		params := []*Param{w, b, big}
		// The reference keeps its own float64 copies of parameters and moments.
		ref := make([][]float64, len(params))
		m := make([][]float64, len(params))
		v := make([][]float64, len(params))
		for i, p := range params {
			ref[i] = toF64(p.Value)
			m[i] = make([]float64, p.Size())
			v[i] = make([]float64, p.Size())
		}
		opt, err := NewAdamW(params, b1, b2, eps, wd)
		if err != nil {
			t.Fatal(err)
		}
		for step := 1; step <= 5; step++ {
			grads := make([]*tensor.Dense, len(params))
			for i, p := range params {
				grads[i] = newDense(dt, p.Value.Shape()...)
			}
			for i, g := range grads {
				gs := randSlice(rng, g.Shape().TotalSize(), 1, 0)
				fromF64(g, gs)
				gs = toF64(g) // what the optimizer sees, after rounding
				for j := range ref[i] {
					if params[i].Decay {
						ref[i][j] -= lr * wd * ref[i][j]
					}
					m[i][j] = b1*m[i][j] + (1-b1)*gs[j]
					v[i][j] = b2*v[i][j] + (1-b2)*gs[j]*gs[j]
					mhat := m[i][j] / (1 - math.Pow(b1, float64(step)))
					vhat := v[i][j] / (1 - math.Pow(b2, float64(step)))
					ref[i][j] -= lr * mhat / (math.Sqrt(vhat) + eps)
				}
			}
			if err := opt.Step(grads, lr); err != nil {
				t.Fatal(err)
			}
			tol := 1e-12
			if dt == tensor.Float32 {
				tol = 1e-5
			}
			for i, p := range params {
				got := toF64(p.Value)
				for j := range got {
					if math.Abs(got[j]-ref[i][j]) > tol {
						t.Fatalf("%v step %d %s[%d]: %g, reference %g", dt, step, p.Name, j, got[j], ref[i][j])
					}
				}
			}
		}
		if opt.Steps() != 5 {
			t.Fatalf("Steps() = %d, want 5", opt.Steps())
		}
	}
}

func TestAdamWFirstStepIsSignStep(t *testing.T) {
	// At t = 1 the bias-corrected moments are g and g², so without decay each
	// entry moves by lr·g/(|g| + eps): by lr against the gradient's sign.
	p := newParam("p", tensor.Float64, false, 4)
	fromF64(p.Value, []float64{1, 2, 3, 4})
	opt, _ := NewAdamW([]*Param{p}, 0.9, 0.999, 1e-12, 0.5)
	g := newDense(tensor.Float64, 4)
	fromF64(g, []float64{0.3, -20, 1e-3, 0})
	if err := opt.Step([]*tensor.Dense{g}, 0.1); err != nil {
		t.Fatal(err)
	}
	want := []float64{0.9, 2.1, 2.9, 4}
	for i, x := range toF64(p.Value) {
		if math.Abs(x-want[i]) > 1e-9 {
			t.Fatalf("entry %d: %g, want %g", i, x, want[i])
		}
	}
}

func TestAdamWErrors(t *testing.T) {
	p := newParam("p", tensor.Float64, false, 2)
	if _, err := NewAdamW([]*Param{p}, 1, 0.9, 1e-8, 0); err == nil {
		t.Fatal("beta1 = 1 accepted")
	}
	if _, err := NewAdamW([]*Param{p, p}, 0.9, 0.9, 1e-8, 0); err == nil {
		t.Fatal("duplicate parameter accepted")
	}
	opt, _ := NewAdamW([]*Param{p}, 0.9, 0.9, 1e-8, 0)
	if err := opt.Step([]*tensor.Dense{newDense(tensor.Float64, 3)}, 0.1); err == nil {
		t.Fatal("gradient of the wrong shape accepted")
	}
	if err := opt.Step(nil, 0.1); err == nil {
		t.Fatal("missing gradients accepted")
	}
}

func TestClipGradNorm(t *testing.T) {
	a := newDense(tensor.Float64, 2)
	b := newDense(tensor.Float32, 1)
	fromF64(a, []float64{3, 0})
	fromF64(b, []float64{4}) // global norm 5
	if n := ClipGradNorm([]*tensor.Dense{a, b}, 10); n != 5 || toF64(a)[0] != 3 {
		t.Fatalf("norm %g below the limit must leave gradients alone (a = %v)", n, toF64(a))
	}
	if n := ClipGradNorm([]*tensor.Dense{a, b}, 1); n != 5 {
		t.Fatalf("norm before clipping %g, want 5", n)
	}
	if x, y := toF64(a)[0], toF64(b)[0]; math.Abs(x-0.6) > 1e-12 || math.Abs(y-0.8) > 1e-7 {
		t.Fatalf("clipped to (%g, %g), want (0.6, 0.8)", x, y)
	}
	fromF64(a, []float64{3, 4})
	if n := ClipGradNorm([]*tensor.Dense{a}, math.NaN()); n != 5 || toF64(a)[0] != 3 {
		t.Fatalf("a NaN limit must leave the gradients alone (norm %g, a = %v)", n, toF64(a))
	}
	fromF64(a, []float64{math.NaN(), 1})
	if n := ClipGradNorm([]*tensor.Dense{a}, 1); !math.IsNaN(n) || toF64(a)[1] != 1 {
		t.Fatal("a NaN norm must be reported and change nothing")
	}
}

func TestCosineSchedule(t *testing.T) {
	c := CosineSchedule{Peak: 1e-3, Min: 1e-4, Warmup: 10, Total: 110}
	for _, tc := range []struct {
		step int
		want float64
	}{
		{0, 1e-4}, {4, 5e-4}, {9, 1e-3}, // warmup: linear from Peak/Warmup to Peak
		{10, 1e-3},               // start of the decay
		{60, (1e-3 + 1e-4) / 2},  // halfway: cos(π/2) = 0
		{110, 1e-4}, {500, 1e-4}, // after Total: Min
		{35, 1e-4 + 0.45e-3*(1+math.Cos(math.Pi/4))}, // a quarter of the way
	} {
		if got := c.LR(tc.step); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("LR(%d) = %g, want %g", tc.step, got, tc.want)
		}
	}
	for s := 10; s < 110; s++ {
		if c.LR(s+1) > c.LR(s) {
			t.Fatalf("LR rises after warmup at step %d", s)
		}
	}
}

// TestBadHyperparametersChangeNothing: a NaN or ±Inf (or negative) learning
// rate, clip norm, weight decay, beta or eps given to TrainStep or
// AdamW.Step is an error naming it, and leaves every parameter, moment and
// the step count exactly as they were.
func TestBadHyperparametersChangeNothing(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cfg := tinyConfig()
	m, err := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.NewRunner(2, 4, Train)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	tok, tgt := []int{1, 2, 3, 4, 5, 6, 0, 1}, []int{2, 3, 4, 5, 6, 0, 1, 2}
	// Two good steps first, so that the moments are not zero.
	for s := 0; s < 2; s++ {
		if _, _, err := r.TrainStep(opt, 1e-2, 1, tok, tgt, nil); err != nil {
			t.Fatal(err)
		}
	}
	type hyper struct{ b1, b2, eps, wd float64 }
	good := hyper{opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay}
	for _, tc := range []struct {
		name     string
		lr, clip float64
		h        hyper
		want     string
	}{
		{"lr NaN", nan, 1, good, "learning rate NaN"},
		{"lr +Inf", inf, 1, good, "learning rate +Inf"},
		{"lr -Inf", -inf, 1, good, "learning rate -Inf"},
		{"lr negative", -0.5, 1, good, "learning rate -0.5"},
		{"clip NaN", 1e-2, nan, good, "clip norm NaN"},
		{"clip +Inf", 1e-2, inf, good, "clip norm +Inf"},
		{"clip -Inf", 1e-2, -inf, good, "clip norm -Inf"},
		{"weight decay +Inf", 1e-2, 1, hyper{0.9, 0.95, 1e-8, inf}, "weight decay +Inf"},
		{"weight decay NaN", 1e-2, 1, hyper{0.9, 0.95, 1e-8, nan}, "weight decay NaN"},
		{"beta1 NaN", 1e-2, 1, hyper{nan, 0.95, 1e-8, 0.1}, "beta1 NaN"},
		{"beta2 -Inf", 1e-2, 1, hyper{0.9, -inf, 1e-8, 0.1}, "beta2 -Inf"},
		{"eps NaN", 1e-2, 1, hyper{0.9, 0.95, nan, 0.1}, "eps NaN"},
		{"eps +Inf", 1e-2, 1, hyper{0.9, 0.95, inf, 0.1}, "eps +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay = tc.h.b1, tc.h.b2, tc.h.eps, tc.h.wd
			defer func() { opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay = good.b1, good.b2, good.eps, good.wd }()
			before := snapshot(r.Params(), opt)
			_, _, err := r.TrainStep(opt, tc.lr, tc.clip, tok, tgt, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("TrainStep: error %v, want one containing %q", err, tc.want)
			}
			if !sameSnapshot(before, snapshot(r.Params(), opt)) {
				t.Fatal("TrainStep changed the parameters or the optimizer")
			}
			if math.IsNaN(tc.clip) || math.IsInf(tc.clip, 0) {
				return // not an AdamW argument
			}
			grads := make([]*tensor.Dense, len(r.Params()))
			for i, p := range r.Params() {
				grads[i] = newDense(p.Value.Dtype(), p.Value.Shape().Clone()...)
				p := floats[float32](grads[i])
				for j := range p {
					p[j] = 0.01 * float32(j%7-3)
				}
			}
			err = opt.Step(grads, tc.lr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AdamW.Step: error %v, want one containing %q", err, tc.want)
			}
			if !sameSnapshot(before, snapshot(r.Params(), opt)) {
				t.Fatal("AdamW.Step changed the parameters or the optimizer")
			}
		})
	}
	// A learning rate from a schedule that fails Validate is refused too.
	sched := CosineSchedule{Peak: inf, Min: 0, Warmup: 2, Total: 10}
	if err := sched.Validate(); err == nil || !strings.Contains(err.Error(), "Peak: learning rate +Inf") {
		t.Fatalf("Validate: %v", err)
	}
	before := snapshot(r.Params(), opt)
	if _, _, err := r.TrainStep(opt, sched.LR(5), 1, tok, tgt, nil); err == nil {
		t.Fatalf("TrainStep took the schedule's learning rate %g", sched.LR(5))
	}
	if !sameSnapshot(before, snapshot(r.Params(), opt)) {
		t.Fatal("a refused schedule step changed the parameters")
	}
	// And the optimizer still works afterwards.
	if _, _, err := r.TrainStep(opt, 1e-2, 1, tok, tgt, nil); err != nil || opt.Steps() != 3 {
		t.Fatalf("good step after the refused ones: %v, %d steps", err, opt.Steps())
	}
}

// TestCutBlocks checks the blocks of the loops over all parameters: every
// entry of every tensor in exactly one piece, in order, and every block but
// the last of blockLen entries.
func TestCutBlocks(t *testing.T) {
	for _, sizes := range [][]int{{}, {0}, {1}, {blockLen}, {blockLen + 1}, {3, 0, 2*blockLen + 5, 17, blockLen - 1, 1}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			f := cutBlocks(sizes)
			total := 0
			for _, n := range sizes {
				total += n
			}
			if want := (total + blockLen - 1) / blockLen; f.len() != want {
				t.Fatalf("%d blocks, want %d", f.len(), want)
			}
			i, next := 0, 0 // the tensor and entry the next piece must start at
			for b := 0; b < f.len(); b++ {
				n := 0
				for _, pc := range f.pieces(b, b+1) {
					for i < len(sizes) && next == sizes[i] {
						i, next = i+1, 0
					}
					if pc.i != i || pc.lo != next || pc.hi <= pc.lo || pc.hi > sizes[i] {
						t.Fatalf("block %d: piece %+v, want tensor %d from entry %d (sizes %v)", b, pc, i, next, sizes)
					}
					next = pc.hi
					n += pc.hi - pc.lo
				}
				if want := min(blockLen, total-b*blockLen); n != want {
					t.Fatalf("block %d holds %d entries, want %d", b, n, want)
				}
			}
		})
	}
}

// TestClipGradNormAnyCores checks the global norm against a float64 loop
// and the clipped gradients against g·maxNorm/‖g‖, on gradients of mixed
// sizes (a nil one, one smaller than a block, several across blocks) and
// dtypes, and that both are the same bits at any GOMAXPROCS.
func TestClipGradNormAnyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(11))
	// Blocks of comparable sums, so that a sum in another order shows in
	// the last bits.
	shapes := [][]int{{3}, nil, {200, 201}, {17}, {blockLen + 1}, {4, 16384}, {1}, {999}, {5000}, {7, 3000}, {2}}
	dts := []tensor.Dtype{tensor.Float32, tensor.Float32, tensor.Float64, tensor.Float32, tensor.Float32, tensor.Float64, tensor.Float32, tensor.Float64, tensor.Float32, tensor.Float32, tensor.Float64}
	vals := make([][]float64, len(shapes))
	want, ss := 0.0, 0.0
	for i, sh := range shapes {
		if sh == nil {
			continue
		}
		g := newDense(dts[i], sh...)
		fromF64(g, randSlice(rng, g.Shape().TotalSize(), 0.5+float64(i%4)/4, 0.1))
		vals[i] = toF64(g) // after rounding
		for _, x := range vals[i] {
			ss += x * x
		}
	}
	want = math.Sqrt(ss)
	const maxNorm = 1.0
	var first []*tensor.Dense
	var firstNorm float64
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		grads := make([]*tensor.Dense, len(shapes))
		for i, sh := range shapes {
			if sh != nil {
				grads[i] = newDense(dts[i], sh...)
				fromF64(grads[i], vals[i])
			}
		}
		norm := ClipGradNorm(grads, maxNorm)
		if math.Abs(norm-want) > 1e-12*want {
			t.Fatalf("GOMAXPROCS=%d: norm %v, float64 loop %v", procs, norm, want)
		}
		for i, g := range grads {
			if g == nil {
				continue
			}
			tol := 1e-12 // the norm's own error
			if g.Dtype() == tensor.Float32 {
				tol = 1e-7
			}
			for j, x := range toF64(g) {
				if w := vals[i][j] * maxNorm / want; math.Abs(x-w) > tol*math.Abs(w) {
					t.Fatalf("GOMAXPROCS=%d: gradient %d entry %d clipped to %g, want %g", procs, i, j, x, w)
				}
			}
		}
		if first == nil {
			first, firstNorm = grads, norm
			continue
		}
		if math.Float64bits(norm) != math.Float64bits(firstNorm) {
			t.Fatalf("GOMAXPROCS=%d: norm %v, with one core %v", procs, norm, firstNorm)
		}
		for i, g := range grads {
			if g == nil {
				continue
			}
			a, b := toF64(g), toF64(first[i])
			for j := range a {
				if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
					t.Fatalf("GOMAXPROCS=%d: gradient %d entry %d is %v, with one core %v", procs, i, j, a[j], b[j])
				}
			}
		}
	}
}

// TestAdamWAnyCores runs three steps on parameters of mixed sizes and
// dtypes (blocks that span several parameters) at several GOMAXPROCS: the
// same bits every time (TestAdamWAgainstReference checks the values).
func TestAdamWAnyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shapes := [][]int{{5}, {300, 70}, {blockLen + 3}, {1}, {64, 300}}
	var first [][]float64
	for _, procs := range []int{1, 4, 3} {
		runtime.GOMAXPROCS(procs)
		rng := rand.New(rand.NewSource(12))
		var params []*Param
		for i, sh := range shapes {
			dt := tensor.Float32
			if i == 3 {
				dt = tensor.Float64
			}
			p := newParam(fmt.Sprint("p", i), dt, i%2 == 0, sh...)
			p.fillNormal(rng, 1)
			params = append(params, p)
		}
		opt, err := NewAdamW(params, 0.9, 0.95, 1e-8, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 3; step++ {
			grads := make([]*tensor.Dense, len(params))
			for i, p := range params {
				grads[i] = newDense(p.Value.Dtype(), p.Value.Shape()...)
				fromF64(grads[i], randSlice(rng, p.Size(), 1, 0))
			}
			if err := opt.Step(grads, 1e-2); err != nil {
				t.Fatal(err)
			}
		}
		var got [][]float64
		for i, p := range params {
			got = append(got, toF64(p.Value), toF64(opt.m[i]), toF64(opt.v[i]))
		}
		if first == nil {
			first = got
			continue
		}
		for k := range got {
			for j := range got[k] {
				if math.Float64bits(got[k][j]) != math.Float64bits(first[k][j]) {
					t.Fatalf("GOMAXPROCS=%d: tensor %d (parameter %d) entry %d is %v, with one core %v", procs, k, k/3, j, got[k][j], first[k][j])
				}
			}
		}
	}
}
