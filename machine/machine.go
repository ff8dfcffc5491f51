package machine

import (
	"fmt"
	"log"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// Machine runs one Gorgonia expression graph, forward and the symbolic
// backward that gorgonia.Grad adds, on a backend, with every value's buffer
// planned once when the machine is made. It implements gorgonia.VM.
//
// Values: an input node (a variable: parameters, tokens, targets) is read
// from the value bound to it at each RunAll, so callers keep binding and
// updating inputs as with the TapeMachine. Every other node's value lives
// in a buffer of the plan. Buffers are reused once their last reader has
// run, so only the kept nodes (roots, and those passed to Keep) can be read
// after a run: Value(n) returns them, and on a host backend they are also
// bound to their nodes (n.Value()) from the start. A run allocates no
// buffer; each node's op writes into its own buffer and never into an
// input's (see Report for the ops that cannot).
//
// A machine is not safe for concurrent use; separate machines (over
// separate graphs, or reading shared inputs) may run concurrently.
type Machine struct {
	be      Backend
	ownBe   bool // New opened be, so Close closes it
	hostMem bool // the backend's memory is host memory (Backend.Host works)
	order   []*value
	byNode  map[*gorgonia.Node]*value
	inputs  []*value
	steps   []*step
	bufs    []Buffer
	report  Report
	ran     bool
	closed  bool
	cur     *step // the step running, for errors
}

// role says where a node's value comes from.
type role uint8

const (
	roleInput role = iota // bound by the caller, read at each run
	roleConst             // a constant op, evaluated once
	roleOp                // computed into a buffer of the plan
	roleView              // shares its input's buffer (reshape, a piece of a packed value)
)

// value is one node's place in the plan.
type value struct {
	n     *gorgonia.Node
	role  role
	dt    tensor.Dtype
	shape tensor.Shape // the node's shape
	base  *value       // the value owning the buffer (itself unless a view)
	off   int          // a view's offset into its input (elements)
	ins   []*value
	opnd  Operand        // the value on the device
	host  gorgonia.Value // host value: a view of opnd (host backends), an input's bound value, or a host copy
	last  int            // index of the last step that reads the buffer (views' readers included)
	kept  bool
	// resident: an input the machine uploads once and then keeps on its
	// device (Resident); loaded: the device holds its current value.
	resident, loaded bool
	index            int      // position in the execution order
	refs             []argRef // an input's argument slots
}

// argRef is an argument slot of a step that an input fills at each run.
type argRef struct {
	st *step
	i  int
}

// step runs one op node.
type step struct {
	v      *value
	op     gorgonia.Op
	kernel Kernel                   // device implementation, or nil
	into   IntoDoer                 // the op's DoInto, or nil
	pd     gorgonia.UsePreallocDoer // the op's UsePreallocDo, or nil: Do and copy
	zero   bool                     // pd adds into out: zero out first (addsIntoPrealloc)
	args   []gorgonia.Value         // host values of the inputs
	out    gorgonia.Value           // host value the result goes to
	down   []int                    // args to download before a host op (device backends)
	up     bool                     // upload out after a host op (device backends)
	copied bool                     // UsePreallocDo did not write into out (recorded once)
}

// Report describes a machine's plan and what it had to do on the host.
type Report struct {
	Device string
	// Nodes in the graph: inputs, constants, ops computed into buffers,
	// views sharing their input's buffer.
	Inputs, Constants, Ops, Views int
	// DeviceKernels is the number of op nodes run by a device kernel.
	DeviceKernels int
	// Copied lists, as "node: op (kind)", the op nodes whose result is
	// copied into the planned buffer: the op has neither DoInto nor
	// UsePreallocDo, its output is a scalar, or its UsePreallocDo refused
	// the buffer or returned a value of its own (found at run time).
	Copied []string
	// HostOps lists, likewise, the op nodes run on the host with their inputs
	// downloaded and their result uploaded (backends whose memory is not
	// host memory).
	HostOps []string
	// Buffers and BufferBytes count the planned buffers; OutputBytes is
	// what the op nodes' values would take without reuse.
	Buffers                  int
	BufferBytes, OutputBytes int64
}

// Option configures New.
type Option func(*config)

type config struct {
	keep     []*gorgonia.Node
	resident []*gorgonia.Node
	backend  Backend
	device   string
}

// Keep marks nodes whose values the caller reads after a run (the loss,
// logits, gradients): their buffers are never reused. Roots are always kept.
func Keep(nodes ...*gorgonia.Node) Option {
	return func(c *config) { c.keep = append(c.keep, nodes...) }
}

// Resident marks input nodes (a model's parameters) whose values live on the
// machine's device: a device backend uploads them at the first run and then
// keeps them, so that an optimizer on the device (NewAdamW) updates them in
// place; Reload uploads them again at the next run and SyncToHost copies
// them into their bound values. On a host backend, whose inputs are read
// where they are bound, it changes nothing.
func Resident(nodes ...*gorgonia.Node) Option {
	return func(c *config) { c.resident = append(c.resident, nodes...) }
}

// WithBackend runs the machine on b instead of the backend Open("") picks.
// The machine does not close b.
func WithBackend(b Backend) Option { return func(c *config) { c.backend = b } }

// OnDevice runs the machine on the backend Open(device) returns.
func OnDevice(device string) Option { return func(c *config) { c.device = device } }

// New plans g for running: it sorts the graph, checks every node's type and
// shape, decides how each op node runs (device kernel, UsePreallocDo into
// its buffer, or Do and a copy), and assigns buffers from liveness. It
// returns an error naming the node and op it cannot run.
func New(g *gorgonia.ExprGraph, opts ...Option) (*Machine, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if g == nil || len(g.AllNodes()) == 0 {
		return nil, fmt.Errorf("machine.New: empty or nil graph")
	}
	be := c.backend
	owned := false
	if be == nil {
		var err error
		if be, err = Open(c.device); err != nil {
			return nil, fmt.Errorf("machine.New: %w", err)
		}
		owned = true
	}
	m := &Machine{be: be, ownBe: owned, byNode: map[*gorgonia.Node]*value{}}
	m.report.Device = be.Name()
	if err := m.plan(g, c.keep, c.resident); err != nil {
		m.release()
		if owned {
			be.Close()
		}
		return nil, fmt.Errorf("machine.New: %w", err)
	}
	if h := m.report.HostOps; len(h) > 0 {
		log.Printf("flashgorgon: machine on %s: %d of %d ops have no %s kernel and run on the host with copies: %s",
			be.Name(), len(h), m.report.Ops, be.Name(), strings.Join(h, "; "))
	}
	return m, nil
}

// plan builds the values and steps of g.
func (m *Machine) plan(g *gorgonia.ExprGraph, keep, resident []*gorgonia.Node) error {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return fmt.Errorf("sorting the graph: %w", err)
	}
	slices.Reverse(sorted) // inputs first
	if err := m.classify(g, sorted); err != nil {
		return err
	}
	for _, n := range keep {
		v, ok := m.byNode[n]
		if !ok {
			return fmt.Errorf("kept node %v is not in the graph", n)
		}
		v.base.kept = true
	}
	if err := m.probe(); err != nil {
		return err
	}
	for _, n := range resident {
		v, ok := m.byNode[n]
		if !ok || v.role != roleInput {
			return fmt.Errorf("resident node %v is not an input of the graph", n)
		}
		v.resident = !m.hostMem
	}
	if err := m.assign(); err != nil {
		return err
	}
	return m.build()
}

