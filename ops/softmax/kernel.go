package softmax

import (
	"math"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// kind names a member of the softmax family.
type kind uint8

const (
	kindSoftmax kind = iota
	kindLogSoftmax
	kindLogSumExp
)

func (k kind) String() string {
	switch k {
	case kindSoftmax:
		return "Softmax"
	case kindLogSoftmax:
		return "LogSoftmax"
	case kindLogSumExp:
		return "LogSumExp"
	}
	return "unknown"
}

// layout views a tensor as [outer, n, inner] around the reduced axis
// (DESIGN.md): element (o, i, j) is at o·n·inner + i·inner + j, and the
// reduced tensor (log-sum-exp's output) holds row (o, j) at o·inner + j.
type layout struct{ outer, n, inner int }

// layoutOf returns the layout of shape around axis; axis must be in range.
func layoutOf(shape []int, axis int) layout {
	l := layout{outer: 1, n: shape[axis], inner: 1}
	for _, s := range shape[:axis] {
		l.outer *= s
	}
	for _, s := range shape[axis+1:] {
		l.inner *= s
	}
	return l
}

// panelWidth is how many strided rows (adjacent j of one o) the kernels walk
// together when inner > 1, so that every load is contiguous.
const panelWidth = 64

// minWork is the number of elements below which splitting over goroutines
// costs more than it saves.
const minWork = 1 << 14

// split calls body on disjoint ranges of the rows of l, over all cores.
// With inner == 1 a work item is one contiguous row; otherwise a panel of
// up to panelWidth strided rows of one outer index: item t covers
// o = t / panels, j ∈ [(t mod panels)·panelWidth, …) where panels =
// ⌈inner/panelWidth⌉.
func split(l layout, body func(lo, hi int)) {
	items, per := l.outer, l.n
	if l.inner > 1 {
		panels := (l.inner + panelWidth - 1) / panelWidth
		items, per = l.outer*panels, l.n*min(l.inner, panelWidth)
	}
	parallel.For(items, max(1, minWork/max(1, per)), body)
}

// panel returns the outer index and the column range [j0, j1) of work item t
// when inner > 1 (see split).
func (l layout) panel(t int) (o, j0, j1 int) {
	panels := (l.inner + panelWidth - 1) / panelWidth
	o, j0 = t/panels, (t%panels)*panelWidth
	return o, j0, min(j0+panelWidth, l.inner)
}

// stat is the state of the online softmax recurrence over one row after
// x_1 … x_i (seed documents 001 and 004):
//
//	m_i = max(m_{i−1}, x_i),   d_i = d_{i−1}·e^{m_{i−1}−m_i} + e^{x_i−m_i},
//
// so that softmax(x)_i = e^{x_i−m}/d and logsumexp(x) = m + log d.
// Computed in float64 whatever the element type: accumulated in float32, d
// was measured off by up to 1.6e-6 relative on rows of 4096 normal logits
// (1.3e-5 at 65536), over the 1e-6 budget for float32 results.
type stat struct{ m, d float64 }

// newStat is the empty row. m starts at −MaxFloat64 rather than −Inf so that
// an entry of −Inf contributes e^{−Inf} = 0 instead of e^{−Inf+Inf} = NaN;
// a row of only −Inf (or no entries) ends with d = 0.
func newStat() stat { return stat{m: -math.MaxFloat64} }

// add takes one step of the recurrence. Only one exponential is needed: when
// x is the new maximum the new term is e⁰ = 1 and the old sum is rescaled,
// otherwise the maximum stays and the term is e^{x−m}. A NaN fails x > m and
// makes d NaN for good.
func (s *stat) add(x float64) {
	if x > s.m {
		s.d = s.d*exp(s.m-x) + 1
		s.m = x
	} else {
		s.d += exp(x - s.m)
	}
}

// finish turns a row's statistics into what the output pass needs:
//
//	softmax      y_i = e^{x_i−m}·inv        (inv = 1/d)
//	log-softmax  y_i = (x_i − m) − logd     (logd = log d)
//	log-sum-exp  lse = m + log d
//
// with the edge cases folded in so that the element loops need no branch:
// a row of only −Inf (d = 0) gets inv = 0 and logd = 0, hence zeros and
// −Inf, and lse = −Inf; a row holding +Inf gets NaN throughout (+Inf − +Inf
// has no value); a NaN already made d NaN.
func (s stat) finish() (inv, logd, lse float64) {
	switch {
	case s.d == 0:
		return 0, 0, math.Inf(-1)
	case math.IsInf(s.m, 1):
		nan := math.NaN()
		return nan, nan, nan
	}
	logd = math.Log(s.d)
	return 1 / s.d, logd, s.m + logd
}

// forward computes the forward pass of k on x, viewed as l, into y:
//
//	softmax      y[o,i,j] = exp(x[o,i,j]) / Σ_i' exp(x[o,i',j])   (len(y) = outer·n·inner)
//	log-softmax  y[o,i,j] = x[o,i,j] − log Σ_i' exp(x[o,i',j])    (len(y) = outer·n·inner)
//	log-sum-exp  y[o,j]   = log Σ_i exp(x[o,i,j])                 (len(y) = outer·inner)
//
// Contiguous rows (inner = 1) run on the SIMD row kernels of
// internal/kernels/vec, a block of up to blockBytes at a time (forwardRow;
// large softmax outputs of one-block rows: forwardStreamed); strided rows
// walk panels of columns with the scalar recurrence (stat).
// Rows are split over all cores.
//
// This function is the one place the forward compute happens: the device
// implementation (device.go) takes over here, before the CPU loops.
func forward[T graph.Float](k kind, x, y []T, l layout) error {
	if ran, err := deviceForward(k, x, y, l); ran {
		return err
	}
	if l.inner == 1 {
		bl := blockLenOf[T]()
		if k == kindSoftmax && l.n <= bl && len(y)*int(unsafe.Sizeof(y[0])) >= streamBytes {
			split(l, func(lo, hi int) {
				forwardStreamed(x, y, l.n, lo, hi, make([]T, 2*l.n))
			})
			return nil
		}
		split(l, func(lo, hi int) {
			var mb []float64 // softmax: the running maximum after each block
			if k == kindSoftmax {
				mb = make([]float64, (l.n+bl-1)/bl)
			}
			for o := lo; o < hi; o++ {
				forwardRow(k, x[o*l.n:(o+1)*l.n], y, o, mb)
			}
		})
		return nil
	}
	split(l, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			forwardPanel(k, x, y, l, t)
		}
	})
	return nil
}

