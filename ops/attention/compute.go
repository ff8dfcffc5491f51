package attention

import "fmt"

// The two compute entry points. Everything above them (the Gorgonia ops)
// deals in graph values; everything below (kernel.go, tile.go) in slices.
// A device backend adds one branch at the top of each function: given p and
// the slices, it runs the same computation on the device and returns, or
// falls through to the CPU kernels when no device is available.

// forwardCompute runs the fused forward for p on the flat slices q
// [B,H,Nq,D], k and v [B,Hkv,Nk,D] (all []float32 or all []float64) and
// writes packed = [O (B·H·Nq·D) | L (B·H·Nq) | L's rounding residual
// (B·H·Nq)] of the same element type (see flashForward).
func forwardCompute(p *params, q, k, v, packed any) error {
	if done, err := deviceForward(p, q, k, v, packed); done {
		return err
	}
	switch q := q.(type) {
	case []float32:
		return forwardTyped(p, q, k, v, packed)
	case []float64:
		return forwardTyped(p, q, k, v, packed)
	default:
		return fmt.Errorf("unsupported element type %T", q)
	}
}

func forwardTyped[T Float](p *params, q []T, k, v, packed any) error {
	kk, ok1 := k.([]T)
	vv, ok2 := v.([]T)
	out, ok3 := packed.([]T)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("mixed element types: q %T, k %T, v %T, out %T", q, k, v, packed)
	}
	oLen, lLen := p.QLen(), p.LLen()
	flashForward(p, q, kk, vv, out[:oLen], out[oLen:oLen+lLen], out[oLen+lLen:])
	return nil
}

// backwardCompute runs the fused backward for p: from q, k, v, the forward's
// packed [O | L | residual] and its gradient dPacked [dO | dL | unused], it
// writes
// grads = [dQ (B·H·Nq·D) | dK (B·Hkv·Nk·D) | dV (B·Hkv·Nk·D)].
func backwardCompute(p *params, q, k, v, packed, dPacked, grads any) error {
	if done, err := deviceBackward(p, q, k, v, packed, dPacked, grads); done {
		return err
	}
	switch q := q.(type) {
	case []float32:
		return backwardTyped(p, q, k, v, packed, dPacked, grads)
	case []float64:
		return backwardTyped(p, q, k, v, packed, dPacked, grads)
	default:
		return fmt.Errorf("unsupported element type %T", q)
	}
}

func backwardTyped[T Float](p *params, q []T, k, v, packed, dPacked, grads any) error {
	kk, ok1 := k.([]T)
	vv, ok2 := v.([]T)
	pk, ok3 := packed.([]T)
	dpk, ok4 := dPacked.([]T)
	out, ok5 := grads.([]T)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return fmt.Errorf("mixed element types: q %T, k %T, v %T, packed %T, dPacked %T, grads %T",
			q, k, v, packed, dPacked, grads)
	}
	oLen, lLen, kLen := p.QLen(), p.LLen(), p.KLen()
	flashBackward(p, q, kk, vv, pk[:oLen], pk[oLen:oLen+lLen], pk[oLen+lLen:], dpk[:oLen], dpk[oLen:oLen+lLen],
		out[:oLen], out[oLen:oLen+kLen], out[oLen+kLen:])
	return nil
}