// classify makes a value for every node in execution order, checking its
// type and shape and deciding its role.
func (m *Machine) classify(g *gorgonia.ExprGraph, sorted gorgonia.Nodes) error {
	read := map[*value]bool{}
	for i, n := range sorted {
		dt, ok := graph.NodeDtype(n)
		s := n.Shape()
		switch {
		case !ok:
			return fmt.Errorf("node %q (op %v) has type %v, which has no concrete element type", n.Name(), n.Op(), n.Type())
		case !supported(dt):
			return fmt.Errorf("node %q (op %v) has dtype %v: the machine holds float32, float64, int, int64 and int32", n.Name(), n.Op(), dt)
		case graph.Empty(s):
			return fmt.Errorf("node %q (op %v) has shape %v, which has no elements", n.Name(), n.Op(), s)
		}
		v := &value{n: n, dt: dt, shape: s, index: i, last: i}
		v.base = v
		m.byNode[n] = v
		m.order = append(m.order, v)
		op := n.Op()
		if op == nil {
			v.role = roleInput
			m.inputs = append(m.inputs, v)
			m.report.Inputs++
			continue
		}
		kind := OpKind(op)
		for it := g.From(n.ID()); it.Next(); {
			c := it.Node()
			cv, ok := m.byNode[c.(*gorgonia.Node)]
			if !ok {
				return fmt.Errorf("node %q (op %v): input %v comes after it in the sorted graph", n.Name(), op, c)
			}
			v.ins = append(v.ins, cv)
			read[cv] = true
		}
		if a := op.Arity(); a >= 0 && a != len(v.ins) && !isConstant(kind) {
			return fmt.Errorf("node %q (op %v) has %d inputs, its op takes %d", n.Name(), op, len(v.ins), a)
		}
		switch {
		case isConstant(kind):
			cv, err := op.Do()
			if err != nil {
				return fmt.Errorf("node %q (op %v): evaluating the constant: %w", n.Name(), op, err)
			}
			v.role, v.host = roleConst, cv
			m.report.Constants++
		case kind == "gorgonia.letOp" || kind == "gorgonia.readOp":
			return fmt.Errorf("node %q (op %v): statement ops (Let, Read) are not supported; read values with Machine.Value", n.Name(), op)
		default:
			v.role = roleOp
			if off, ok := viewOffset(op, kind, v); ok {
				v.role, v.off, v.base = roleView, off, v.ins[0].base
				v.off += v.ins[0].off
				m.report.Views++
			} else {
				m.report.Ops++
			}
		}
		if t, ok := op.(gorgonia.TrainModeOp); ok {
			t.SetTraining(true) // as the TapeMachine does outside eval mode
		}
	}
	// Liveness: a buffer lives until the last step that reads its value or
	// a view of it; roots (read by no node) are kept.
	for _, v := range m.order {
		for _, c := range v.ins {
			c.base.last = max(c.base.last, v.index)
		}
		if !read[v] && v.role != roleInput && v.role != roleConst {
			v.base.kept = true
		}
	}
	return nil
}

