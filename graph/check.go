package graph

import (
	"fmt"
	"math"
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Builder builds, in g, the expression under test from the given input
// nodes (one per tensor passed to CheckGradient, in order) and returns its
// output node.
type Builder func(g *gorgonia.ExprGraph, inputs []*gorgonia.Node) (*gorgonia.Node, error)

// CheckOptions tunes CheckGradient. The zero value gives the project's
// defaults.
type CheckOptions struct {
	// Eps is the central-difference step (default 1e-6).
	Eps float64
	// Atol and Rtol bound the accepted error of each compared entry:
	// |analytic − numeric| ≤ Atol + Rtol·|numeric| (defaults 1e-5 and 1e-3).
	Atol, Rtol float64
	// FullJacobianLimit: when (elements of the checked inputs) × (elements of
	// the output) is at most this, the whole Jacobian is compared entry by
	// entry; above it, random projections vᵀJu are compared (default 4096).
	FullJacobianLimit int
	// Projections is the number of random projections (default 8).
	Projections int
	// Seed seeds the random projections.
	Seed int64
	// Wrt lists the indices of the inputs to check (default all).
	Wrt []int
}

func (o *CheckOptions) setDefaults() {
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if o.Atol == 0 {
		o.Atol = 1e-5
	}
	if o.Rtol == 0 {
		o.Rtol = 1e-3
	}
	if o.FullJacobianLimit == 0 {
		o.FullJacobianLimit = 4096
	}
	if o.Projections == 0 {
		o.Projections = 8
	}
}

// CheckReport says how the analytic gradient compared with the numeric one.
type CheckReport struct {
	// OK is true when every compared entry is within Atol + Rtol·|numeric|.
	OK bool
	// MaxAbsErr is the largest |analytic − numeric| seen; MaxRelErr the
	// largest |analytic − numeric| / |numeric| (entries with numeric = 0
	// count only towards MaxAbsErr).
	MaxAbsErr, MaxRelErr float64
	// Where names the entry that came closest to (or furthest past) its
	// tolerance, with both values.
	Where string
	// Checked is the number of entries (or projections) compared.
	Checked int
	// FullJacobian tells whether the whole Jacobian was compared.
	FullJacobian bool
}

// String gives a one-line summary of the report.
func (r CheckReport) String() string {
	mode := "projections"
	if r.FullJacobian {
		mode = "Jacobian entries"
	}
	status := "ok"
	if !r.OK {
		status = "FAILED"
	}
	return fmt.Sprintf("gradient check %s: %d %s, max abs err %.3g, max rel err %.3g; worst at %s",
		status, r.Checked, mode, r.MaxAbsErr, r.MaxRelErr, r.Where)
}

// CheckGradient compares the gradient that Gorgonia's symbolic
// differentiation gives for the expression built by build with central
// differences, in float64.
//
// With f the expression and x the concatenated checked inputs, the full
// Jacobian check compares, for every output entry i and input entry j,
//
//	analytic J[i][j] = ∂(Σ_k w_k f_k)/∂x_j with w = e_i   (one backward pass per output entry)
//	numeric  J[i][j] = (f_i(x + eps·e_j) − f_i(x − eps·e_j)) / (2·eps)
//
// and the projection check compares, for random normal u (inputs) and v
// (output), analytic (Jᵀv)·u with numeric v·(f(x + eps·u) − f(x − eps·u)) / (2·eps).
//
// inputs must be float64 tensors; they are restored to their values before
// return. An error is returned when the expression cannot be built, run or
// differentiated; a gradient that is merely wrong is reported, not an error.
func CheckGradient(build Builder, inputs []*tensor.Dense, opts CheckOptions) (CheckReport, error) {
	opts.setDefaults()
	if build == nil {
		return CheckReport{}, fmt.Errorf("graph.CheckGradient: nil builder")
	}
	for i, t := range inputs {
		if t == nil {
			return CheckReport{}, fmt.Errorf("graph.CheckGradient: input %d is nil", i)
		}
		if t.Dtype() != tensor.Float64 {
			return CheckReport{}, fmt.Errorf("graph.CheckGradient: input %d (shape %v) has dtype %v; gradient checks run in float64",
				i, t.Shape(), t.Dtype())
		}
		if Empty(t.Shape()) {
			return CheckReport{}, fmt.Errorf("graph.CheckGradient: input %d has shape %v, which has no elements: there is no gradient to check (and Gorgonia v0.9.18 cannot run a tensor with no elements)",
				i, t.Shape())
		}
	}
	wrt := opts.Wrt
	if wrt == nil {
		for i := range inputs {
			wrt = append(wrt, i)
		}
	}
	seen := make(map[int]bool, len(wrt))
	for _, i := range wrt {
		if i < 0 || i >= len(inputs) {
			return CheckReport{}, fmt.Errorf("graph.CheckGradient: Wrt names input %d of %d", i, len(inputs))
		}
		if seen[i] {
			return CheckReport{}, fmt.Errorf("graph.CheckGradient: Wrt names input %d twice", i)
		}
		seen[i] = true
	}
	if len(wrt) == 0 {
		return CheckReport{}, fmt.Errorf("graph.CheckGradient: no input to check (%d inputs, Wrt %v)", len(inputs), opts.Wrt)
	}

	h, err := newHarness(build, inputs, wrt)
	if err != nil {
		return CheckReport{}, err
	}
	defer h.close()

	nIn := 0
	for _, i := range wrt {
		nIn += len(h.data[i])
	}
	nOut := h.outLen
	rep := &reportBuilder{opts: opts, worstRatio: -1}
	if nIn*nOut <= opts.FullJacobianLimit {
		rep.full = true
		err = h.fullJacobian(opts, rep)
	} else {
		err = h.projections(opts, rep)
	}
	return rep.report(), err
}

// harness owns the graph built once for a check: the inputs, the output, the
// weight node w that turns the output into the scalar Σ w∘f, and a machine
// that runs forward and backward.
type harness struct {
	inputs   []*tensor.Dense
	data     [][]float64 // backing slices of inputs
	pristine [][]float64 // the inputs' values at the start
	wrt      []int
	nodes    []*gorgonia.Node
	out      *gorgonia.Node
	outLen   int
	wNode    *gorgonia.Node
	wdata    []float64
	m        gorgonia.VM
}

func newHarness(build Builder, inputs []*tensor.Dense, wrt []int) (*harness, error) {
	h := &harness{inputs: inputs, wrt: wrt}
	g := gorgonia.NewGraph()
	for i, t := range inputs {
		if t.IsMaterializable() {
			return nil, fmt.Errorf("graph.CheckGradient: input %d is a view; pass a contiguous tensor", i)
		}
		d := t.Data()
		var data []float64
		switch d := d.(type) {
		case []float64:
			data = d
		case float64:
			// A scalar: perturbed in this slice of our own, bound as *F64.
			data = []float64{d}
		}
		h.data = append(h.data, data)
		h.pristine = append(h.pristine, append([]float64(nil), data...))
		h.nodes = append(h.nodes, Input(g, fmt.Sprintf("input%d", i), t))
	}
	out, err := build(g, h.nodes)
	if err != nil {
		return nil, fmt.Errorf("graph.CheckGradient: building the expression: %w", err)
	}
	if out == nil {
		return nil, fmt.Errorf("graph.CheckGradient: the builder returned a nil node")
	}
	if dt, ok := NodeDtype(out); !ok || dt != tensor.Float64 {
		return nil, fmt.Errorf("graph.CheckGradient: output %s (shape %v) has type %v, want float64", out.Name(), out.Shape(), out.Type())
	}
	if Empty(out.Shape()) {
		return nil, fmt.Errorf("graph.CheckGradient: output %s has shape %v, which has no elements: there is no gradient to check (and Gorgonia v0.9.18 cannot run a tensor with no elements)",
			out.Name(), out.Shape())
	}
	h.out = out
	h.outLen = out.Shape().TotalSize()
	if out.IsScalar() {
		h.outLen = 1
	}

	// loss = Σ_k w_k·f_k: its gradient with respect to the inputs is Jᵀw.
	var loss, wNode *gorgonia.Node
	if out.IsScalar() {
		h.wdata = []float64{0}
		wNode = gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("checkWeight"), gorgonia.WithValue(gorgonia.NewF64(0)))
		if loss, err = gorgonia.Mul(out, wNode); err != nil {
			return nil, fmt.Errorf("graph.CheckGradient: %w", err)
		}
	} else {
		h.wdata = make([]float64, h.outLen)
		wNode = Input(g, "checkWeight", NewTensor(out.Shape().Clone(), h.wdata))
		prod, err := gorgonia.HadamardProd(out, wNode)
		if err != nil {
			return nil, fmt.Errorf("graph.CheckGradient: weighting output of shape %v: %w", out.Shape(), err)
		}
		if loss, err = gorgonia.Sum(prod); err != nil {
			return nil, fmt.Errorf("graph.CheckGradient: %w", err)
		}
	}
	h.wNode = wNode
	var wrtNodes []*gorgonia.Node
	for _, i := range wrt {
		wrtNodes = append(wrtNodes, h.nodes[i])
	}
	if _, err := gorgonia.Grad(loss, wrtNodes...); err != nil {
		return nil, fmt.Errorf("graph.CheckGradient: differentiating: %w", err)
	}
	if err := Runnable(g, "graph.CheckGradient"); err != nil {
		return nil, err
	}
	h.m = gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(wrtNodes...))
	return h, nil
}

