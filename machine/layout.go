package machine

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A data-movement op (Gorgonia's transpose, slice, concat, the slice's gradient sliceIncr)
// only moves elements: each output element is an input element or zero. Rather than read the
// op's unexported fields, the machine asks the op itself, once, when it plans the graph: it
// runs the op on the host over inputs whose elements hold their own positions (input k's
// element i holds base_k + i + 1) and reads off, for every output element, where it came
// from (0: nowhere, a zero). Each input's part of that map is then fitted with an affine
// (strided) layout over at most 4 axes; a map that no such layout reproduces exactly is not
// a move the machine can make on a device, and the op runs on the host.

// move is one strided copy of a movement op: over the index space Shape,
//
//	out[YOff + Σ_k i_k·YStride[k]] = in[Input][XOff + Σ_k i_k·XStride[k]]
//
// or, with Input < 0, out[...] = 0.
type move struct {
	Input            int
	Shape            [4]int
	XOff, YOff       int
	XStride, YStride [4]int
}

// movesOf returns the strided copies that compute op's output from its inputs, in order (a
// zero fill first where some output elements come from no input), or ok = false when op's
// element map has no such form. in and out are the nodes' shapes; dt their element type.
func movesOf(op gorgonia.Op, dt tensor.Dtype, in []tensor.Shape, out tensor.Shape) (moves []move, ok bool, err error) {
	total := 0
	for _, s := range in {
		total += size(s)
	}
	// float32 holds every integer up to 2^24 exactly.
	if dt != tensor.Float32 && dt != tensor.Float64 || dt == tensor.Float32 && total >= 1<<24 {
		return nil, false, nil
	}
	args := make([]gorgonia.Value, len(in))
	base := 0
	for k, s := range in {
		if s.IsScalar() {
			return nil, false, nil
		}
		v, err := newHostValue(dt, s)
		if err != nil {
			return nil, false, err
		}
		switch d := v.Data().(type) {
		case []float32:
			for i := range d {
				d[i] = float32(base + i + 1)
			}
		case []float64:
			for i := range d {
				d[i] = float64(base + i + 1)
			}
		default:
			return nil, false, nil
		}
		args[k] = v
		base += size(s)
	}
	res, err := op.Do(args...)
	if err != nil {
		return nil, false, nil // not a movement op this function understands: the host runs it
	}
	src, err := float64s(res, dt)
	if err != nil || len(src) != size(out) {
		return nil, false, nil
	}
	// from[k][i] is the output position of input k's element i (-1: not moved); an element
	// moved twice is not a move.
	from := make([][]int, len(in))
	starts := make([]int, len(in))
	base = 0
	for k, s := range in {
		from[k], starts[k] = make([]int, size(s)), base
		for i := range from[k] {
			from[k][i] = -1
		}
		base += size(s)
	}
	zeros := false
	for p, v := range src {
		if v == 0 {
			zeros = true
			continue
		}
		g := int(v) - 1
		if float64(g+1) != v || g < 0 || g >= total {
			return nil, false, nil
		}
		k := 0
		for k+1 < len(in) && g >= starts[k+1] {
			k++
		}
		i := g - starts[k]
		if from[k][i] >= 0 {
			return nil, false, nil
		}
		from[k][i] = p
	}
	if zeros {
		moves = append(moves, move{Input: -1, Shape: [4]int{1, 1, 1, len(src)}, YStride: [4]int{0, 0, 0, 1}})
	}
	for k, s := range in {
		used := 0
		for _, p := range from[k] {
			if p >= 0 {
				used++
			}
		}
		switch {
		case used == 0:
			// Input k is not read (sliceIncr's first input gives only its shape).
			continue
		case used == len(from[k]):
			// Every element of input k lands once: fit the output position over k's index
			// space (transpose, concat, the gradient of a slice).
			sh, sx, ok := fitAffine(s, func(i int) int { return i })
			if !ok {
				return nil, false, nil
			}
			_, sy, ok2 := fitAffineOff(s, func(i int) int { return from[k][i] })
			if !ok2 {
				return nil, false, nil
			}
			moves = append(moves, move{Input: k, Shape: sh, XStride: sx, YOff: from[k][0], YStride: sy})
			continue
		}
		// Some elements are dropped (a slice): only one input can be read this way, and it
		// must fill the whole output; fit the input position over the output's index space.
		if used != len(src) || zeros {
			return nil, false, nil
		}
		sh, sy, ok := fitAffine(out, func(p int) int { return p })
		if !ok {
			return nil, false, nil
		}
		_, sx, ok2 := fitAffineOff(out, func(p int) int { return int(src[p]) - 1 })
		if !ok2 {
			return nil, false, nil
		}
		moves = append(moves, move{Input: 0, Shape: sh, XOff: int(src[0]) - 1, YStride: sy, XStride: sx})
	}
	return moves, true, nil
}

// float64s returns the elements of v, a value of dt, as float64 (elements' traversal: a view
// materialized, a scalar as one element).
func float64s(v gorgonia.Value, dt tensor.Dtype) ([]float64, error) {
	if dt == tensor.Float64 {
		e, err := elements[float64](v)
		return append([]float64(nil), e...), err
	}
	e, err := elements[float32](v)
	out := make([]float64, len(e))
	for i, x := range e {
		out[i] = float64(x)
	}
	return out, err
}

// fitAffine is fitAffineOff for a map known to start at 0.
func fitAffine(s tensor.Shape, at func(i int) int) ([4]int, [4]int, bool) {
	sh, st, ok := fitAffineOff(s, at)
	return sh, st, ok && at(0) == 0
}

// fitAffineOff fits at, a map from the row-major positions of index space s, as
// at(i) = at(0) + Σ_k i_k·stride[k] over s's axes (axes of length 1 dropped, at most 4 left,
// padded in front to 4). It checks every position and reports whether the fit is exact and
// every stride is ≥ 0.
func fitAffineOff(s tensor.Shape, at func(i int) int) (shape, stride [4]int, ok bool) {
	var dims []int
	for _, n := range s {
		if n != 1 {
			dims = append(dims, n)
		}
	}
	if len(dims) > 4 {
		return shape, stride, false
	}
	off := 4 - len(dims)
	for k := range shape {
		shape[k] = 1
	}
	step := 1 // row-major step of axis k in the index space
	for k := len(dims) - 1; k >= 0; k-- {
		shape[off+k] = dims[k]
		if dims[k] > 1 {
			stride[off+k] = at(step) - at(0)
			if stride[off+k] < 0 {
				return shape, stride, false
			}
		}
		step *= dims[k]
	}
	a0 := at(0)
	n := step
	for i := 0; i < n; i++ {
		r, want := i, a0
		for k := 3; k >= 0; k-- {
			want += (r % shape[k]) * stride[k]
			r /= shape[k]
		}
		if at(i) != want {
			return shape, stride, false
		}
	}
	return shape, stride, true
}

func (m move) String() string {
	return fmt.Sprintf("in%d %v x@%d%v y@%d%v", m.Input, m.Shape, m.XOff, m.XStride, m.YOff, m.YStride)
}