func isConstant(kind string) bool {
	return kind == "gorgonia.constantScalar" || kind == "gorgonia.constantTensor"
}

// IntoDoer is implemented by ops that write their result into a value the
// caller provides. out is a contiguous dense tensor of the node's dtype and
// shape that shares memory with no other live value (the machine's planned
// buffer; its contents are left from earlier use) and DoInto overwrites
// every element of it. The machine prefers it to gorgonia.UsePreallocDoer,
// which the TapeMachine also calls, with a register that a live view may
// share, so ops of this project implement DoInto rather than
// UsePreallocDo.
type IntoDoer interface {
	DoInto(out gorgonia.Value, in ...gorgonia.Value) error
}

// Viewer is implemented by ops whose output can be elements [off,
// off+size(output)) of their input 0, shared rather than copied
// (ops/attention's pieces of a packed gradient). ok false: the op copies.
type Viewer interface{ ViewOffset() (off int, ok bool) }

// viewOffset reports whether node v (op of kind) is a view of its input
// 0 and at which offset: a Viewer, or Gorgonia's reshape, over a tensor
// value that the machine computes (not an input, whose memory the caller
// owns and may rebind), of the same dtype, with room for v.
func viewOffset(op gorgonia.Op, kind string, v *value) (int, bool) {
	if len(v.ins) != 1 || v.n.IsScalar() {
		return 0, false
	}
	in := v.ins[0]
	if (in.role != roleOp && in.role != roleView) || in.n.IsScalar() || in.dt != v.dt {
		return 0, false
	}
	off, ok := 0, false
	if vw, is := op.(Viewer); is {
		off, ok = vw.ViewOffset()
	} else {
		ok = kind == "gorgonia.reshapeOp"
	}
	if !ok || off < 0 || off+size(v.shape) > size(in.shape) {
		return 0, false
	}
	return off, true
}

