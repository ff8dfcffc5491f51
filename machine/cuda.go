package machine

import (
	"errors"
	"fmt"
	"log"
	"sync"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// cudaBackend keeps a machine's values in device memory (cuda.Buffer) and runs the op kinds of
// cudaKernels on them; the kernels queue on the cuda worker's one stream and only a Download
// waits. Float32 and Float64 values are stored as they are; integer values (token indices,
// tensor.Int) are stored as Int32, converted on Upload and Download (Alloc refuses none: an
// index beyond int32 is an Upload error).
type cudaBackend struct {
	name string
	mu   sync.Mutex
	bufs []*cuda.Buffer // every allocation, freed by Close
	conv []int32        // conversion scratch of integer uploads and downloads
	// norms maps the input operand of each norm forward kernel bound so far
	// to that kernel's description: a norm gradient over the same input
	// (whose buffer stays unchanged until the gradient has run, since the
	// gradient reads it) uses the row statistics the forward wrote.
	norms map[normKey]cuda.NormParams
	// bounds maps an index operand of gather or scatter-add kernels to the
	// rows of their table: Upload checks the indices there, on the host,
	// since the device's gather gives NaN rows for an index outside.
	bounds map[opndKey]int
	// planes maps the output operand of each attention forward kernel bound so far that keeps
	// bfloat16 planes of Q, K and V (cuda.AttentionBuffers.Planes) to its description: the
	// backward that reads that output (whose buffer stays unchanged until the backward has
	// run, since the backward reads it) reads the planes too, instead of converting Q, K and
	// V again.
	planes map[opndKey]keptAttention
}

// keptAttention is an attention forward whose kernels keep planes: its problem (with Planes)
// and its inputs q, k, v (qkvKeys).
type keptAttention struct {
	p  cuda.AttentionBuffers
	in [3]opndKey
}

// qkvKeys returns the keys of attention's first three operands, q, k and v.
func qkvKeys(in []Operand) [3]opndKey {
	return [3]opndKey{{in[0].Buf, in[0].Off}, {in[1].Buf, in[1].Off}, {in[2].Buf, in[2].Off}}
}

// opndKey identifies an operand's elements.
type opndKey struct {
	buf Buffer
	off int
}

// bound records that the indices in o must lie in [0, n).
func (c *cudaBackend) bound(o Operand, n int) {
	if c.bounds == nil {
		c.bounds = map[opndKey]int{}
	}
	k := opndKey{o.Buf, o.Off}
	if old, ok := c.bounds[k]; ok {
		n = min(n, old)
	}
	c.bounds[k] = n
}

// normKey identifies a norm's input and its kind.
type normKey struct {
	buf    Buffer
	off    int
	center bool
	eps    float64
}

// CUDA returns a backend on the GPU that package cuda uses, or an error when there is none
// or cuBLAS cannot be loaded (matrix products need it).
func CUDA() (Backend, error) {
	if !cuda.Enabled() {
		return nil, errors.New("machine: no CUDA device in use (the cuda package logs why)")
	}
	if err := cuda.BLAS(); err != nil {
		return nil, fmt.Errorf("machine: %s: %w", cuda.Device(), err)
	}
	return &cudaBackend{name: cuda.Device()}, nil
}

// cudaBuffer is a machine buffer in device memory; dt is the machine's dtype (an integer dtype
// is stored as Int32).
type cudaBuffer struct {
	b  *cuda.Buffer
	dt tensor.Dtype
}

func (b *cudaBuffer) Dtype() tensor.Dtype { return b.dt }
func (b *cudaBuffer) Len() int            { return b.b.Len() }

// storage returns the device element type of machine dtype dt.
func storage(dt tensor.Dtype) (cuda.DType, bool) {
	switch dt {
	case tensor.Float32:
		return cuda.Float32, true
	case tensor.Float64:
		return cuda.Float64, true
	case tensor.Int, tensor.Int64, tensor.Int32:
		return cuda.Int32, true
	}
	return 0, false
}

func (c *cudaBackend) Name() string                { return c.name }
func (c *cudaBackend) Host(Operand) gorgonia.Value { return nil }
func (c *cudaBackend) Kernels() Registry           { return cudaKernels(c) }

func (c *cudaBackend) Alloc(dt tensor.Dtype, n int) (Buffer, error) {
	st, ok := storage(dt)
	if !ok || n <= 0 {
		return nil, fmt.Errorf("machine: %s: a buffer of %d elements of %v", c.name, n, dt)
	}
	b, err := c.alloc(st, n)
	if err != nil {
		return nil, err
	}
	return &cudaBuffer{b: b, dt: dt}, nil
}

// alloc allocates device memory that Close frees (buffers, and the kernels' scratch).
func (c *cudaBackend) alloc(dt cuda.DType, n int) (*cuda.Buffer, error) {
	b, err := cuda.Alloc(dt, n)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.bufs = append(c.bufs, b)
	c.mu.Unlock()
	return b, nil
}

// Close frees every buffer the backend allocated.
func (c *cudaBackend) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, b := range c.bufs {
		if err := b.Free(); err != nil && first == nil {
			first = err
		}
	}
	c.bufs = nil
	return first
}

