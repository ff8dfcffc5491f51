package cuda

import (
	"fmt"
	"structs"
	"unsafe"
)

// stridedParams is fg_strided_params (kernels/strided.cu).
type stridedParams struct {
	_                   structs.HostLayout
	x, y                devptr
	n                   [4]int64
	xs, ys              [4]int64
	total               int64
	alpha, fill         float64
	accumulate, reserve int32
}

// StridedParams describes a move of elements between strided layouts over the index space
// Shape[0] × Shape[1] × Shape[2] × Shape[3] (unused leading dimensions 1):
//
//	v = Alpha·X[XOff + Σ_k i_k·XStride[k]]      (v = Fill when X is nil)
//	Y[YOff + Σ_k i_k·YStride[k]] = v            (+= v with Accumulate)
//
// Strides count elements and are ≥ 0; a zero X stride broadcasts (Gorgonia's repeat). X and
// Y are both Float32 or both Float64, distinct buffers or views that do not overlap. Every
// element read or written must lie inside its buffer. Each output element must be the image of
// at most one index (Y's strides map the space one-to-one), which the launcher checks for the
// layouts it sees (nonzero strides).
type StridedParams struct {
	Shape            [4]int
	X, Y             *Buffer
	XOff, YOff       int
	XStride, YStride [4]int
	Alpha, Fill      float64
	Accumulate       bool
}

// Strided launches the move p describes, without waiting.
func Strided(p StridedParams) error {
	const op = "strided copy"
	DT, dt, err := floatOf(op, "Y", p.Y)
	if err != nil {
		return err
	}
	total := 1
	xEnd, yEnd := p.XOff, p.YOff
	for k, n := range p.Shape {
		if n < 0 || p.XStride[k] < 0 || p.YStride[k] < 0 {
			return fmt.Errorf("cuda: %s: Shape %v, XStride %v, YStride %v: want sizes and strides ≥ 0", op, p.Shape, p.XStride, p.YStride)
		}
		if n > 1 && p.YStride[k] == 0 {
			return fmt.Errorf("cuda: %s: Shape %v with YStride %v writes one element twice", op, p.Shape, p.YStride)
		}
		total *= n
		if n > 0 {
			xEnd += (n - 1) * p.XStride[k]
			yEnd += (n - 1) * p.YStride[k]
		}
	}
	if p.XOff < 0 || p.YOff < 0 {
		return fmt.Errorf("cuda: %s: XOff=%d YOff=%d, want ≥ 0", op, p.XOff, p.YOff)
	}
	ops := []operand{{name: "Y", b: p.Y, dt: DT, n: yEnd + 1, atLeast: true}}
	if p.X != nil {
		ops = append(ops, operand{name: "X", b: p.X, dt: DT, n: xEnd + 1, atLeast: true})
	}
	return launchOn(op, ops, func(s *state) error {
		if total == 0 {
			return nil
		}
		kp := stridedParams{y: p.Y.ptr + devptr(p.YOff*DT.Size()), total: int64(total), alpha: p.Alpha, fill: p.Fill}
		if p.X != nil {
			kp.x = p.X.ptr + devptr(p.XOff*DT.Size())
		}
		for k := range 4 {
			kp.n[k], kp.xs[k], kp.ys[k] = int64(max(p.Shape[k], 1)), int64(p.XStride[k]), int64(p.YStride[k])
		}
		if p.Accumulate {
			kp.accumulate = 1
		}
		return s.start("strided", "fg_strided_"+dt.String(), ewGrid(total), ewThreads, 0, unsafe.Pointer(&kp))
	})
}