// probe finds out whether the backend's memory is host memory.
func (m *Machine) probe() error {
	b, err := m.be.Alloc(tensor.Float32, 1)
	if err != nil {
		return fmt.Errorf("%s: %w", m.be.Name(), err)
	}
	m.bufs = append(m.bufs, b)
	m.hostMem = m.be.Host(Operand{Buf: b, Shape: tensor.Shape{1}}) != nil
	return nil
}

// poolKey identifies interchangeable buffers.
type poolKey struct {
	dt tensor.Dtype
	n  int
}

// assign gives every value its operand: op values a buffer from a pool of
// free buffers of their dtype and size, taken before the step runs and
// given back after the last step reading it; views their base's buffer at
// their offset; inputs and constants a fixed buffer on device backends.
func (m *Machine) assign() error {
	free := map[poolKey][]Buffer{}
	alloc := func(dt tensor.Dtype, n int) (Buffer, error) {
		k := poolKey{dt, n}
		if l := free[k]; len(l) > 0 {
			b := l[len(l)-1]
			free[k] = l[:len(l)-1]
			return b, nil
		}
		b, err := m.be.Alloc(dt, n)
		if err != nil {
			return nil, err
		}
		m.bufs = append(m.bufs, b)
		m.report.Buffers++
		m.report.BufferBytes += int64(n) * int64(dt.Size())
		return b, nil
	}
	for _, v := range m.order {
		s := v.shape
		n := size(s)
		switch v.role {
		case roleInput, roleConst:
			if m.hostMem {
				continue
			}
			b, err := m.be.Alloc(v.dt, n)
			if err != nil {
				return fmt.Errorf("node %q: %s: %w", v.n.Name(), m.be.Name(), err)
			}
			m.bufs = append(m.bufs, b)
			v.opnd = Operand{Buf: b, Shape: s}
			if v.role == roleConst {
				if err := m.be.Upload(v.opnd, v.host); err != nil {
					return fmt.Errorf("node %q (op %v): uploading the constant: %w", v.n.Name(), v.n.Op(), err)
				}
			}
			continue
		case roleView:
			v.opnd = Operand{Buf: v.base.opnd.Buf, Off: v.off, Shape: s}
		case roleOp:
			b, err := alloc(v.dt, n)
			if err != nil {
				return fmt.Errorf("node %q (op %v): %s: %w", v.n.Name(), v.n.Op(), m.be.Name(), err)
			}
			v.opnd = Operand{Buf: b, Shape: s}
			m.report.OutputBytes += int64(n) * int64(v.dt.Size())
		}
		// The inputs whose last reader this was give their buffer back,
		// after the output took its own: an op never writes into an input.
		for _, c := range v.ins {
			if b := c.base; b.role == roleOp && !b.kept && b.last == v.index {
				b.last = -1 // given back once
				k := poolKey{b.dt, size(b.shape)}
				free[k] = append(free[k], b.opnd.Buf)
			}
		}
	}
	return nil
}

