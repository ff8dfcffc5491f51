package nn

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/machine"
)

// deviceStep is a training runner's AdamW on its machine's device (machine.NewAdamW): the
// parameters are resident inputs of the runner's machine, and their moments live beside them,
// so that a TrainStep moves only the loss and the gradient norm to the host. The host's
// parameter tensors and the AdamW's moments are then out of date; every host reader in nn
// (another runner's run, SaveCheckpoint, AdamW.Step, Checkpoint.Restore, Runner.Close) first
// calls syncParams, which copies the device's values back. After the host writes them
// (Restore, a host AdamW.Step) the device copy is stale and is uploaded before the next step.
type deviceStep struct {
	r     *Runner
	opt   *AdamW
	dev   machine.Optimizer
	nodes []*gorgonia.Node // the parameters' input nodes, in opt's order

	mu    sync.Mutex  // serializes sync
	newer atomic.Bool // the device holds newer values than the host
	stale atomic.Bool // the host holds newer values than the device
}

// deviceStepFor returns the device step of r for opt, making it at the first call, or nil
// when r's machine has no device optimizer (the CPU) or the gradients cannot be stepped in
// place there; TrainStep then steps on the host. r.mu is held.
func (r *Runner) deviceStepFor(opt *AdamW) *deviceStep {
	if r.dev != nil && r.dev.opt == opt {
		return r.dev
	}
	if r.devOpt == opt && r.devErr != nil {
		return nil
	}
	if r.dev != nil { // another optimizer: retire this one with the host up to date
		if err := r.dev.syncLocked(); err != nil {
			r.devOpt, r.devErr = opt, err
			return nil
		}
		r.dev.close()
		r.dev = nil
	}
	nodes := make([]*gorgonia.Node, len(opt.params))
	decay := make([]bool, len(opt.params))
	for i, p := range opt.params {
		nodes[i], decay[i] = r.Scope.Node(p), p.Decay
	}
	o, err := r.vm.NewAdamW(nodes, r.grads, decay)
	if err != nil {
		r.devOpt, r.devErr = opt, err
		return nil
	}
	ds := &deviceStep{r: r, opt: opt, dev: o, nodes: nodes}
	ds.stale.Store(true) // upload the host's parameters and moments first
	if err := syncParams(opt.params, nil); err != nil {
		r.devOpt, r.devErr = opt, err
		o.Close()
		return nil
	}
	for _, p := range opt.params {
		p.dev.Store(ds)
	}
	r.dev = ds
	return ds
}

// step is TrainStep on the device, r.mu held: bind the batch, then the
// machine's TrainStep runs the graph, the gradient norm, the clip and AdamW as
// one program on the device (one hand-off to the device's thread per step,
// and a replay of the step recorded at the first call), which skips the
// update when the loss or the norm is not finite; the host reads both at the
// end.
func (ds *deviceStep) step(lr, clip float64, bind func() error) (loss, gradNorm float64, err error) {
	opt := ds.opt
	if err = bind(); err != nil {
		return 0, 0, err
	}
	unlock := readLock(ds.r.bound)
	ds.mu.Lock()
	ds.r.vm.Reset()
	loss, gradNorm, err = ds.r.vm.TrainStep(ds.dev, ds.r.Loss.Loss, machine.AdamWStep{LR: lr, Beta1: opt.Beta1, Beta2: opt.Beta2,
		Eps: opt.Eps, WeightDecay: opt.WeightDecay, Clip: clip, Step: opt.t + 1})
	finite := err == nil && !math.IsNaN(loss) && !math.IsInf(loss, 0) && !math.IsNaN(gradNorm) && !math.IsInf(gradNorm, 0)
	if finite {
		opt.t++
	}
	if finite || err != nil {
		ds.newer.Store(true) // (after an error the device may have stepped: read it back to be sure)
	}
	ds.mu.Unlock()
	unlock()
	switch {
	case err != nil:
		return loss, gradNorm, fmt.Errorf("nn.Runner.TrainStep: %w", err)
	case !finite:
		return loss, gradNorm, fmt.Errorf("nn.Runner.TrainStep: loss %g, gradient norm %g: not finite, step skipped", loss, gradNorm)
	}
	return loss, gradNorm, nil
}

// upload makes the device's parameters and moments the host's when the host's are newer
// (before a run of the owning runner, whose lock the caller holds).
func (ds *deviceStep) upload() error {
	if !ds.stale.Load() {
		return nil
	}
	ds.r.vm.Reload(ds.nodes...)
	for i, p := range ds.opt.params {
		if err := ds.dev.LoadMoments(i, ds.opt.m[i], ds.opt.v[i]); err != nil {
			return fmt.Errorf("uploading the moments of %s: %w", p.Name, err)
		}
	}
	ds.stale.Store(false)
	return nil
}

// sync copies the device's parameters and moments to the host when they are newer, holding
// the owning runner's lock (so not during one of its runs) and the parameters' write lock.
func (ds *deviceStep) sync() error {
	if !ds.newer.Load() {
		return nil
	}
	ds.r.mu.Lock()
	defer ds.r.mu.Unlock()
	return ds.syncLocked()
}

// syncLocked is sync with the owner's lock held.
func (ds *deviceStep) syncLocked() error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if !ds.newer.Load() {
		return nil
	}
	defer writeLock(ds.opt.params)()
	if err := ds.r.vm.SyncToHost(ds.nodes...); err != nil {
		return fmt.Errorf("nn: copying the parameters from the device: %w", err)
	}
	for i := range ds.opt.params {
		if err := ds.dev.StoreMoments(i, ds.opt.m[i], ds.opt.v[i]); err != nil {
			return fmt.Errorf("nn: copying the moments of %s from the device: %w", ds.opt.params[i].Name, err)
		}
	}
	ds.newer.Store(false)
	return nil
}

func (ds *deviceStep) close() {
	for _, p := range ds.opt.params {
		p.dev.CompareAndSwap(ds, nil)
	}
	ds.dev.Close()
}

// syncParams brings the host values of ps up to date from the devices that train them,
// except self's (whose runner's lock the caller holds). Callers hold no parameter lock.
func syncParams(ps []*Param, self *deviceStep) error {
	seen := map[*deviceStep]bool{}
	for _, p := range ps {
		ds := p.dev.Load()
		if ds == nil || ds == self || seen[ds] {
			continue
		}
		seen[ds] = true
		if err := ds.sync(); err != nil {
			return err
		}
	}
	return nil
}

// markHostNewer records that the host values of ps were written (Restore, a host step): the
// devices training them upload them again before their next step.
func markHostNewer(ps []*Param) {
	for _, p := range ps {
		if ds := p.dev.Load(); ds != nil {
			ds.stale.Store(true)
		}
	}
}

// Sync brings the host's parameter tensors and the optimizer's moments up to
// date when r trains them on its machine's device (a TrainStep leaves them
// there); nn's own host readers (other runners, SaveCheckpoint, AdamW.Step,
// Restore, Close) do it themselves, so only code reading Param.Value
// directly needs it. On the CPU it does nothing.
func (r *Runner) Sync() error {
	if err := r.check("nn.Runner.Sync"); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dev == nil {
		return nil
	}
	if err := r.dev.syncLocked(); err != nil {
		return fmt.Errorf("nn.Runner.Sync: %w", err)
	}
	return nil
}

// DeviceOptimizer reports whether r's TrainStep runs the optimizer on its
// machine's device (parameters and moments resident there), and if not,
// why (nil before the first TrainStep).
func (r *Runner) DeviceOptimizer() (bool, error) {
	if err := r.check("nn.Runner.DeviceOptimizer"); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dev != nil, r.devErr
}