// device returns operand o as a cuda.Buffer (a view of its buffer's elements).
func device(o Operand) (*cuda.Buffer, error) {
	b, ok := o.Buf.(*cudaBuffer)
	if !ok {
		return nil, fmt.Errorf("machine: a %T is not CUDA memory", o.Buf)
	}
	n := size(o.Shape)
	if o.Off == 0 && n == b.b.Len() {
		return b.b, nil
	}
	return b.b.View(o.Off, n)
}

func (c *cudaBackend) Upload(dst Operand, src gorgonia.Value) error {
	d, err := device(dst)
	if err != nil {
		return err
	}
	if src.Dtype() != dst.Buf.Dtype() || size(src.Shape()) != d.Len() {
		return fmt.Errorf("machine: %s: upload of a %v value of shape %v into %v elements of %v", c.name, src.Dtype(), src.Shape(), d.Len(), dst.Buf.Dtype())
	}
	switch src.Dtype() {
	case tensor.Float32:
		s, err := elements[float32](src)
		if err != nil {
			return err
		}
		return d.Upload(s)
	case tensor.Float64:
		s, err := elements[float64](src)
		if err != nil {
			return err
		}
		return d.Upload(s)
	case tensor.Int:
		return uploadInts[int](c, d, src, c.bounds[opndKey{dst.Buf, dst.Off}])
	case tensor.Int64:
		return uploadInts[int64](c, d, src, c.bounds[opndKey{dst.Buf, dst.Off}])
	case tensor.Int32:
		s, err := elements[int32](src)
		if err != nil {
			return err
		}
		return d.Upload(s)
	}
	return fmt.Errorf("machine: %s: cannot upload dtype %v", c.name, src.Dtype())
}

// uploadInts converts integer elements to int32 and uploads them; with lim > 0 they are
// indices into a table of lim rows.
func uploadInts[T ~int | ~int64](c *cudaBackend, d *cuda.Buffer, src gorgonia.Value, lim int) error {
	s, err := elements[T](src)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cap(c.conv) < len(s) {
		c.conv = make([]int32, len(s))
	}
	conv := c.conv[:len(s)]
	for i, v := range s {
		if lim > 0 && (v < 0 || int64(v) >= int64(lim)) {
			return fmt.Errorf("machine: %s: index %d at position %d is outside [0, %d)", c.name, v, i, lim)
		}
		if int64(v) != int64(int32(v)) {
			return fmt.Errorf("machine: %s: integer %d at %d does not fit the device's int32", c.name, v, i)
		}
		conv[i] = int32(v)
	}
	return d.Upload(conv)
}

func (c *cudaBackend) Download(dst gorgonia.Value, src Operand) error {
	d, err := device(src)
	if err != nil {
		return err
	}
	if dst.Dtype() != src.Buf.Dtype() || size(dst.Shape()) != d.Len() {
		return fmt.Errorf("machine: %s: download of %v elements of %v into a %v value of shape %v", c.name, d.Len(), src.Buf.Dtype(), dst.Dtype(), dst.Shape())
	}
	if t, ok := dst.(*tensor.Dense); ok && !t.IsMaterializable() && !t.IsScalar() && dst.Dtype() != tensor.Int && dst.Dtype() != tensor.Int64 {
		return d.Download(t.Data())
	}
	// Scalars and integers go through a host slice of the device's element type.
	var tmp gorgonia.Value
	switch dst.Dtype() {
	case tensor.Float32:
		s := make([]float32, d.Len())
		if err := d.Download(s); err != nil {
			return err
		}
		tmp = tensor.New(tensor.WithShape(d.Len()), tensor.WithBacking(s))
	case tensor.Float64:
		s := make([]float64, d.Len())
		if err := d.Download(s); err != nil {
			return err
		}
		tmp = tensor.New(tensor.WithShape(d.Len()), tensor.WithBacking(s))
	case tensor.Int, tensor.Int64, tensor.Int32:
		s := make([]int32, d.Len())
		if err := d.Download(s); err != nil {
			return err
		}
		switch dst.Dtype() {
		case tensor.Int:
			w := make([]int, len(s))
			for i, v := range s {
				w[i] = int(v)
			}
			tmp = tensor.New(tensor.WithShape(d.Len()), tensor.WithBacking(w))
		case tensor.Int64:
			w := make([]int64, len(s))
			for i, v := range s {
				w[i] = int64(v)
			}
			tmp = tensor.New(tensor.WithShape(d.Len()), tensor.WithBacking(w))
		default:
			tmp = tensor.New(tensor.WithShape(d.Len()), tensor.WithBacking(s))
		}
	default:
		return fmt.Errorf("machine: %s: cannot download dtype %v", c.name, dst.Dtype())
	}
	return copyValue(dst, tmp)
}