// build makes the host values and the steps.
func (m *Machine) build() error {
	refs := map[*value][]argRef{}
	kernels := m.be.Kernels()
	for _, v := range m.order {
		if v.role == roleView || v.role == roleOp {
			if m.hostMem {
				if v.host = m.be.Host(v.opnd); v.host == nil {
					return fmt.Errorf("node %q: %s gives no host value for its buffer", v.n.Name(), m.be.Name())
				}
			}
		}
		if v.role != roleOp {
			continue
		}
		op := v.n.Op()
		st := &step{v: v, op: op, args: make([]gorgonia.Value, len(v.ins))}
		// On a host backend only the values the machine computes have
		// buffers; a node reading an input or a constant runs as its op.
		if mk, ok := kernels[OpKind(op)]; ok && (!m.hostMem || allBuffered(v.ins)) {
			in := make([]Operand, len(v.ins))
			for i, c := range v.ins {
				in[i] = c.opnd
			}
			k, err := mk(op, v.opnd, in)
			if err != nil {
				return fmt.Errorf("node %q (op %v): binding the %s kernel: %w", v.n.Name(), op, m.be.Name(), err)
			}
			if k != nil {
				st.kernel = k
				m.report.DeviceKernels++
				m.steps = append(m.steps, st)
				continue
			}
		}
		// A host op: its arguments and result as host values.
		for i, c := range v.ins {
			switch {
			case c.role == roleInput && !c.resident:
				refs[c] = append(refs[c], argRef{st, i})
			case c.host != nil:
				st.args[i] = c.host
			default: // device memory: a host copy, downloaded before the op
				h, err := newHostValue(c.dt, c.shape)
				if err != nil {
					return fmt.Errorf("node %q: %w", c.n.Name(), err)
				}
				c.host = h
				st.args[i] = h
				st.down = append(st.down, i)
			}
			if c.role == roleConst && !m.hostMem {
				st.args[i] = c.host // the constant's own host value
			}
		}
		if v.host == nil {
			h, err := newHostValue(v.dt, v.shape)
			if err != nil {
				return fmt.Errorf("node %q: %w", v.n.Name(), err)
			}
			v.host, st.up = h, true
			m.report.HostOps = append(m.report.HostOps, describe(v))
		}
		st.out = v.host
		into, ok1 := op.(IntoDoer)
		pd, ok2 := op.(gorgonia.UsePreallocDoer)
		switch {
		case v.n.IsScalar(): // the result is a Gorgonia scalar
			m.report.Copied = append(m.report.Copied, describe(v))
		case ok1:
			st.into = into
		case ok2:
			st.pd, st.zero = pd, addsIntoPrealloc[OpKind(op)]
		default:
			m.report.Copied = append(m.report.Copied, describe(v))
		}
		m.steps = append(m.steps, st)
	}
	for _, v := range m.inputs {
		v.refs = refs[v]
	}
	// Kept values are readable through their nodes on host backends.
	if m.hostMem {
		for _, v := range m.order {
			if (v.role == roleOp || v.role == roleView) && v.base.kept {
				if err := gorgonia.UnsafeLet(v.n, v.host); err != nil {
					return fmt.Errorf("node %q: binding its value: %w", v.n.Name(), err)
				}
			}
		}
	}
	return nil
}

// describe names an op node for Report: "node: op (kind)".
func describe(v *value) string {
	return fmt.Sprintf("%s: %v (%s)", v.n.Name(), v.n.Op(), OpKind(v.n.Op()))
}

// newHostValue allocates a host value of dtype dt and shape s: a Gorgonia
// scalar for a scalar shape, a tensor otherwise.
func newHostValue(dt tensor.Dtype, s tensor.Shape) (gorgonia.Value, error) {
	b, err := CPU().Alloc(dt, size(s))
	if err != nil {
		return nil, err
	}
	return CPU().Host(Operand{Buf: b, Shape: s}), nil
}

// RunAll runs the graph once: it reads the inputs' bound values and runs
// every op node in order. An error names the node and op that failed; a
// panic inside an op is returned as an error.
func (m *Machine) RunAll() (err error) {
	if m == nil || m.closed {
		return fmt.Errorf("machine.RunAll: the machine is nil or closed")
	}
	m.ran = false
	defer func() {
		if r := recover(); r != nil {
			err = m.fail(fmt.Errorf("panic: %v", r))
		}
		m.cur = nil
	}()
	for _, v := range m.inputs {
		if err := m.load(v); err != nil {
			return err
		}
	}
	for _, st := range m.steps {
		m.cur = st
		if err := m.exec(st); err != nil {
			return m.fail(err)
		}
	}
	m.ran = true
	return nil
}

// fail names the running step in err.
func (m *Machine) fail(err error) error {
	if m.cur == nil {
		return fmt.Errorf("machine.RunAll: %w", err)
	}
	n := m.cur.v.n
	return fmt.Errorf("machine.RunAll: node %q (op %v): %w", n.Name(), n.Op(), err)
}

