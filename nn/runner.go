package nn

import (
	"fmt"
	"math"
	"math/rand"
	"sync"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/machine"
)

// Mode selects what a Runner's graph computes.
type Mode int

const (
	// Train: logits, loss and the gradient of every parameter; dropout on.
	Train Mode = iota
	// Eval: logits and loss; no gradient, no dropout.
	Eval
	// Infer: logits only.
	Infer
)

func (m Mode) String() string {
	switch m {
	case Train:
		return "train"
	case Eval:
		return "eval"
	case Infer:
		return "infer"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// IgnoreIndex is the target value that Runner's loss skips (padding).
const IgnoreIndex = -1

// Runner is one compiled graph of a GPT for a fixed batch and sequence
// length. The graph and its machine (package machine: buffers planned once,
// so a run allocates no tensor) are built once; each Run binds a new batch of
// tokens (and targets) to the graph's input nodes and re-runs the same
// program. Several runners (say, training and evaluation) can share a
// model: they bind the same parameter tensors.
//
// Concurrency: runners of one model may run on different goroutines. A run
// holds the model's parameter lock for reading and an optimizer step
// (AdamW.Step, the step of TrainStep) or Checkpoint.Restore holds it for
// writing, so an evaluation running beside training sees the parameters
// after a whole number of steps, never a half-written update (runs wait for
// a step in progress and a step waits for the runs in progress). One runner
// used from several goroutines serializes its calls: each Run, TrainStep and
// Generate owns the runner's graph until it returns; the tensors that Grads,
// LogitsData and LogitsRow expose are overwritten by the next call.
type Runner struct {
	Model      *GPT
	Mode       Mode
	Batch, Seq int
	Scope      *Scope
	Tokens     *gorgonia.Node // [Batch·Seq] ints
	Positions  *gorgonia.Node // [Batch·Seq] ints: t for row b·Seq + t
	Logits     *gorgonia.Node // [Batch·Seq, V]
	Loss       *CrossEntropy  // nil in Infer mode

	params     []*Param // the model's parameters (Train mode)
	bound      []*Param // the parameters the graph reads
	grads      []*gorgonia.Node
	vm         *machine.Machine
	be         machine.Backend  // vm's backend, which the runner opened and closes
	paramNodes []*gorgonia.Node // the input nodes of params (Train mode)
	dev        *deviceStep      // AdamW on the machine's device (Train mode), or nil
	devOpt     *AdamW           // the optimizer devErr refers to
	devErr     error            // why devOpt steps on the host
	mu         sync.Mutex       // one call at a time owns the graph
}

// NewRunner builds and compiles the graph of m for batch sequences of length
// seq (1 ≤ seq ≤ Context).
func (m *GPT) NewRunner(batch, seq int, mode Mode) (*Runner, error) {
	if m == nil || m.TokEmb == nil || m.PosEmb == nil || m.NormF == nil || m.Head == nil {
		return nil, fmt.Errorf("nn.NewRunner: the model is nil or was not made by NewGPT")
	}
	if mode != Train && mode != Eval && mode != Infer {
		return nil, fmt.Errorf("nn.NewRunner: unknown mode %v", mode)
	}
	if batch <= 0 || seq <= 0 || seq > m.Config.Context {
		return nil, fmt.Errorf("nn.NewRunner: batch %d and sequence length %d: want batch > 0 and 0 < length ≤ context %d", batch, seq, m.Config.Context)
	}
	// The widest activation is [batch·seq, max(V, r·D, (H+2·Hkv)·d)].
	cfg := m.Config
	widest := max(cfg.Vocab, cfg.MLPRatio*cfg.Width, (cfg.Heads+2*cfg.kvHeads())*(cfg.Width/cfg.Heads))
	if n, ok := mulChecked(batch, seq, widest); !ok || n > maxElements {
		return nil, fmt.Errorf("nn.NewRunner: batch %d × sequence length %d × width %d: activations of more than %d elements", batch, seq, widest, maxElements)
	}
	// The backend is opened first: the scope builds fused ops (the loss,
	// linear layers with their bias) where the backend runs them
	// (machine.Native), their decompositions elsewhere.
	be, err := machine.Open("")
	if err != nil {
		return nil, fmt.Errorf("nn.NewRunner: %w", err)
	}
	made := false
	defer func() {
		if !made {
			be.Close()
		}
	}()
	g := gorgonia.NewGraph()
	s := NewScope(g, m.Dtype, mode == Train)
	s.native = func(kind string) bool { return machine.Native(be, kind) }
	r := &Runner{Model: m, Mode: mode, Batch: batch, Seq: seq, Scope: s, be: be}
	if r.Tokens, err = IndexInput(g, "tokens", batch*seq); err != nil {
		return nil, err
	}
	if r.Positions, err = IndexInput(g, "positions", batch*seq); err != nil {
		return nil, err
	}
	pos := make([]int, batch*seq)
	for i := range pos {
		pos[i] = i % seq
	}
	if err := SetIndices(r.Positions, pos); err != nil {
		return nil, err
	}
	if r.Logits, err = m.Forward(s, r.Tokens, r.Positions, batch, seq); err != nil {
		return nil, err
	}
	if mode != Infer {
		newLoss := NewCrossEntropy
		if s.fuses(xentOp{}) {
			newLoss = NewFusedCrossEntropy
		}
		if r.Loss, err = newLoss(r.Logits, IgnoreIndex); err != nil {
			return nil, err
		}
	}
	if mode == Train {
		r.params = m.Params()
		wrt := make([]*gorgonia.Node, len(r.params))
		for i, p := range r.params {
			wrt[i] = s.Node(p)
		}
		if r.grads, err = gorgonia.Grad(r.Loss.Loss, wrt...); err != nil {
			return nil, fmt.Errorf("nn.NewRunner: differentiating the loss: %w", err)
		}
	}
	r.bound, _ = s.Params()
	keep := append([]*gorgonia.Node{r.Logits}, r.grads...)
	if r.Loss != nil {
		keep = append(keep, r.Loss.Loss)
	}
	// On a device backend the positions, which never change, are uploaded
	// once; in Train mode so are the parameters, which an optimizer step
	// there (deviceStep) updates in place.
	resident := []*gorgonia.Node{r.Positions}
	if mode == Train {
		for _, p := range r.params {
			r.paramNodes = append(r.paramNodes, s.Node(p))
		}
	}
	resident = append(resident, r.paramNodes...)
	if r.vm, err = machine.New(g, machine.Keep(keep...), machine.Resident(resident...), machine.WithBackend(be)); err != nil {
		return nil, fmt.Errorf("nn.NewRunner: %w", err)
	}
	made = true
	return r, nil
}

// check refuses a nil runner or one not made by NewRunner.
func (r *Runner) check(what string) error {
	if r == nil || r.vm == nil || r.Model == nil {
		return fmt.Errorf("%s: the runner is nil or was not made by GPT.NewRunner", what)
	}
	return nil
}

// Close releases the runner's machine.
func (r *Runner) Close() error {
	if err := r.check("nn.Runner.Close"); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dev != nil {
		err := r.dev.syncLocked()
		r.dev.close()
		r.dev = nil
		if err != nil {
			r.vm.Close()
			r.be.Close()
			return fmt.Errorf("nn.Runner.Close: %w", err)
		}
	}
	err := r.vm.Close()
	if e := r.be.Close(); err == nil {
		err = e
	}
	return err
}

// Run feeds tokens (and, outside Infer mode, targets; IgnoreIndex skips a
// position) of Batch·Seq entries each, row b·Seq + t, and runs the graph
// once. In Train mode the dropout masks are drawn from rng first (rng may be
// nil when the model has no dropout). It returns the loss (0 in Infer mode).
func (r *Runner) Run(tokens, targets []int, rng *rand.Rand) (float64, error) {
	if err := r.check("nn.Runner.Run"); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.run(tokens, targets, rng)
}

// run is Run with r.mu held.
func (r *Runner) run(tokens, targets []int, rng *rand.Rand) (float64, error) {
	if err := r.exec(tokens, targets, rng); err != nil {
		return 0, err
	}
	return r.loss()
}

// exec binds the batch and runs the graph, r.mu held.
func (r *Runner) exec(tokens, targets []int, rng *rand.Rand) error {
	if err := r.bind(tokens, targets, rng); err != nil {
		return err
	}
	unlock := readLock(r.bound)
	r.vm.Reset()
	err := r.vm.RunAll()
	unlock()
	if err != nil {
		return fmt.Errorf("nn.Runner.Run: %w", err)
	}
	return nil
}

// bind binds the batch (and the dropout masks) to the graph's inputs and
// brings the parameters the graph reads up to date, r.mu held.
func (r *Runner) bind(tokens, targets []int, rng *rand.Rand) error {
	if err := SetIndices(r.Tokens, tokens); err != nil {
		return fmt.Errorf("nn.Runner.Run: tokens: %w", err)
	}
	for i, t := range tokens {
		if t < 0 || t >= r.Model.Config.Vocab {
			return fmt.Errorf("nn.Runner.Run: token %d at position %d is outside the vocabulary [0, %d)", t, i, r.Model.Config.Vocab)
		}
	}
	if r.Loss != nil {
		if _, err := r.Loss.SetTargets(targets); err != nil {
			return fmt.Errorf("nn.Runner.Run: %w", err)
		}
	}
	if len(r.Scope.masks) > 0 {
		if rng == nil {
			return fmt.Errorf("nn.Runner.Run: the model has dropout %g; a random source is needed in Train mode", r.Model.Config.Dropout)
		}
		if err := r.Scope.ResampleDropout(rng); err != nil {
			return err
		}
	}
	if err := syncParams(r.bound, r.dev); err != nil {
		return fmt.Errorf("nn.Runner.Run: %w", err)
	}
	switch {
	case r.dev != nil:
		if err := r.dev.upload(); err != nil {
			return fmt.Errorf("nn.Runner.Run: %w", err)
		}
	case len(r.paramNodes) > 0:
		r.vm.Reload(r.paramNodes...) // the parameters' bound values are the current ones
	}
	return nil
}

// loss reads the loss of the last run (0 in Infer mode), r.mu held.
func (r *Runner) loss() (float64, error) {
	if r.Loss == nil {
		return 0, nil
	}
	v, err := r.vm.Value(r.Loss.Loss)
	if err != nil {
		return 0, fmt.Errorf("nn.Runner.Run: %w", err)
	}
	return scalarOf(v)
}

func scalarOf(v gorgonia.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return math.NaN(), fmt.Errorf("nn: loss value %v (%T) is not a float scalar", v, v.Data())
}

// Params returns the model's parameters in the order of Grads (nil outside
// Train mode).
func (r *Runner) Params() []*Param {
	if r == nil {
		return nil
	}
	return r.params
}

// Grads returns ∂loss/∂p for each parameter of Params, as computed by the
// last Run (Train mode only). The tensors belong to the graph and are
// overwritten by the next Run; an optimizer may use (and clipping scale)
// them in place.
func (r *Runner) Grads() ([]*tensor.Dense, error) {
	if err := r.check("nn.Runner.Grads"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gradients()
}

// gradients is Grads with r.mu held.
func (r *Runner) gradients() ([]*tensor.Dense, error) {
	if r.Mode != Train {
		return nil, fmt.Errorf("nn.Runner.Grads: a %v runner computes no gradient", r.Mode)
	}
	out := make([]*tensor.Dense, len(r.grads))
	seen := map[*tensor.Dense]bool{}
	for i, g := range r.grads {
		v, err := r.vm.Value(g)
		if err != nil {
			return nil, fmt.Errorf("nn.Runner.Grads: gradient of %s: %w", r.params[i].Name, err)
		}
		d, ok := v.(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("nn.Runner.Grads: gradient of %s is %T, want a dense tensor", r.params[i].Name, v)
		}
		if d.IsMaterializable() {
			d = d.Materialize().(*tensor.Dense)
		}
		// Gorgonia merges identical nodes, so two parameters could share
		// one gradient tensor; give each its own, since clipping and the
		// optimizer may scale them in place.
		if seen[d] {
			d = d.Clone().(*tensor.Dense)
		}
		seen[d] = true
		out[i] = d
	}
	return out, nil
}

// LogitsRow returns a float64 copy of the logits of row b·Seq + t after the
// last Run.
func (r *Runner) LogitsRow(b, t int) ([]float64, error) {
	if err := r.check("nn.Runner.LogitsRow"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logitsRow(b, t)
}

// logitsRow is LogitsRow with r.mu held.
func (r *Runner) logitsRow(b, t int) ([]float64, error) {
	if b < 0 || b >= r.Batch || t < 0 || t >= r.Seq {
		return nil, fmt.Errorf("nn.Runner.LogitsRow: (%d, %d) outside batch %d × sequence %d", b, t, r.Batch, r.Seq)
	}
	lv, err := r.vm.Value(r.Logits)
	if err != nil {
		return nil, fmt.Errorf("nn.Runner.LogitsRow: no logits yet: %w", err)
	}
	v, ok := lv.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("nn.Runner.LogitsRow: logits are a %T", lv)
	}
	V := r.Model.Config.Vocab
	row := (b*r.Seq + t) * V
	out := make([]float64, V)
	switch d := v.Data().(type) {
	case []float32:
		for i := range out {
			out[i] = float64(d[row+i])
		}
	case []float64:
		copy(out, d[row:row+V])
	}
	return out, nil
}

// LogitsData returns the logits of the last Run, [Batch·Seq, V] row-major,
// as the model's element type ([]float32 or []float64), without copying;
// nil before the first run.
func (r *Runner) LogitsData() any {
	if r.check("") != nil || r.Logits == nil {
		return nil
	}
	v, err := r.vm.Value(r.Logits)
	if err != nil {
		return nil
	}
	return v.Data()
}

// TrainStep does one optimization step: Run on (tokens, targets), clip the
// gradients to global norm clip (≤ 0: no clipping), then opt.Step with
// learning rate lr. It returns the loss and the gradient norm before
// clipping. The learning rate must pass CheckLR, the optimizer's
// hyperparameters CheckAdamW, and clip must not be NaN or ±Inf; otherwise
// TrainStep returns an error naming the value before running anything. A
// non-finite loss or gradient norm is an error and leaves the parameters
// untouched. opt must have been made over r.Params().
func (r *Runner) TrainStep(opt *AdamW, lr, clip float64, tokens, targets []int, rng *rand.Rand) (loss, gradNorm float64, err error) {
	if err := r.check("nn.Runner.TrainStep"); err != nil {
		return 0, 0, err
	}
	if r.Mode != Train {
		return 0, 0, fmt.Errorf("nn.Runner.TrainStep: the runner is in %v mode", r.Mode)
	}
	if opt == nil || (len(opt.params) > 0 && opt.m == nil) {
		return 0, 0, fmt.Errorf("nn.Runner.TrainStep: the optimizer is nil or was not made by NewAdamW")
	}
	if err := CheckLR(lr); err != nil {
		return 0, 0, fmt.Errorf("nn.Runner.TrainStep: %w; no parameter changed", err)
	}
	if math.IsNaN(clip) || math.IsInf(clip, 0) {
		return 0, 0, fmt.Errorf("nn.Runner.TrainStep: clip norm %g must be finite (≤ 0 disables clipping); no parameter changed", clip)
	}
	if err := CheckAdamW(opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay); err != nil {
		return 0, 0, fmt.Errorf("nn.Runner.TrainStep: optimizer %w; no parameter changed", err)
	}
	if len(opt.params) != len(r.params) {
		return 0, 0, fmt.Errorf("nn.Runner.TrainStep: the optimizer holds %d parameters, the model %d", len(opt.params), len(r.params))
	}
	for i, p := range opt.params {
		if p != r.params[i] {
			return 0, 0, fmt.Errorf("nn.Runner.TrainStep: optimizer parameter %d is %s, the model's is %s", i, p.Name, r.params[i].Name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ds := r.deviceStepFor(opt); ds != nil {
		return ds.step(lr, clip, func() error { return r.bind(tokens, targets, rng) })
	}
	if loss, err = r.run(tokens, targets, rng); err != nil {
		return 0, 0, err
	}
	grads, err := r.gradients()
	if err != nil {
		return loss, 0, err
	}
	gradNorm = ClipGradNorm(grads, clip)
	if math.IsNaN(loss) || math.IsInf(loss, 0) || math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return loss, gradNorm, fmt.Errorf("nn.Runner.TrainStep: loss %g, gradient norm %g: not finite, step skipped", loss, gradNorm)
	}
	// A finite norm means every gradient entry is finite: step unchecked.
	if err := opt.checkStep(grads, lr); err != nil {
		return loss, gradNorm, err
	}
	opt.step(grads, lr)
	return loss, gradNorm, nil
}
