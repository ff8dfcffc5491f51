package nn

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Param is one trainable tensor of a model. Its Value is shared by every
// graph built from the model (each graph binds a node to it), so an optimizer
// step on Value is seen by all of them at their next run.
type Param struct {
	// Name is the parameter's checkpoint name, e.g. "blocks.0.attn.qkv.weight".
	Name string
	// Value holds the parameter (float32 or float64).
	Value *tensor.Dense
	// Decay tells whether AdamW applies weight decay to it (matrices and
	// embeddings do; biases and normalization gains do not).
	Decay bool

	// lock guards Value (and the optimizer moments of this parameter): the
	// parameters of one GPT share one lock. Nil for a Param built outside
	// nn's constructors, whose callers synchronize themselves.
	lock *paramLock
	// dev is the device step training this parameter, whose values may be
	// newer than Value (see deviceStep); nil when it is trained on the host.
	dev atomic.Pointer[deviceStep]
}

// Size returns the number of elements of p.
func (p *Param) Size() int { return p.Value.Shape().TotalSize() }

// newParam allocates a zeroed parameter with a lock of its own.
func newParam(name string, dt tensor.Dtype, decay bool, shape ...int) *Param {
	return &Param{Name: name, Value: newDense(dt, shape...), Decay: decay, lock: newParamLock()}
}

// paramLock guards the values of a set of parameters. Whatever reads
// parameter values (a Runner's run, SaveCheckpoint, CheckFinite) holds it for
// reading; whatever writes them (AdamW.Step, Checkpoint.Restore) holds it for
// writing. So a training runner and an evaluation runner of one model may run
// on different goroutines: each run sees the parameters of a whole number of
// optimizer steps, never half an update.
type paramLock struct {
	sync.RWMutex
	id uint64 // locks are taken in ascending id, so two calls never wait on each other crosswise
}

var paramLockSerial atomic.Uint64

func newParamLock() *paramLock { return &paramLock{id: paramLockSerial.Add(1)} }

// shareLock makes ps share one new lock (the parameters of one model).
func shareLock(ps []*Param) {
	l := newParamLock()
	for _, p := range ps {
		p.lock = l
	}
}

// paramLocks returns the distinct locks of ps in ascending id.
func paramLocks(ps []*Param) []*paramLock {
	var ls []*paramLock
	seen := map[*paramLock]bool{}
	for _, p := range ps {
		if p != nil && p.lock != nil && !seen[p.lock] {
			seen[p.lock] = true
			ls = append(ls, p.lock)
		}
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].id < ls[j].id })
	return ls
}

// readLock takes the locks of ps for reading and returns their release.
// Callers never take a second parameter lock while holding one: a waiting
// writer would block the second read for ever.
func readLock(ps []*Param) (unlock func()) {
	ls := paramLocks(ps)
	for _, l := range ls {
		l.RLock()
	}
	return func() {
		for i := len(ls) - 1; i >= 0; i-- {
			ls[i].RUnlock()
		}
	}
}

// writeLock takes the locks of ps for writing and returns their release.
func writeLock(ps []*Param) (unlock func()) {
	ls := paramLocks(ps)
	for _, l := range ls {
		l.Lock()
	}
	return func() {
		for i := len(ls) - 1; i >= 0; i-- {
			ls[i].Unlock()
		}
	}
}

// CheckFinite returns an error naming the first parameter (and the index of
// its first entry) that holds NaN or ±Inf, or nil when every entry of every
// parameter is finite. Save a model only when it returns nil (SaveCheckpoint
// checks it itself).
func CheckFinite(params []*Param) error {
	if err := checkParamList("nn.CheckFinite", params); err != nil {
		return err
	}
	defer readLock(params)()
	for _, p := range params {
		if err := checkFiniteTensor("parameter "+quote(p.Name), p.Value); err != nil {
			return fmt.Errorf("nn.CheckFinite: %w", err)
		}
	}
	return nil
}