// cudaAdamW is the CUDA backend's Optimizer: a cuda.ParamGroup over the parameters, gradients
// and moments (one launch each for the gradient norm, the clip and AdamW).
//
// Train runs a whole step in one cuda.Do, so that every launch and cuBLAS call of the step is
// a direct call on the cuda worker's thread (one hand-off per step, not one per call), and,
// with replay on, records the step's launches once, at the second step (cuda.Capture: the op
// kernels, the norm, the clip and AdamWScheduled), and replays that CUDA graph at every later
// step. What changes
// between steps is in device memory written before the replay: the inputs (the batch's
// tokens and targets, uploaded into their planned buffers by load) and sched, AdamW's
// (lr, 1 − β1ᵗ, 1 − β2ᵗ). What the recording holds as launch arguments (the clip norm, β1,
// β2, ε, the weight decay) is its key: a step with other values records again.
type cudaAdamW struct {
	c      *cudaBackend
	group  *cuda.ParamGroup
	ms, vs []*cuda.Buffer
	norm   *cuda.Buffer // Float64 [1]
	work   *cuda.Buffer
	sched  *cuda.Buffer // Float64 [3]: AdamWSchedule of the step
	host   []float64    // the norm on the host
	lossH  []float64    // the loss on the host (Float64 losses)
	lossF  []float32    // the loss on the host (Float32 losses)

	replay   bool        // record and replay steps (Replayer)
	warm     bool        // a step ran: the kernels' modules and cuBLAS are loaded
	noGraph  bool        // recording failed once: plain launches from then on
	graph    *cuda.Graph // the recorded step, or nil
	graphKey graphKey    // the values graph was recorded with
}

// graphKey is what a recorded step holds as launch arguments besides the planned buffers.
type graphKey struct {
	loss                        opndKey
	clip, beta1, beta2, eps, wd float64
}

// graphFailed logs, once per process, why steps are not recorded.
var graphFailed sync.Once

// NewAdamW implements OptimizerBackend.
func (c *cudaBackend) NewAdamW(params, grads []Operand, decay []bool) (Optimizer, error) {
	n := len(params)
	ps, gs := make([]*cuda.Buffer, n), make([]*cuda.Buffer, n)
	o := &cudaAdamW{c: c, ms: make([]*cuda.Buffer, n), vs: make([]*cuda.Buffer, n), host: make([]float64, 1),
		lossH: make([]float64, 1), lossF: make([]float32, 1), replay: true}
	for i := range params {
		var err error
		if ps[i], err = device(params[i]); err != nil {
			return nil, err
		}
		if gs[i], err = device(grads[i]); err != nil {
			return nil, err
		}
		for _, m := range []*[]*cuda.Buffer{&o.ms, &o.vs} {
			b, err := c.alloc(ps[i].DType(), ps[i].Len())
			if err != nil {
				return nil, err
			}
			if err := b.Zero(); err != nil {
				return nil, err
			}
			(*m)[i] = b
		}
	}
	g, err := cuda.NewParamGroup(ps, gs, o.ms, o.vs, decay)
	if err != nil {
		return nil, err
	}
	o.group = g
	if o.norm, err = c.alloc(cuda.Float64, 1); err != nil {
		return nil, err
	}
	if o.work, err = c.alloc(cuda.Float64, g.Workspace()); err != nil {
		return nil, err
	}
	if o.sched, err = c.alloc(cuda.Float64, 3); err != nil {
		return nil, err
	}
	return o, nil
}

// SetReplay implements Replayer.
func (o *cudaAdamW) SetReplay(on bool) {
	o.replay = on
	o.dropGraph()
}

// Recorded implements Replayer.
func (o *cudaAdamW) Recorded() bool { return o.graph != nil }

func (o *cudaAdamW) dropGraph() {
	if o.graph != nil {
		o.graph.Free()
		o.graph = nil
	}
}