// blockBytes is the size of the blocks a contiguous row is taken in: a
// block of x and its block of y (the numerators) stay in the L1 cache
// together between the passes over the block.
const blockBytes = 16 << 10

// streamBytes is the output size from which softmax writes its output with
// non-temporal stores (forwardStreamed): an output this large does not stay
// in the last-level cache for the next op anyway, and streaming it saves
// reading every output line from memory before writing it. On the 2-core
// development machine (shared with other jobs), (4096, 4096) float32 ran at
// 30–34 GB/s streamed against 21–22 GB/s with ordinary stores, in the same
// sessions.
const streamBytes = 16 << 20

// blockLenOf is the number of entries of T in a block.
func blockLenOf[T graph.Float]() int {
	var z T
	return blockBytes / int(unsafe.Sizeof(z))
}

// addBlock takes the online recurrence over a block of entries in one step:
// with M = max of the block,
//
//	m' = max(m, M),   d' = d·e^{m−m'} + Σ_{i∈block} e^{x_i−m'},
//
// which is the recurrence of stat.add with the block's entries as one:
// vec.Max (raise), then vec.ExpShiftSum with the shift m'. When dst is not
// nil it receives the numerators e^{x_i−m'}, relative to the running
// maximum m' of this step.
func addBlock[T graph.Float](s *stat, x, dst []T) {
	s.d += vec.ExpShiftSum(dst, x, 1, raise(s, x))
}

// raise takes the maximum of block x into s (m' and the rescaled d of
// addBlock) and returns the shift of the block's exponentials, m' in T
// (exact: it is one of the entries). Before the first entry above −Inf the
// shift is 0: the block's entries are then −Inf (terms 0) or NaN (which
// makes d NaN, as it must); a NaN block maximum leaves m.
func raise[T graph.Float](s *stat, x []T) T {
	if bm := float64(vec.Max(x)); bm > s.m {
		s.d *= exp(s.m - bm)
		s.m = bm
	}
	if s.m == -math.MaxFloat64 {
		return 0
	}
	return T(s.m)
}

