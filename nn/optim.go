package nn

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter), the
// update of PyTorch's torch.optim.AdamW. For step t = 1, 2, … and each
// parameter p with gradient g:
//
//	p ← p − lr·λ·p                     (only when p.Decay)
//	m ← β1·m + (1 − β1)·g
//	v ← β2·v + (1 − β2)·g²
//	p ← p − lr·(m/(1 − β1ᵗ)) / (√(v/(1 − β2ᵗ)) + ε)
//
// Gorgonia's AdamSolver folds the decay into the gradient (L2, coupled with
// the adaptive scaling) and clips per element, so nn has its own.
// The moments m and v have the dtype of their parameter.
type AdamW struct {
	Beta1, Beta2, Eps float64
	WeightDecay       float64 // λ

	params []*Param
	m, v   []*tensor.Dense
	t      int
	blocks flatBlocks // the parameters' entries in blocks of blockLen
}

// NewAdamW returns an AdamW over params with zeroed moments at step 0. The
// hyperparameters must satisfy CheckAdamW.
func NewAdamW(params []*Param, beta1, beta2, eps, weightDecay float64) (*AdamW, error) {
	if err := CheckAdamW(beta1, beta2, eps, weightDecay); err != nil {
		return nil, fmt.Errorf("nn.NewAdamW: %w", err)
	}
	if err := checkParamList("nn.NewAdamW", params); err != nil {
		return nil, err
	}
	sizes := make([]int, len(params))
	for i, p := range params {
		sizes[i] = p.Value.Shape().TotalSize()
	}
	o := &AdamW{Beta1: beta1, Beta2: beta2, Eps: eps, WeightDecay: weightDecay, params: params, blocks: cutBlocks(sizes)}
	for _, p := range params {
		if err := checkFloat("nn.NewAdamW: parameter "+p.Name, p.Value.Dtype()); err != nil {
			return nil, err
		}
		o.m = append(o.m, newDense(p.Value.Dtype(), p.Value.Shape().Clone()...))
		o.v = append(o.v, newDense(p.Value.Dtype(), p.Value.Shape().Clone()...))
	}
	return o, nil
}

// CheckAdamW returns an error naming the first AdamW hyperparameter outside
// its domain, or nil:
//
//	β1, β2 ∈ [0, 1),   eps ∈ (0, ∞),   weight decay λ ∈ [0, ∞)
//
// (NaN and ±Inf are outside every domain). NewAdamW, AdamW.Step and
// Checkpoint.Restore apply it; a program can call it on its flags first.
func CheckAdamW(beta1, beta2, eps, weightDecay float64) error {
	switch {
	case !(beta1 >= 0 && beta1 < 1):
		return fmt.Errorf("beta1 %g must lie in [0, 1)", beta1)
	case !(beta2 >= 0 && beta2 < 1):
		return fmt.Errorf("beta2 %g must lie in [0, 1)", beta2)
	case !(eps > 0 && !math.IsInf(eps, 1)):
		return fmt.Errorf("eps %g must be positive and finite", eps)
	case !(weightDecay >= 0 && !math.IsInf(weightDecay, 1)):
		return fmt.Errorf("weight decay %g must be finite and ≥ 0", weightDecay)
	}
	return nil
}

// CheckLR returns an error unless lr is a finite number ≥ 0 (as PyTorch's
// optimizers require). AdamW.Step and Runner.TrainStep apply it.
func CheckLR(lr float64) error {
	if !(lr >= 0 && !math.IsInf(lr, 1)) {
		return fmt.Errorf("learning rate %g must be finite and ≥ 0", lr)
	}
	return nil
}

// Steps returns the number of updates done so far.
func (o *AdamW) Steps() int {
	if o == nil {
		return 0
	}
	return o.t
}

// Step applies one update with learning rate lr; grads[i] is the gradient of
// the i-th parameter given to NewAdamW. A learning rate or hyperparameter
// outside its domain (CheckLR, CheckAdamW: NaN and ±Inf included) or a
// gradient holding NaN or ±Inf is an error that changes nothing. Step holds
// the parameters' lock for writing (see Runner).
func (o *AdamW) Step(grads []*tensor.Dense, lr float64) error {
	if err := o.checkStep(grads, lr); err != nil {
		return err
	}
	if err := syncParams(o.params, nil); err != nil {
		return fmt.Errorf("nn.AdamW.Step: %w", err)
	}
	for i, g := range grads {
		if err := checkFiniteTensor("gradient of "+quote(o.params[i].Name), g); err != nil {
			return fmt.Errorf("nn.AdamW.Step: %w; no parameter changed", err)
		}
	}
	o.step(grads, lr)
	return nil
}