// load reads the value bound to input v for this run.
func (m *Machine) load(v *value) error {
	x := v.n.Value()
	if x == nil {
		return fmt.Errorf("machine.RunAll: input %q has no value bound", v.n.Name())
	}
	if x.Dtype() != v.dt || !x.Shape().Eq(v.shape) {
		return fmt.Errorf("machine.RunAll: input %q is bound to a %v value of shape %v, the node is %v of shape %v",
			v.n.Name(), x.Dtype(), x.Shape(), v.dt, v.shape)
	}
	v.host = x
	for _, r := range v.refs {
		r.st.args[r.i] = x
	}
	if v.resident {
		if v.loaded {
			return nil
		}
		v.loaded = true
	}
	if !m.hostMem {
		if err := m.be.Upload(v.opnd, x); err != nil {
			return fmt.Errorf("machine.RunAll: input %q: upload: %w", v.n.Name(), err)
		}
	}
	return nil
}

// exec runs one step.
func (m *Machine) exec(st *step) error {
	if st.kernel != nil {
		return st.kernel()
	}
	for _, i := range st.down {
		if err := m.be.Download(st.args[i], st.v.ins[i].opnd); err != nil {
			return fmt.Errorf("download of input %d: %w", i, err)
		}
	}
	var (
		r   gorgonia.Value
		err error
	)
	switch {
	case st.into != nil:
		r, err = st.out, st.into.DoInto(st.out, st.args...)
	case st.pd != nil:
		// Gorgonia's UsePreallocDo refuses some operand kinds (as in the
		// TapeMachine, Do then computes the result, copied below).
		if st.zero {
			if z, ok := st.out.(interface{ Zero() }); ok {
				z.Zero()
			}
		}
		if r, err = st.pd.UsePreallocDo(st.out, st.args...); err != nil {
			r, err = st.op.Do(st.args...) // a new value: copied and recorded below
		}
	default:
		r, err = st.op.Do(st.args...)
	}
	if err != nil {
		return err
	}
	if r != st.out && !sameMemory(r, st.out) {
		if err := copyValue(st.out, r); err != nil {
			return fmt.Errorf("copying the result: %w", err)
		}
		if st.pd != nil && !st.copied {
			st.copied = true
			m.report.Copied = append(m.report.Copied, describe(st.v))
		}
	}
	if st.up {
		if err := m.be.Upload(st.v.opnd, st.out); err != nil {
			return fmt.Errorf("upload of the result: %w", err)
		}
	}
	return nil
}

// addsIntoPrealloc lists the Gorgonia ops whose UsePreallocDo adds into the value it is given
// instead of overwriting it: they assume the fresh, zeroed value the TapeMachine allocates.
// The machine reuses buffers, so it zeroes their output first (without this, Slice's gradient
// summed what its buffer held before: TestMatchesTapeMachine's gorgonia cases caught it).
var addsIntoPrealloc = map[string]bool{
	"gorgonia.sliceIncrOp":   true,
	"gorgonia.maxPoolDiffOp": true,
	"gorgonia.avgPoolDiffOp": true,
}

// sameMemory reports whether a and b are dense tensors over the same
// elements.
func sameMemory(a, b gorgonia.Value) bool {
	x, ok1 := a.(*tensor.Dense)
	y, ok2 := b.(*tensor.Dense)
	return ok1 && ok2 && !x.IsMaterializable() && !y.IsMaterializable() &&
		x.Uintptr() == y.Uintptr() && x.Shape().TotalSize() == y.Shape().TotalSize() && x.Dtype() == y.Dtype()
}

// Reload makes the next run upload the resident inputs among nodes (all of
// them when none is given) from their bound values, after the caller changed
// those values on the host.
func (m *Machine) Reload(nodes ...*gorgonia.Node) {
	for _, v := range m.residents(nodes) {
		v.loaded = false
	}
}

// SyncToHost copies the device values of the resident inputs among nodes
// (all of them when none is given) into their bound values.
func (m *Machine) SyncToHost(nodes ...*gorgonia.Node) error {
	for _, v := range m.residents(nodes) {
		if !v.loaded {
			continue // the bound value is the newer
		}
		if err := m.be.Download(v.n.Value(), v.opnd); err != nil {
			return fmt.Errorf("machine.SyncToHost: input %q: %w", v.n.Name(), err)
		}
	}
	return nil
}