// forwardRow computes row o of a contiguous layout (inner = 1): x is the
// row, y the whole output, mb scratch of one float64 per block.
//
// Softmax keeps the numerators e^{x_i−m_b} of each block b, relative to the
// running maximum m_b after that block, in y; once the row's m and d are
// known one pass rescales them by e^{m_b−m}/d (one exponential per block).
// A row of up to a block (4096 float32s) is thus read once from memory:
// the maximum, the exponentials and the rescale run on the block in cache.
// Log-softmax writes (x_i − m) − log d in float64, rounded once.
func forwardRow[T graph.Float](k kind, x, y []T, o int, mb []float64) {
	n, bl := len(x), blockLenOf[T]()
	s := newStat()
	if k != kindSoftmax {
		for lo := 0; lo < n; lo += bl {
			addBlock(&s, x[lo:min(lo+bl, n)], nil)
		}
		_, logd, lse := s.finish()
		if k == kindLogSumExp {
			y[o] = T(lse)
			return
		}
		vec.SubShift(y[o*n:(o+1)*n], x, s.m, logd)
		return
	}
	out := y[o*n : (o+1)*n]
	for b, lo := 0, 0; lo < n; b, lo = b+1, lo+bl {
		hi := min(lo+bl, n)
		addBlock(&s, x[lo:hi], out[lo:hi])
		mb[b] = s.m
	}
	inv, _, _ := s.finish()
	for b, lo := 0, 0; lo < n; b, lo = b+1, lo+bl {
		f := inv // a row of only −Inf has inv = 0 and numerators 0
		if mb[b] != s.m {
			f *= exp(mb[b] - s.m)
		}
		vec.Scale(out[lo:min(lo+bl, n)], T(f))
	}
}

// forwardStreamed computes the softmax rows [lo, hi) of a contiguous layout
// of n ≤ one block per row into an output of at least streamBytes, as a
// pipeline over the rows: while the numerators of row o go into one half of
// scratch (2n entries), row o − 1 is written from the other half, scaled by
// its 1/d, with non-temporal stores (y's lines are never read), and row
// o + 1 is loaded into the cache (vec.ExpShiftSumStream). Each row of x is
// read once from memory and each row of y written once, the loads, the
// exponentials and the stores overlapping.
func forwardStreamed[T graph.Float](x, y []T, n, lo, hi int, scratch []T) {
	var prevOut, prevNum []T
	var prevInv T
	for o := lo; o < hi; o++ {
		xr, num := x[o*n:(o+1)*n], scratch[(o%2)*n:(o%2+1)*n]
		var next []T
		if o+1 < hi {
			next = x[(o+1)*n : (o+2)*n]
		}
		s := newStat()
		s.d += vec.ExpShiftSumStream(num, xr, next, raise(&s, xr), prevOut, prevNum, prevInv)
		inv, _, _ := s.finish() // 0 for a row of only −Inf, whose numerators are 0
		prevOut, prevNum, prevInv = y[o*n:(o+1)*n], num, T(inv)
	}
	vec.StreamScaled(prevOut, prevNum, prevInv)
}

// forwardPanel computes work item t of a strided layout (inner > 1): the
// rows (o, j) for j in the item's column range, walked along i so that each
// step reads w contiguous elements.
func forwardPanel[T graph.Float](k kind, x, y []T, l layout, t int) {
	o, j0, j1 := l.panel(t)
	w := j1 - j0
	var st [panelWidth]stat
	for c := range w {
		st[c] = newStat()
	}
	base := o * l.n * l.inner
	for i := range l.n {
		row := x[base+i*l.inner+j0 : base+i*l.inner+j1]
		for c, v := range row {
			st[c].add(float64(v))
		}
	}
	var inv, logd [panelWidth]float64
	for c := range w {
		var lse float64
		inv[c], logd[c], lse = st[c].finish()
		if k == kindLogSumExp {
			y[o*l.inner+j0+c] = T(lse)
		}
	}
	if k == kindLogSumExp {
		return
	}
	for i := range l.n {
		off := base + i*l.inner
		row, out := x[off+j0:off+j1], y[off+j0:off+j1]
		if k == kindSoftmax {
			for c, v := range row {
				out[c] = T(exp(float64(v)-st[c].m) * inv[c])
			}
		} else {
			for c, v := range row {
				out[c] = T((float64(v) - st[c].m) - logd[c])
			}
		}
	}
}