// Train implements Optimizer: the whole step in one cuda.Do, replayed when recorded.
func (o *cudaAdamW) Train(load, run func() error, loss Operand, s AdamWStep) (lossV, norm float64, err error) {
	lb, err := device(loss)
	if err != nil {
		return 0, 0, err
	}
	if lb.Len() != 1 || (loss.Buf.Dtype() != tensor.Float32 && loss.Buf.Dtype() != tensor.Float64) {
		return 0, 0, fmt.Errorf("machine: %s: the loss is %d elements of %v, want one float", o.c.name, lb.Len(), loss.Buf.Dtype())
	}
	if s.Step < 1 {
		return 0, 0, fmt.Errorf("machine: %s: AdamW step %d, want ≥ 1", o.c.name, s.Step)
	}
	sched := cuda.AdamWSchedule(s.LR, s.Beta1, s.Beta2, s.Step)
	key := graphKey{loss: opndKey{loss.Buf, loss.Off}, clip: s.Clip, beta1: s.Beta1, beta2: s.Beta2, eps: s.Eps, wd: s.WeightDecay}
	step := func() error {
		if err := run(); err != nil {
			return err
		}
		if err := o.group.GradNorm(o.norm, o.work); err != nil {
			return err
		}
		if err := o.group.ClipByNorm(o.norm, s.Clip); err != nil {
			return err
		}
		return o.group.AdamWScheduled(o.sched, s.Beta1, s.Beta2, s.Eps, s.WeightDecay, o.norm, lb)
	}
	err = cuda.Do(func() error {
		if err := load(); err != nil {
			return err
		}
		if err := o.sched.Upload(sched[:]); err != nil {
			return err
		}
		if o.graph != nil && o.graphKey != key {
			o.dropGraph()
		}
		switch {
		case o.graph != nil:
			if err := o.graph.Launch(); err != nil {
				return err
			}
		case o.replay && !o.noGraph && o.warm:
			// (Recorded from the second step on: the first loads the kernels' modules and
			// lets cuBLAS set itself up, which recording would refuse.)
			g, err := cuda.Capture(step)
			if err != nil {
				// Nothing ran: run the step's launches as they come, now and from now on.
				o.noGraph = true
				graphFailed.Do(func() {
					log.Printf("flashgorgon: %s: a training step could not be recorded as a CUDA graph (%v): its kernels are launched one by one", o.c.name, err)
				})
				if err := step(); err != nil {
					return err
				}
				break
			}
			o.graph, o.graphKey = g, key
			if err := g.Launch(); err != nil {
				return err
			}
		default:
			if err := step(); err != nil {
				return err
			}
		}
		o.warm = true
		if err := o.norm.Download(o.host); err != nil {
			return err
		}
		if loss.Buf.Dtype() == tensor.Float32 {
			if err := lb.Download(o.lossF); err != nil {
				return err
			}
			lossV = float64(o.lossF[0])
		} else {
			if err := lb.Download(o.lossH); err != nil {
				return err
			}
			lossV = o.lossH[0]
		}
		return nil
	})
	return lossV, o.host[0], err
}

func (o *cudaAdamW) GradNorm() (float64, error) {
	if err := o.group.GradNorm(o.norm, o.work); err != nil {
		return 0, err
	}
	if err := o.norm.Download(o.host); err != nil {
		return 0, err
	}
	return o.host[0], nil
}

func (o *cudaAdamW) Step(s AdamWStep) error {
	if err := o.group.ClipByNorm(o.norm, s.Clip); err != nil {
		return err
	}
	return o.group.AdamW(s.LR, s.Beta1, s.Beta2, s.Eps, s.WeightDecay, s.Step)
}

func (o *cudaAdamW) LoadMoments(i int, m, v gorgonia.Value) error {
	return o.moments(i, m, v, o.c.Upload)
}

func (o *cudaAdamW) StoreMoments(i int, m, v gorgonia.Value) error {
	return o.moments(i, m, v, func(dev Operand, host gorgonia.Value) error { return o.c.Download(host, dev) })
}

// moments moves parameter i's moments between the device and the host values m and v, each
// way as move does (an upload or a download).
func (o *cudaAdamW) moments(i int, m, v gorgonia.Value, move func(dev Operand, host gorgonia.Value) error) error {
	if i < 0 || i >= len(o.ms) {
		return fmt.Errorf("machine: AdamW moments of parameter %d of %d", i, len(o.ms))
	}
	for _, x := range []struct {
		b *cuda.Buffer
		v gorgonia.Value
	}{{o.ms[i], m}, {o.vs[i], v}} {
		if err := move(Operand{Buf: &cudaBuffer{b: x.b, dt: x.v.Dtype()}, Shape: x.v.Shape()}, x.v); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the group's table and the recorded step (the moments go with the backend).
func (o *cudaAdamW) Close() error {
	o.dropGraph()
	return o.group.Free()
}
