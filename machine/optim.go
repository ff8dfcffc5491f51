package machine

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// AdamWStep is one step of AdamW with clipping by global norm, as nn.AdamW and
// nn.ClipGradNorm define them: the gradients are scaled by Clip/‖g‖ when
// Clip > 0 and ‖g‖ > Clip, then
//
//	p ← p·(1 − LR·WeightDecay)     (parameters with decay)
//	m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²
//	p ← p − LR·(m/(1 − β1ᵗ)) / (√(v/(1 − β2ᵗ)) + Eps),   t = Step ≥ 1
type AdamWStep struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Clip                               float64
	Step                               int
}

// Optimizer is AdamW over a machine's resident parameters and kept gradients
// on its device: the moments live there too, and a step moves nothing but
// the gradient norm to the host.
type Optimizer interface {
	// GradNorm returns ‖g‖ = √(Σ_i Σ_j g_i[j]²) over the gradients of the
	// last run (computed in float64, deterministically).
	GradNorm() (float64, error)
	// Step clips the gradients by the norm GradNorm computed and applies one
	// AdamW step to the parameters and moments.
	Step(s AdamWStep) error
	// LoadMoments uploads the host values m and v (of parameter i's dtype
	// and size) as parameter i's moments; StoreMoments downloads them.
	LoadMoments(i int, m, v gorgonia.Value) error
	StoreMoments(i int, m, v gorgonia.Value) error
	// Close releases the optimizer's device memory.
	Close() error
	// Train runs a whole training step on the device: load (the
	// machine's uploads of its inputs), run (its op kernels), GradNorm,
	// the clip and the AdamW step s, which the device skips when the loss
	// (the scalar at loss) or the norm is NaN or ±Inf; it returns both.
	// Machine.TrainStep calls it.
	Train(load, run func() error, loss Operand, s AdamWStep) (lossV, norm float64, err error)
}

// Replayer is an Optimizer that records a training step once and replays
// it (the CUDA one: a CUDA graph of the step's launches). Replay is on from
// the start; SetReplay(false) launches every kernel of every step instead.
type Replayer interface {
	SetReplay(on bool)
	// Recorded reports whether a recorded step is held (and the next
	// Train with the same clip and hyperparameters replays it).
	Recorded() bool
}

// TrainStep runs the graph once, as RunAll, and the optimizer step o (made
// by m.NewAdamW) after it as one program on the device: the gradient norm,
// clipping to s.Clip and the AdamW step s, which the device skips when the
// loss (a kept scalar node) or the norm is NaN or ±Inf, as a caller that read
// them first would. It returns the loss and the norm before clipping; the
// kept nodes can be read afterwards as after RunAll. On CUDA the step costs
// one hand-off to the device's thread, and with replay (Replayer) one
// launch of the step recorded at its first call.
func (m *Machine) TrainStep(o Optimizer, loss *gorgonia.Node, s AdamWStep) (lossV, norm float64, err error) {
	if m == nil || m.closed {
		return 0, 0, fmt.Errorf("machine.TrainStep: the machine is nil or closed")
	}
	if o == nil {
		return 0, 0, fmt.Errorf("machine.TrainStep: no optimizer")
	}
	lv, ok := m.byNode[loss]
	if !ok || (lv.role != roleOp && lv.role != roleView) || !lv.base.kept || size(lv.shape) != 1 {
		return 0, 0, fmt.Errorf("machine.TrainStep: the loss %v is not a kept scalar op node", loss)
	}
	m.ran = false
	load := func() error {
		for _, v := range m.inputs {
			if err := m.load(v); err != nil {
				return err
			}
		}
		return nil
	}
	run := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = m.fail(fmt.Errorf("panic: %v", r))
			}
			m.cur = nil
		}()
		for _, st := range m.steps {
			m.cur = st
			if err := m.exec(st); err != nil {
				return m.fail(err)
			}
		}
		return nil
	}
	if lossV, norm, err = o.Train(load, run, lv.opnd, s); err != nil {
		return lossV, norm, fmt.Errorf("machine.TrainStep: %w", err)
	}
	m.ran = true
	return lossV, norm, nil
}

// OptimizerBackend is a Backend with a fused optimizer over its buffers:
// params[i] (updated in place) with gradient grads[i], decay[i] saying
// whether weight decay applies. The moments start at zero.
type OptimizerBackend interface {
	NewAdamW(params, grads []Operand, decay []bool) (Optimizer, error)
}

// NewAdamW returns an optimizer on the machine's device over params, which
// must be Resident inputs, and their gradients grads, which must be kept op
// nodes with buffers of their own (no two sharing one). It returns an error
// on a backend without one (the CPU: there the caller steps on the host).
func (m *Machine) NewAdamW(params, grads []*gorgonia.Node, decay []bool) (Optimizer, error) {
	if m == nil || m.closed {
		return nil, fmt.Errorf("machine.NewAdamW: the machine is nil or closed")
	}
	ob, ok := m.be.(OptimizerBackend)
	if !ok || m.hostMem {
		return nil, fmt.Errorf("machine.NewAdamW: the %s backend has no device optimizer", m.be.Name())
	}
	if len(params) != len(grads) || len(params) != len(decay) || len(params) == 0 {
		return nil, fmt.Errorf("machine.NewAdamW: %d parameters, %d gradients, %d decay flags", len(params), len(grads), len(decay))
	}
	ps, gs := make([]Operand, len(params)), make([]Operand, len(grads))
	type span struct {
		buf    Buffer
		lo, hi int
	}
	var used []span
	for i := range params {
		p, ok := m.byNode[params[i]]
		if !ok || !p.resident {
			return nil, fmt.Errorf("machine.NewAdamW: parameter %v is not a resident input", params[i])
		}
		g, ok := m.byNode[grads[i]]
		if !ok || (g.role != roleOp && g.role != roleView) || !g.base.kept {
			return nil, fmt.Errorf("machine.NewAdamW: gradient %v is not a kept op node", grads[i])
		}
		if g.dt != p.dt || size(g.shape) != size(p.shape) {
			return nil, fmt.Errorf("machine.NewAdamW: gradient %v is %v%v for parameter %v %v%v", grads[i], g.dt, g.shape, params[i], p.dt, p.shape)
		}
		s := span{g.opnd.Buf, g.opnd.Off, g.opnd.Off + size(g.shape)}
		for _, u := range used {
			if u.buf == s.buf && u.lo < s.hi && s.lo < u.hi {
				return nil, fmt.Errorf("machine.NewAdamW: gradient %v shares its buffer with another parameter's", grads[i])
			}
		}
		used = append(used, s)
		ps[i], gs[i] = p.opnd, g.opnd
	}
	o, err := ob.NewAdamW(ps, gs, decay)
	if err != nil {
		return nil, fmt.Errorf("machine.NewAdamW: %w", err)
	}
	return o, nil
}