// checkStep validates the arguments and hyperparameters of a step.
func (o *AdamW) checkStep(grads []*tensor.Dense, lr float64) error {
	if o == nil || (o.params != nil && o.m == nil) {
		return fmt.Errorf("nn.AdamW.Step: the optimizer is nil or was not made by NewAdamW")
	}
	if err := CheckLR(lr); err != nil {
		return fmt.Errorf("nn.AdamW.Step: %w; no parameter changed", err)
	}
	if err := CheckAdamW(o.Beta1, o.Beta2, o.Eps, o.WeightDecay); err != nil {
		return fmt.Errorf("nn.AdamW.Step: %w; no parameter changed", err)
	}
	if len(grads) != len(o.params) {
		return fmt.Errorf("nn.AdamW.Step: %d gradients for %d parameters", len(grads), len(o.params))
	}
	for i, g := range grads {
		p := o.params[i]
		if g == nil || !g.Shape().Eq(p.Value.Shape()) || g.Dtype() != p.Value.Dtype() {
			return fmt.Errorf("nn.AdamW.Step: gradient %d for %s %v%v is %v", i, p.Name, p.Value.Dtype(), p.Value.Shape(), describe(g))
		}
	}
	return nil
}

// step applies a checked update, holding the parameters' lock for writing.
func (o *AdamW) step(grads []*tensor.Dense, lr float64) {
	defer writeLock(o.params)()
	defer markHostNewer(o.params)
	o.t++
	c1 := 1 - math.Pow(o.Beta1, float64(o.t))
	c2 := 1 - math.Pow(o.Beta2, float64(o.t))
	// One loop over every parameter's entries in equal blocks (vec.AdamW:
	// float64 arithmetic, each entry on its own, so the split changes no
	// bit), claimed by the workers as they finish.
	parallel.ForDynamic(o.blocks.len(), 1, func(lo, hi int) {
		for _, pc := range o.blocks.pieces(lo, hi) {
			p := o.params[pc.i]
			h := vec.AdamWStep{Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, LR: lr, C1: c1, C2: c2}
			if p.Decay {
				h.Decay = lr * o.WeightDecay
			}
			switch p.Value.Dtype() {
			case tensor.Float32:
				adamw(floats[float32](p.Value), floats[float32](grads[pc.i]), floats[float32](o.m[pc.i]), floats[float32](o.v[pc.i]), pc.lo, pc.hi, &h)
			default:
				adamw(floats[float64](p.Value), floats[float64](grads[pc.i]), floats[float64](o.m[pc.i]), floats[float64](o.v[pc.i]), pc.lo, pc.hi, &h)
			}
		}
	})
}

// adamw updates entries [lo, hi) of one parameter.
func adamw[T float](p, g, m, v []T, lo, hi int, h *vec.AdamWStep) {
	vec.AdamW(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], h)
}

// piece is entries [lo, hi) of tensor i of a list.
type piece struct{ i, lo, hi int }

// blockLen is the entries of a block of flatBlocks (a few µs of AdamW on
// one core).
const blockLen = 16384

// flatBlocks is a list of tensors' entries, taken in order as one
// concatenation, cut into blocks of blockLen entries (the last may be
// shorter): the unit of work of the loops over all parameters or all
// gradients (AdamW, the clip), so that their chunks hold equal numbers of
// entries whatever the tensors' sizes, and the blocks do not depend on the
// number of cores. Block b is the pieces at[b] to at[b+1] of all, in order.
type flatBlocks struct {
	all []piece
	at  []int
}

// cutBlocks returns the blocks of tensors of sizes[i] entries (0 for one
// that is absent).
func cutBlocks(sizes []int) flatBlocks {
	f := flatBlocks{at: []int{0}}
	fill := 0 // entries in the block being cut
	for i, n := range sizes {
		for lo := 0; lo < n; {
			hi := min(n, lo+blockLen-fill)
			f.all = append(f.all, piece{i, lo, hi})
			fill += hi - lo
			lo = hi
			if fill == blockLen {
				f.at = append(f.at, len(f.all))
				fill = 0
			}
		}
	}
	if fill > 0 {
		f.at = append(f.at, len(f.all))
	}
	return f
}

// len returns the number of blocks.
func (f flatBlocks) len() int { return len(f.at) - 1 }

