package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// ParamGroup is a list of parameters (each with its gradient and AdamW moments) that the fused
// optimizer kernels update in one launch each, instead of one launch per parameter: a step of
// a model with P parameters then costs three launches for clip and AdamW, not 3·P. The group
// keeps a table of the buffers' device addresses on the device, made once by NewParamGroup;
// the buffers must stay allocated while the group is used (each call checks them), and Free
// releases the table.
//
// Every buffer of a group has one element type. The launch grid gives each parameter
// ⌈n/2048⌉ blocks of 2048 elements, so sums are taken in a fixed order.
type ParamGroup struct {
	dt                    DType
	params, grads, ms, vs []*Buffer
	table                 *Buffer // Int32 view of the fg_tensor_desc table
	blocks                int
	decays                []bool
}

// groupChunk is FG_GROUP_CHUNK: the elements of a parameter one block of a group launch takes.
const groupChunk = 2048

// NewParamGroup makes a group of the parameters params[i] with gradients grads[i] and moments
// ms[i], vs[i] (all of one element type; params[i] and its three companions of one length).
// decay[i] says whether AdamW's weight decay applies to params[i]. ms and vs may be nil for a
// group used only for the gradient norm and clipping.
func NewParamGroup(params, grads, ms, vs []*Buffer, decay []bool) (*ParamGroup, error) {
	const op = "NewParamGroup"
	n := len(params)
	if n == 0 {
		return nil, fmt.Errorf("cuda: %s: no parameters", op)
	}
	moments := ms != nil || vs != nil
	if len(grads) != n || len(decay) != n || moments && (len(ms) != n || len(vs) != n) {
		return nil, fmt.Errorf("cuda: %s: %d params, %d grads, %d m, %d v, %d decay flags: want one of each per parameter (m and v may both be nil)",
			op, n, len(grads), len(ms), len(vs), len(decay))
	}
	DT, _, err := floatOf(op, "params[0]", params[0])
	if err != nil {
		return nil, err
	}
	g := &ParamGroup{dt: DT, params: params, grads: grads, ms: ms, vs: vs, decays: decay}
	descs := make([]tensorDesc, n)
	for i, p := range params {
		ops := []operand{{name: fmt.Sprintf("params[%d]", i), b: p, dt: DT, n: p.Len()}, {name: fmt.Sprintf("grads[%d]", i), b: grads[i], dt: DT, n: p.Len()}}
		if moments {
			ops = append(ops, operand{name: fmt.Sprintf("ms[%d]", i), b: ms[i], dt: DT, n: p.Len()}, operand{name: fmt.Sprintf("vs[%d]", i), b: vs[i], dt: DT, n: p.Len()})
		}
		if err := checkOperands(op, ops); err != nil {
			return nil, err
		}
		descs[i] = tensorDesc{p: p.ptr, g: grads[i].ptr, n: int64(p.n), firstBlock: int64(g.blocks)}
		if moments {
			descs[i].m, descs[i].v = ms[i].ptr, vs[i].ptr
		}
		if decay[i] {
			descs[i].decay = 1
		}
		g.blocks += ceilDiv(p.n, groupChunk)
	}
	if g.blocks > math.MaxInt32 {
		return nil, fmt.Errorf("cuda: %s: %d blocks of %d elements: too many", op, g.blocks, groupChunk)
	}
	words := n * int(unsafe.Sizeof(tensorDesc{})) / 4
	if g.table, err = Alloc(Int32, words); err != nil {
		return nil, err
	}
	if err := g.table.Upload(unsafe.Slice((*int32)(unsafe.Pointer(&descs[0])), words)); err != nil {
		g.table.Free()
		return nil, err
	}
	return g, nil
}

// Free releases the group's device table (not its buffers).
func (g *ParamGroup) Free() error {
	if g == nil || g.table == nil {
		return fmt.Errorf("cuda: ParamGroup.Free: nil or freed group")
	}
	err := g.table.Free()
	g.table = nil
	return err
}

// Workspace returns the Float64 elements of work GradNorm needs: one per block.
func (g *ParamGroup) Workspace() int { return max(g.blocks, 1) }

// operands lists the group's buffers for the checks of a call (moments when with).
func (g *ParamGroup) operands(op string, with bool) ([]operand, error) {
	if g == nil || g.table == nil {
		return nil, fmt.Errorf("cuda: %s: nil or freed ParamGroup", op)
	}
	if with && g.ms == nil {
		return nil, fmt.Errorf("cuda: %s: the group was made without moments", op)
	}
	ops := []operand{{name: "the group's table", b: g.table, dt: Int32, n: g.table.n}}
	for i, p := range g.params {
		ops = append(ops, operand{name: fmt.Sprintf("params[%d]", i), b: p, dt: g.dt, n: p.n}, operand{name: fmt.Sprintf("grads[%d]", i), b: g.grads[i], dt: g.dt, n: p.n})
		if with {
			ops = append(ops, operand{name: fmt.Sprintf("ms[%d]", i), b: g.ms[i], dt: g.dt, n: p.n}, operand{name: fmt.Sprintf("vs[%d]", i), b: g.vs[i], dt: g.dt, n: p.n})
		}
	}
	return ops, nil
}

func (g *ParamGroup) kernel() groupParams {
	return groupParams{table: g.table.ptr, count: int64(len(g.params)), blocks: int64(g.blocks)}
}