func (h *harness) close() {
	h.restore()
	h.m.Close()
}

// restore puts every input back to its starting value.
func (h *harness) restore() {
	for i, d := range h.data {
		copy(d, h.pristine[i])
	}
}

// run executes the graph once with the current input and weight values and
// returns a copy of the output.
func (h *harness) run() ([]float64, error) {
	for i, t := range h.inputs {
		if t.IsScalar() {
			if err := gorgonia.Let(h.nodes[i], gorgonia.NewF64(h.data[i][0])); err != nil {
				return nil, err
			}
			continue
		}
		if err := gorgonia.Let(h.nodes[i], t); err != nil {
			return nil, err
		}
	}
	if h.out.IsScalar() {
		if err := gorgonia.Let(h.wNode, gorgonia.NewF64(h.wdata[0])); err != nil {
			return nil, err
		}
	}
	// A TapeMachine adds each run's gradient into the bound dual values:
	// start every run from zero.
	for _, i := range h.wrt {
		if d, err := h.nodes[i].Grad(); err == nil {
			switch z := d.(type) {
			case tensor.Tensor:
				z.Zero()
			case *gorgonia.F64:
				*z = 0
			}
		}
	}
	h.m.Reset()
	if err := h.m.RunAll(); err != nil {
		return nil, fmt.Errorf("graph.CheckGradient: running the graph: %w", err)
	}
	return Values[float64](h.out)
}