// pieces returns the pieces of blocks [lo, hi), in order.
func (f flatBlocks) pieces(lo, hi int) []piece { return f.all[f.at[lo]:f.at[hi]] }

func describe(t *tensor.Dense) string {
	if t == nil {
		return "missing"
	}
	return fmt.Sprintf("%v%v", t.Dtype(), t.Shape())
}

// ClipGradNorm scales the gradients in place so that their global norm
// ‖g‖ = √(Σ_i Σ_j g_i[j]²) is at most maxNorm (g ← g·maxNorm/‖g‖ when
// ‖g‖ > maxNorm), and returns ‖g‖ before clipping. maxNorm ≤ 0 disables
// clipping, and so does a NaN maxNorm (Runner.TrainStep refuses one with an
// error). A non-finite norm is returned as is and the gradients are left
// untouched, so that the caller can skip the step.
func ClipGradNorm(grads []*tensor.Dense, maxNorm float64) float64 {
	// All gradients' entries in equal blocks (flatBlocks), each block's
	// squares summed on the cores (vec.Dot: products and sum in float64),
	// then the blocks' sums added in order: the same bits for any number of
	// cores.
	sizes := make([]int, len(grads))
	for i, g := range grads {
		if g != nil {
			sizes[i] = g.Shape().TotalSize()
		}
	}
	blocks := cutBlocks(sizes)
	pp := getPartials(blocks.len())
	defer putPartials(pp)
	part := *pp // every entry is written
	parallel.ForDynamic(blocks.len(), 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			ss := 0.0
			for _, pc := range blocks.pieces(b, b+1) {
				switch d := grads[pc.i].Data().(type) {
				case []float32:
					ss += vec.Dot(d[pc.lo:pc.hi], d[pc.lo:pc.hi])
				case []float64:
					ss += vec.Dot(d[pc.lo:pc.hi], d[pc.lo:pc.hi])
				}
			}
			part[b] = ss
		}
	})
	ss := 0.0
	for _, p := range part {
		ss += p
	}
	norm := math.Sqrt(ss)
	if !(maxNorm > 0) || !(norm > maxNorm) || math.IsInf(norm, 0) {
		return norm
	}
	scale := maxNorm / norm
	parallel.ForDynamic(blocks.len(), 1, func(lo, hi int) {
		for _, pc := range blocks.pieces(lo, hi) {
			switch d := grads[pc.i].Data().(type) {
			case []float32:
				vec.Scale(d[pc.lo:pc.hi], float32(scale))
			case []float64:
				vec.Scale(d[pc.lo:pc.hi], scale)
			}
		}
	})
	return norm
}

// CosineSchedule is a learning rate of linear warmup then cosine decay:
//
//	lr(s) = Peak·(s + 1)/Warmup                                  s < Warmup
//	lr(s) = Min + ½·(Peak − Min)·(1 + cos(π·(s − Warmup)/(Total − Warmup)))   Warmup ≤ s < Total
//	lr(s) = Min                                                  s ≥ Total
//
// for the 0-based step s.
type CosineSchedule struct {
	Peak, Min     float64
	Warmup, Total int
}

// Validate returns an error naming the first field outside its domain: Peak
// and Min must be finite and ≥ 0 (CheckLR), Warmup and Total ≥ 0. A valid
// schedule gives a valid learning rate at every step s ≥ 0.
func (c CosineSchedule) Validate() error {
	if err := CheckLR(c.Peak); err != nil {
		return fmt.Errorf("nn.CosineSchedule: Peak: %w", err)
	}
	if err := CheckLR(c.Min); err != nil {
		return fmt.Errorf("nn.CosineSchedule: Min: %w", err)
	}
	if c.Warmup < 0 || c.Total < 0 {
		return fmt.Errorf("nn.CosineSchedule: Warmup %d and Total %d must be ≥ 0", c.Warmup, c.Total)
	}
	return nil
}

// LR returns the learning rate of step s ≥ 0 (for a schedule that fails
// Validate it may be NaN or ±Inf, which TrainStep refuses).
func (c CosineSchedule) LR(s int) float64 {
	switch {
	case s < c.Warmup:
		return c.Peak * float64(s+1) / float64(c.Warmup)
	case s >= c.Total:
		return c.Min
	}
	frac := float64(s-c.Warmup) / float64(c.Total-c.Warmup)
	return c.Min + 0.5*(c.Peak-c.Min)*(1+math.Cos(math.Pi*frac))
}