// AdamW applies one AdamW step (see AdamWParams; Decay per parameter as given to
// NewParamGroup) to every parameter of the group, in one launch.
func (g *ParamGroup) AdamW(lr, beta1, beta2, eps, weightDecay float64, step int) error {
	const op = "group adamw"
	if err := checkAdamW(op, lr, beta1, beta2, eps, weightDecay, step); err != nil {
		return err
	}
	ops, err := g.operands(op, true)
	if err != nil {
		return err
	}
	_, dt, _ := floatOf(op, "params[0]", g.params[0])
	return launchOn(op, ops, func(s *state) error {
		if g.blocks == 0 {
			return nil
		}
		kp := g.kernel()
		kp.lr, kp.weightDecay, kp.beta1, kp.beta2, kp.eps = lr, weightDecay, beta1, beta2, eps
		kp.c1, kp.c2 = 1-math.Pow(beta1, float64(step)), 1-math.Pow(beta2, float64(step))
		return s.startNN("fg_group_adamw", dt, [3]int{g.blocks, 1, 1}, ewThreads, unsafe.Pointer(&kp))
	})
}

// AdamWScheduled is AdamW with the values that change from step to step read by the kernel from
// device memory, so that a recorded launch (Capture) stays right on every replay: sched is
// Float64 [3] holding (lr, 1 − β1ᵗ, 1 − β2ᵗ) of the step (AdamWSchedule), written by the host
// before the launch runs. The kernel changes nothing when norm[0] (Float64 [1], GradNorm's) or,
// when loss is set, loss[0] (of the group's element type) is NaN or ±Inf: the step is skipped
// on the device, as a host that reads them first would skip it.
func (g *ParamGroup) AdamWScheduled(sched *Buffer, beta1, beta2, eps, weightDecay float64, norm, loss *Buffer) error {
	const op = "group adamw (scheduled)"
	if err := checkAdamW(op, 1, beta1, beta2, eps, weightDecay, 1); err != nil {
		return err
	}
	ops, err := g.operands(op, true)
	if err != nil {
		return err
	}
	ops = append(ops, operand{name: "sched", b: sched, dt: Float64, n: 3}, operand{name: "norm", b: norm, dt: Float64, n: 1},
		operand{name: "loss", b: loss, dt: g.dt, n: 1, optional: true})
	_, dt, _ := floatOf(op, "params[0]", g.params[0])
	return launchOn(op, ops, func(s *state) error {
		if g.blocks == 0 {
			return nil
		}
		kp := g.kernel()
		kp.weightDecay, kp.beta1, kp.beta2, kp.eps = weightDecay, beta1, beta2, eps
		kp.sched, kp.norm, kp.loss = sched.ptr, norm.ptr, ptrOf(loss)
		return s.startNN("fg_group_adamw", dt, [3]int{g.blocks, 1, 1}, ewThreads, unsafe.Pointer(&kp))
	})
}

// GradNorm computes norm[0] = √(Σ over the group's gradients of g²) (Float64 [1]) with work
// Float64 [g.Workspace()], in two launches, deterministically.
func (g *ParamGroup) GradNorm(norm, work *Buffer) error {
	const op = "group gradient norm"
	ops, err := g.operands(op, false)
	if err != nil {
		return err
	}
	ops = append(ops, operand{name: "norm", b: norm, dt: Float64, n: 1}, operand{name: "work", b: work, dt: Float64, n: g.Workspace(), atLeast: true})
	_, dt, _ := floatOf(op, "params[0]", g.params[0])
	return launchOn(op, ops, func(s *state) error {
		kp := g.kernel()
		kp.work, kp.norm = work.ptr, norm.ptr
		if g.blocks > 0 {
			if err := s.startNN("fg_group_sumsq", dt, [3]int{g.blocks, 1, 1}, ewThreads, unsafe.Pointer(&kp)); err != nil {
				return err
			}
		}
		fp := sumsqParams{work: work.ptr, out: norm.ptr, nwork: int64(g.blocks)}
		return s.start("nn", "fg_sumsq_final", [3]int{1, 1, 1}, redThreads, 0, unsafe.Pointer(&fp))
	})
}

// ClipByNorm scales every gradient of the group by maxNorm/norm[0] when maxNorm > 0 and
// maxNorm < norm[0] < +Inf (see the function ClipByNorm), in one launch.
func (g *ParamGroup) ClipByNorm(norm *Buffer, maxNorm float64) error {
	const op = "group clip by norm"
	if math.IsNaN(maxNorm) {
		return fmt.Errorf("cuda: %s: maxNorm is NaN", op)
	}
	ops, err := g.operands(op, false)
	if err != nil {
		return err
	}
	ops = append(ops, operand{name: "norm", b: norm, dt: Float64, n: 1})
	_, dt, _ := floatOf(op, "params[0]", g.params[0])
	return launchOn(op, ops, func(s *state) error {
		if g.blocks == 0 || !(maxNorm > 0) {
			return nil
		}
		kp := g.kernel()
		kp.norm, kp.maxNorm = norm.ptr, maxNorm
		return s.startNN("fg_group_clip", dt, [3]int{g.blocks, 1, 1}, ewThreads, unsafe.Pointer(&kp))
	})
}