// gradient returns Jᵀw for the current weights, one slice per checked input.
func (h *harness) gradient() ([][]float64, error) {
	h.restore()
	if _, err := h.run(); err != nil {
		return nil, err
	}
	var gs [][]float64
	for _, i := range h.wrt {
		g, err := Grads[float64](h.nodes[i])
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// fullJacobian compares every entry of the Jacobian.
func (h *harness) fullJacobian(opts CheckOptions, rep *reportBuilder) error {
	// Analytic rows: one backward pass per output entry.
	analytic := make([][][]float64, h.outLen) // [out][wrt input][elem]
	for o := 0; o < h.outLen; o++ {
		for k := range h.wdata {
			h.wdata[k] = 0
		}
		h.wdata[o] = 1
		gs, err := h.gradient()
		if err != nil {
			return err
		}
		analytic[o] = gs
	}
	// Numeric columns: two forward passes per input entry.
	for wi, in := range h.wrt {
		for j := range h.data[in] {
			h.restore()
			x0 := h.pristine[in][j]
			h.data[in][j] = x0 + opts.Eps
			fp, err := h.run()
			if err != nil {
				return err
			}
			h.data[in][j] = x0 - opts.Eps
			fm, err := h.run()
			if err != nil {
				return err
			}
			for o := 0; o < h.outLen; o++ {
				num := (fp[o] - fm[o]) / (2 * opts.Eps)
				rep.add(analytic[o][wi][j], num, func() string {
					return fmt.Sprintf("∂out[%v]/∂input%d[%v]", unravel(h.out.Shape(), o), in, unravel(h.inputs[in].Shape(), j))
				})
			}
		}
	}
	h.restore()
	return nil
}

// projections compares vᵀJu for random normal u and v.
func (h *harness) projections(opts CheckOptions, rep *reportBuilder) error {
	rng := rand.New(rand.NewSource(opts.Seed))
	for p := 0; p < opts.Projections; p++ {
		for k := range h.wdata {
			h.wdata[k] = rng.NormFloat64()
		}
		u := make([][]float64, len(h.wrt))
		for wi, in := range h.wrt {
			u[wi] = make([]float64, len(h.data[in]))
			for k := range u[wi] {
				u[wi][k] = rng.NormFloat64()
			}
		}
		gs, err := h.gradient()
		if err != nil {
			return err
		}
		analytic := 0.0
		for wi := range h.wrt {
			for k, g := range gs[wi] {
				analytic += g * u[wi][k]
			}
		}
		shift := func(sign float64) ([]float64, error) {
			h.restore()
			for wi, in := range h.wrt {
				for k := range h.data[in] {
					h.data[in][k] += sign * opts.Eps * u[wi][k]
				}
			}
			return h.run()
		}
		fp, err := shift(+1)
		if err != nil {
			return err
		}
		fm, err := shift(-1)
		if err != nil {
			return err
		}
		num := 0.0
		for o := range fp {
			num += h.wdata[o] * (fp[o] - fm[o]) / (2 * opts.Eps)
		}
		p := p
		rep.add(analytic, num, func() string { return fmt.Sprintf("projection %d (vᵀJu)", p) })
	}
	h.restore()
	return nil
}

// reportBuilder accumulates the comparison of analytic and numeric values.
type reportBuilder struct {
	opts       CheckOptions
	full       bool
	n          int
	failed     bool
	maxAbs     float64
	maxRel     float64
	worstRatio float64
	where      string
}

func (r *reportBuilder) add(analytic, numeric float64, where func() string) {
	r.n++
	diff := math.Abs(analytic - numeric)
	tol := r.opts.Atol + r.opts.Rtol*math.Abs(numeric)
	ratio := diff / tol
	bad := !(diff <= tol) // NaN fails too
	if math.IsNaN(diff) {
		ratio = math.Inf(1)
	}
	if bad {
		r.failed = true
	}
	if diff > r.maxAbs || math.IsNaN(diff) {
		r.maxAbs = diff
	}
	if numeric != 0 {
		if rel := diff / math.Abs(numeric); rel > r.maxRel || math.IsNaN(rel) {
			r.maxRel = rel
		}
	}
	if ratio > r.worstRatio {
		r.worstRatio = ratio
		r.where = fmt.Sprintf("%s: analytic %.10g, numeric %.10g", where(), analytic, numeric)
	}
}

func (r *reportBuilder) report() CheckReport {
	return CheckReport{OK: !r.failed && r.n > 0, MaxAbsErr: r.maxAbs, MaxRelErr: r.maxRel,
		Where: r.where, Checked: r.n, FullJacobian: r.full}
}

// unravel turns a flat row-major index into coordinates of shape s.
func unravel(s tensor.Shape, flat int) []int {
	if s.IsScalar() || len(s) == 0 {
		return nil
	}
	idx := make([]int, len(s))
	for i := len(s) - 1; i >= 0; i-- {
		idx[i] = flat % s[i]
		flat /= s[i]
	}
	return idx
}