// residents returns the resident inputs among nodes, or all of them.
func (m *Machine) residents(nodes []*gorgonia.Node) []*value {
	var out []*value
	if m == nil || m.closed {
		return nil
	}
	if len(nodes) == 0 {
		for _, v := range m.inputs {
			if v.resident {
				out = append(out, v)
			}
		}
		return out
	}
	for _, n := range nodes {
		if v, ok := m.byNode[n]; ok && v.resident {
			out = append(out, v)
		}
	}
	return out
}

// Reset forgets the last run: values cannot be read until the next RunAll.
// (RunAll always runs the whole graph; gorgonia.VM requires Reset.)
func (m *Machine) Reset() {
	if m != nil {
		m.ran = false
	}
}

// Close releases the machine's buffers (and the backend, when New opened
// it). The machine cannot run afterwards.
func (m *Machine) Close() error {
	if m == nil || m.closed {
		return nil
	}
	m.closed = true
	m.release()
	if m.ownBe {
		return m.be.Close()
	}
	return nil
}

func (m *Machine) release() {
	m.bufs = nil
	for _, st := range m.steps {
		st.args, st.out = nil, nil
	}
}

// Value returns the value of node n after the last run, as a host value:
// an input's bound value, or a kept node's value. On a host backend it is
// the machine's buffer itself (not a copy), overwritten by the next run; on
// a device backend it is downloaded into a host copy owned by the machine.
// A node that is not kept is an error: its buffer is reused (pass it to
// Keep).
func (m *Machine) Value(n *gorgonia.Node) (gorgonia.Value, error) {
	v, err := m.readable(n)
	if err != nil {
		return nil, err
	}
	if v.role == roleInput || v.role == roleConst || m.hostMem {
		return v.host, nil
	}
	if v.host == nil {
		if v.host, err = newHostValue(v.dt, v.shape); err != nil {
			return nil, err
		}
	}
	if err := m.be.Download(v.host, v.opnd); err != nil {
		return nil, fmt.Errorf("machine.Value: node %q: %w", n.Name(), err)
	}
	return v.host, nil
}

// Read copies the value of node n after the last run into dst, a host
// value of n's dtype and number of elements (a dense tensor or a Gorgonia
// scalar). n must be an input, a constant or a kept node.
func (m *Machine) Read(n *gorgonia.Node, dst gorgonia.Value) error {
	v, err := m.readable(n)
	if err != nil {
		return err
	}
	if v.role == roleInput || v.role == roleConst || m.hostMem {
		err = copyValue(dst, v.host)
	} else {
		err = m.be.Download(dst, v.opnd)
	}
	if err != nil {
		return fmt.Errorf("machine.Read: node %q: %w", n.Name(), err)
	}
	return nil
}

// readable returns n's value when it can be read now.
func (m *Machine) readable(n *gorgonia.Node) (*value, error) {
	if m == nil || m.closed {
		return nil, fmt.Errorf("machine: the machine is nil or closed")
	}
	v, ok := m.byNode[n]
	switch {
	case !ok:
		return nil, fmt.Errorf("machine: node %v is not in the machine's graph", n)
	case v.role == roleInput || v.role == roleConst:
		return v, nil
	case !v.base.kept:
		return nil, fmt.Errorf("machine: node %q (op %v) is not kept: its buffer is reused within a run (pass it to machine.Keep)", n.Name(), n.Op())
	case !m.ran:
		return nil, fmt.Errorf("machine: node %q has no value: the machine has not run since it was made or reset", n.Name())
	}
	return v, nil
}

// Report returns the machine's plan summary.
func (m *Machine) Report() Report {
	r := m.report
	r.Copied = slices.Clone(r.Copied)
	r.HostOps = slices.Clone(r.HostOps)
	return r
}

// Backend returns the backend the machine runs on.
func (m *Machine) Backend() Backend { return m.be }

var _ gorgonia.VM = (*Machine)(nil)