// backward computes the gradient dx of k, viewed as l, from what the forward
// left in the graph:
//
//	softmax      dx = y∘(dy − Σ_i dy∘y)                 from y = softmax(x), dy
//	log-softmax  dx = dy − exp(y)∘Σ_i dy                from y = logsoftmax(x), dy
//	log-sum-exp  dx = softmax(x)∘dy (dy broadcast on i) from x, y = logsumexp(x), dy
//
// where Σ_i sums along the reduced axis. x is read by log-sum-exp only (nil
// otherwise); for log-sum-exp y and dy have outer·inner elements.
// Rows of only −Inf get a zero gradient: softmax's y is 0 there already,
// log-softmax's rows with every y = −Inf and log-sum-exp's rows with
// y = −Inf are set to 0 explicitly. NaN in y or dy stays in its row.
//
// Log-sum-exp's softmax is e^{x_i−y}/Σ_i' e^{x_i'−y}: the saved y is used
// as the shift that keeps the exponentials in range, and dividing by their
// sum cancels the rounding of y (a float32 y near 1e4 is off by up to
// 5e-4, which e^{x−y} alone would turn into as large a relative error).
//
// This function is the one place the backward compute happens: the device
// implementation (device.go) takes over here, before the CPU loops.
func backward[T graph.Float](k kind, x, y, dy, dx []T, l layout) error {
	if ran, err := deviceBackward(k, x, y, dy, dx, l); ran {
		return err
	}
	if l.inner == 1 {
		split(l, func(lo, hi int) {
			for o := lo; o < hi; o++ {
				r := o * l.n
				dxr := dx[r : r+l.n]
				switch k {
				case kindSoftmax:
					softmaxGradRow(y[r:r+l.n], dy[r:r+l.n], dxr)
				case kindLogSoftmax:
					logSoftmaxGradRow(y[r:r+l.n], dy[r:r+l.n], dxr)
				case kindLogSumExp:
					logSumExpGradRow(x[r:r+l.n], float64(y[o]), float64(dy[o]), dxr)
				}
			}
		})
		return nil
	}
	split(l, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			backwardPanel(k, x, y, dy, dx, l, t)
		}
	})
	return nil
}

func softmaxGradRow[T graph.Float](y, dy, dx []T) { vec.SoftmaxGrad(dx, y, dy) }

func logSoftmaxGradRow[T graph.Float](y, dy, dx []T) { vec.LogSoftmaxGrad(dx, y, dy) }

func logSumExpGradRow[T graph.Float](x []T, lse, g float64, dx []T) {
	if math.IsInf(lse, -1) {
		clear(dx)
		return
	}
	// First pass: the unnormalized weights, kept in dx; second: scale.
	f := g / vec.ExpShiftSum(dx, x, 1, T(lse))
	vec.Scale(dx, T(f))
}

// backwardPanel is backward on work item t of a strided layout (inner > 1),
// the same three formulas with one accumulator per column.
func backwardPanel[T graph.Float](k kind, x, y, dy, dx []T, l layout, t int) {
	o, j0, j1 := l.panel(t)
	w := j1 - j0
	base := o * l.n * l.inner
	rows := func(a []T, i int) []T { return a[base+i*l.inner+j0 : base+i*l.inner+j1] }
	var s [panelWidth]float64
	switch k {
	case kindSoftmax:
		for i := range l.n {
			yr, dyr := rows(y, i), rows(dy, i)
			for c, v := range yr {
				s[c] += float64(dyr[c]) * float64(v)
			}
		}
		for i := range l.n {
			yr, dyr, dxr := rows(y, i), rows(dy, i), rows(dx, i)
			for c, v := range yr {
				dxr[c] = T(float64(v) * (float64(dyr[c]) - s[c]))
			}
		}
	case kindLogSoftmax:
		var live [panelWidth]bool // some y > −Inf (or NaN) in the row
		for i := range l.n {
			yr, dyr := rows(y, i), rows(dy, i)
			for c, v := range yr {
				s[c] += float64(dyr[c])
				live[c] = live[c] || !math.IsInf(float64(v), -1)
			}
		}
		for i := range l.n {
			yr, dyr, dxr := rows(y, i), rows(dy, i), rows(dx, i)
			for c, v := range yr {
				if live[c] {
					dxr[c] = T(float64(dyr[c]) - exp(float64(v))*s[c])
				} else {
					dxr[c] = 0
				}
			}
		}
	case kindLogSumExp:
		var lse, g [panelWidth]float64
		for c := range w {
			lse[c] = float64(y[o*l.inner+j0+c])
			g[c] = float64(dy[o*l.inner+j0+c])
		}
		for i := range l.n {
			xr, dxr := rows(x, i), rows(dx, i)
			for c, v := range xr {
				if math.IsInf(lse[c], -1) {
					dxr[c] = 0
					continue
				}
				p := exp(float64(v) - lse[c])
				dxr[c] = T(p)
				s[c] += p
			}
		}
		var f [panelWidth]float64
		for c := range w {
			if !math.IsInf(lse[c], -1) {
				f[c] = g[c] / s[c]
			}
		}
		for i := range l.n {
			dxr := rows(dx, i)
			for c, v := range dxr {
				dxr[c] = T(float64(v) * f[c])
			}
		}
	}
}