// checkParamList refuses nil parameters, parameters without a value and
// repeated names.
func checkParamList(what string, params []*Param) error {
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		if p == nil || p.Value == nil {
			return fmt.Errorf("%s: parameter %d is nil or has no value", what, i)
		}
		if seen[p.Name] {
			return fmt.Errorf("%s: parameter name %q appears twice", what, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// firstNonFinite returns the index and value of the first NaN or ±Inf entry
// of t, or -1.
func firstNonFinite(t *tensor.Dense) (int, float64) {
	switch d := t.Data().(type) {
	case []float32:
		for i, v := range d {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return i, f
			}
		}
	case []float64:
		for i, v := range d {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return i, v
			}
		}
	}
	return -1, 0
}

// checkFiniteTensor returns an error naming what, the index and the value of
// the first non-finite entry of t.
func checkFiniteTensor(what string, t *tensor.Dense) error {
	if i, v := firstNonFinite(t); i >= 0 {
		return &NonFiniteError{What: what, Shape: t.Shape().Clone(), Index: i, Value: v}
	}
	return nil
}

// NonFiniteError reports the first NaN or ±Inf element of a tensor: CheckFinite, SaveCheckpoint
// and Checkpoint.Restore return it (wrapped), so callers can tell a diverged state
// (errors.As) from an I/O failure.
type NonFiniteError struct {
	What  string // the tensor, e.g. `parameter "h0.attn.qkv.weight"` or `tensor "optim.v.tok_emb.weight"`
	Shape tensor.Shape
	Index int // flat index of the first bad element
	Value float64
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("%s %v holds %g at flat index %d", e.What, e.Shape, e.Value, e.Index)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// fillNormal sets every entry of p to a draw from N(0, std²).
func (p *Param) fillNormal(rng *rand.Rand, std float64) {
	switch d := p.Value.Data().(type) {
	case []float32:
		for i := range d {
			d[i] = float32(rng.NormFloat64() * std)
		}
	case []float64:
		for i := range d {
			d[i] = rng.NormFloat64() * std
		}
	}
}

// fillConst sets every entry of p to c.
func (p *Param) fillConst(c float64) {
	switch d := p.Value.Data().(type) {
	case []float32:
		for i := range d {
			d[i] = float32(c)
		}
	case []float64:
		for i := range d {
			d[i] = c
		}
	}
}

// CountParams returns Σ_p size(p), the number of trainable scalars.
func CountParams(ps []*Param) int {
	n := 0
	for _, p := range ps {
		n += p.Size()
	}
	return n
}

// Scope is one expression graph under construction from a model's
// parameters. It holds the node bound to each parameter in this graph and
// the dropout masks that the graph reads as inputs (refilled before each run
// by ResampleDropout). A model may have several scopes at once, e.g. a
// training graph and a smaller evaluation graph; they share parameter values.
type Scope struct {
	G *gorgonia.ExprGraph
	// Dtype is the element type of every float node built in the scope.
	Dtype tensor.Dtype
	// Train switches dropout on.
	Train bool

	nodes  map[*Param]*gorgonia.Node
	order  []*Param
	masks  []dropoutMask
	serial int
	// native reports whether the machine that will run the graph runs an
	// op kind on its device (machine.Native); nil: build only ops that
	// every backend runs (no fused ops).
	native func(kind string) bool
}

// fuses reports whether the scope builds the fused op k, which the
// machine running the graph must run on its device (see Runner).
func (s *Scope) fuses(k kernel) bool {
	return s.native != nil && s.native(opBase{k}.OpKind())
}

// NewScope starts an empty scope on g.
func NewScope(g *gorgonia.ExprGraph, dt tensor.Dtype, train bool) *Scope {
	return &Scope{G: g, Dtype: dt, Train: train, nodes: map[*Param]*gorgonia.Node{}}
}

// Bind makes n the node of p in this scope (instead of a fresh node bound to
// p.Value); a gradient check uses it to feed perturbed parameters.
func (s *Scope) Bind(p *Param, n *gorgonia.Node) error {
	if err := s.check("nn.Scope.Bind"); err != nil {
		return err
	}
	if p == nil || p.Value == nil || n == nil {
		return fmt.Errorf("nn.Scope.Bind: parameter %v or node %v is nil", p, n)
	}
	if !n.Shape().Eq(p.Value.Shape()) {
		return fmt.Errorf("nn: binding %s: node shape %v, parameter shape %v", p.Name, n.Shape(), p.Value.Shape())
	}
	if _, ok := s.nodes[p]; ok {
		return fmt.Errorf("nn: parameter %s is already bound in this scope", p.Name)
	}
	s.nodes[p] = n
	s.order = append(s.order, p)
	return nil
}

// check refuses a nil scope or one not made by NewScope.
func (s *Scope) check(what string) error {
	if s == nil || s.G == nil || s.nodes == nil {
		return fmt.Errorf("%s: the scope is nil or was not made by NewScope (on a graph)", what)
	}
	return nil
}

// Node returns the node of p in this scope, creating an input node bound to
// p.Value on first use.
func (s *Scope) Node(p *Param) *gorgonia.Node {
	if n, ok := s.nodes[p]; ok {
		return n
	}
	n := gorgonia.NewTensor(s.G, p.Value.Dtype(), p.Value.Dims(),
		gorgonia.WithShape(p.Value.Shape().Clone()...), gorgonia.WithName(p.Name), gorgonia.WithValue(p.Value))
	s.nodes[p] = n
	s.order = append(s.order, p)
	return n
}

// Params returns the parameters used so far in this scope, in first-use
// order, with their nodes.
func (s *Scope) Params() ([]*Param, []*gorgonia.Node) {
	ns := make([]*gorgonia.Node, len(s.order))
	for i, p := range s.order {
		ns[i] = s.nodes[p]
	}
	return append([]*Param(nil), s.order...), ns
}

// uniqueName returns prefix with a counter, for input nodes the scope adds.
func (s *Scope) uniqueName(prefix string) string {
	s.serial++
	return fmt.Sprintf("%s#%d", prefix, s.serial)
}

// gpt2Std is GPT-2's initialization standard deviation.
const gpt2Std = 0.02

// residualStd is the std of a residual output projection in a model of the
// given number of layers: 0.02/√(2·layers) (GPT-2's scaling, one factor per
// residual addition).
func residualStd(layers int) float64 { return gpt2Std / math.Sqrt(2*float64(layers)) }
