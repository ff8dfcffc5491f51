package vec

import (
	"math"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// The row kernels of nn's layers: GELU and its gradient, the rows of
// LayerNorm / RMSNorm and their gradient, the affine map x·γ + β, column
// sums (the gradients of biases and gains) and the AdamW update. As for the
// softmax kernels, float32 runs Go assembly where the machine has it
// (AVX-512 or AVX2+FMA, nn_amd64.s) and float64 runs Go loops, exact as the
// gradient-check path needs; each function is called on a block of rows, so
// that the caller splits the work over cores (internal/parallel) and one
// call amortizes the dispatch.
//
// For x, y, g [rows, d] row-major (d = len(γ) or len(β) for AffineRows):
//
//	GELU(y, x)                 y = gelu(x) = x·σ(2u),  u = √(2/π)·(x + 0.044715·x³)
//	GELUGrad(y, x, g)          y = g∘gelu'(x)
//	NormRows(y, x, d, c, eps)  y = (x − μ)·r per row,  r = 1/√(mean((x − μ)²) + eps),
//	                           μ = mean(x) when c (LayerNorm), 0 otherwise (RMSNorm)
//	NormGradRows(dx, x, g, …)  dx = r·(g − mean(g) − x̂·mean(g∘x̂)) (without mean(g) when !c)
//	AffineRows(y, x, γ, β)     y[r, j] = x[r, j]·γ[j] + β[j] (γ or β may be nil)
//	ColSums(acc, x, y, d)      acc[j] += Σ_r x[r, j]·y[r, j] (y nil: Σ_r x[r, j]), in float64
//
// Norm statistics and column sums are accumulated in float64 for float32
// too, and the norm rows are computed in float64 and rounded once; GELU in
// float32 is float32 arithmetic around the vectorized exponential (its
// error against float64 is a few ulp of the argument's rounding). Results
// do not depend on how the caller splits rows over cores.

// geluC is the cubic coefficient of GELU's tanh approximation, geluK √(2/π).
const (
	geluC = 0.044715
	geluK = 0.7978845608028654
)

// nnKernels32 is one instruction set's float32 nn kernels; each takes any
// length (the lengths agree, checked by the exported functions).
type nnKernels32 struct {
	geluArg      func(dst, x []float32)       // dst = −2√(2/π)·(x + c·x³)
	geluOut      func(dst, x, e []float32)    // dst = x/(1 + e)
	geluGradOut  func(dst, x, e, g []float32) // dst = g·gelu'(x) from e = e^{−2u}
	normRows     func(y, x []float32, d int, center bool, eps float64)
	normGradRows func(dx, x, g []float32, d int, center bool, eps float64)
	affineRows   func(y, x, gamma, beta []float32)
	colSums      func(acc []float64, x, y []float32, d int)
	copyRows     func(dst, src []float32, rows, d, ds, ss int) // checked: rows ≥ 1, in bounds
	adamW        func(p, g, m, v []float32, h *AdamWStep)
}

// nk32 holds the float32 nn kernels of the level in force.
var nk32 = nnKernelsFor(level)

func nnKernelsFor(l isa.Level) *nnKernels32 {
	if k := asmNNKernels(l); k != nil {
		return k
	}
	return &genericNN32
}

var genericNN32 = nnKernels32{
	geluArg:      geluArgGo,
	geluOut:      geluOutGo,
	geluGradOut:  geluGradOutGo,
	normRows:     normRowsGo[float32],
	normGradRows: normGradRowsGo[float32],
	affineRows:   affineRowsGo[float32],
	colSums:      colSumsGo[float32],
	copyRows:     copyRowsGo,
	adamW:        adamWGo[float32],
}

// geluBlock is the float32 GELU's block: the exponentials of a block are
// computed in a buffer of this many entries on the stack (in L1).
const geluBlock = 256

// GELU sets y_i = gelu(x_i) = x_i·σ(2u_i), u = √(2/π)·(x + 0.044715·x³)
// (½·x·(1 + tanh u), GPT-2's approximation, with one exponential). y may
// be x.
func GELU[T Float](y, x []T) {
	y = y[:len(x)]
	if !is32[T]() {
		geluGo64(f64(y), f64(x), nil)
		return
	}
	gelu32(f32(y), f32(x), nil)
}

// GELUGrad sets y_i = g_i·gelu'(x_i),
//
//	gelu'(x) = s + 2·x·s·(1 − s)·√(2/π)·(1 + 3·0.044715·x²),   s = σ(2u)
//
// with 1 − s taken as s·e^{−2u} (no cancellation as s → 1). y may be x or g.
// In float32, results below 2⁻¹²⁶ in magnitude (subnormals: g small and x
// far below 0) are 0: the products that read y (nn's g·Wᵀ and xᵀ·g) took a
// microcode assist for each vector holding one, and a trained width-384
// model's gradient held 0.6% of them (its steps ran 2.2× slower;
// cmd/cpubench/results/dev-2026-11-24-s10.md).
func GELUGrad[T Float](y, x, g []T) {
	y, g = y[:len(x)], g[:len(x)]
	if !is32[T]() {
		geluGo64(f64(y), f64(x), f64(g))
		return
	}
	gelu32(f32(y), f32(x), f32(g))
}

// gelu32 is GELU (g nil) or GELUGrad in float32, a block of geluBlock
// elements at a time: e = e^{−2u} of the block by the exponential kernel,
// then the output from x and e (and g).
func gelu32(y, x, g []float32) {
	var buf [geluBlock]float32
	for len(x) > 0 {
		n := min(len(x), geluBlock)
		e := buf[:n]
		nk32.geluArg(e, x[:n])
		k32.expSum(e, e, nil, 1, 0, baseE)
		if g == nil {
			nk32.geluOut(y[:n], x[:n], e)
		} else {
			nk32.geluGradOut(y[:n], x[:n], e, g[:n])
			g = g[n:]
		}
		x, y = x[n:], y[n:]
	}
}

// geluGo64 is GELU (g nil) or GELUGrad in float64 with math.Exp.
func geluGo64(y, x, g []float64) {
	for i, v := range x {
		s := 1 / (1 + math.Exp(-2*geluK*(v+geluC*v*v*v)))
		if g == nil {
			y[i] = v * s
			continue
		}
		y[i] = g[i] * (s + 2*v*s*(1-s)*geluK*(1+3*geluC*v*v))
	}
}

// The float32 GELU's constants: z = k2n·(x + c·x³) = −2u, and the
// derivative's k2 + k3·x².
const (
	geluK2n = float32(-2 * geluK)
	geluC32 = float32(geluC)
	geluK2  = float32(2 * geluK)
	geluK3  = float32(geluK * 2 * 3 * geluC)
)

func geluArgGo(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = geluK2n * (v + geluC32*v*v*v)
	}
}

func geluOutGo(dst, x, e []float32) {
	dst, e = dst[:len(x)], e[:len(x)]
	for i, v := range x {
		dst[i] = v / (1 + e[i])
	}
}

func geluGradOutGo(dst, x, e, g []float32) {
	dst, e, g = dst[:len(x)], e[:len(x)], g[:len(x)]
	for i, v := range x {
		s := 1 / (1 + e[i])
		se := s * e[i]  // 1 − s = e/(1 + e)
		if !(se <= 1) { // e = +Inf: e/(1 + e) → 1 (s·e would be 0·Inf)
			se = 1
		}
		r := g[i] * (s + s*se*v*(geluK2+geluK3*v*v))
		if r > -0x1p-126 && r < 0x1p-126 { // a subnormal: 0 (see GELUGrad)
			r = 0
		}
		dst[i] = r
	}
}

// NormRows normalizes each row of length d > 0 of x into y: y = (x − μ)·r,
// r = 1/√(mean((x − μ)²) + eps), μ = mean(x) when center (LayerNorm) and 0
// otherwise (RMSNorm). Statistics and results are computed in float64 and
// rounded once. len(x) must be a multiple of d; y may be x.
func NormRows[T Float](y, x []T, d int, center bool, eps float64) {
	y = y[:len(x)]
	if is32[T]() {
		nk32.normRows(f32(y), f32(x), d, center, eps)
		return
	}
	normRowsGo(f64(y), f64(x), d, center, eps)
}

// NormGradRows sets, for each row of length d of x and g = ∂L/∂x̂, the
// gradient of NormRows:
//
//	center:  dx = r·(g − mean(g) − x̂·mean(g∘x̂))
//	!center: dx = r·(g − x̂·mean(g∘x̂))
//
// recomputing μ and r from x. dx may be g.
func NormGradRows[T Float](dx, x, g []T, d int, center bool, eps float64) {
	dx, g = dx[:len(x)], g[:len(x)]
	if is32[T]() {
		nk32.normGradRows(f32(dx), f32(x), f32(g), d, center, eps)
		return
	}
	normGradRowsGo(f64(dx), f64(x), f64(g), d, center, eps)
}

// rowStatsGo returns μ (0 without centering) and r = 1/√(var + eps) of one
// row, accumulated in float64.
func rowStatsGo[T Float](x []T, center bool, eps float64) (mu, r float64) {
	n := float64(len(x))
	if center {
		for _, v := range x {
			mu += float64(v)
		}
		mu /= n
	}
	var ss float64
	for _, v := range x {
		c := float64(v) - mu
		ss += c * c
	}
	return mu, 1 / math.Sqrt(ss/n+eps)
}

func normRowsGo[T Float](y, x []T, d int, center bool, eps float64) {
	for r := 0; r+d <= len(x); r += d {
		xr, yr := x[r:r+d], y[r:r+d]
		mu, inv := rowStatsGo(xr, center, eps)
		for j, v := range xr {
			yr[j] = T((float64(v) - mu) * inv)
		}
	}
}

func normGradRowsGo[T Float](dx, x, g []T, d int, center bool, eps float64) {
	n := float64(d)
	for r := 0; r+d <= len(x); r += d {
		xr, gr, dr := x[r:r+d], g[r:r+d], dx[r:r+d]
		mu, inv := rowStatsGo(xr, center, eps)
		var sg, sgx float64
		for j, v := range xr {
			gv := float64(gr[j])
			sg += gv
			sgx += gv * (float64(v) - mu) * inv
		}
		mg, mgx := sg/n, sgx/n
		if !center {
			mg = 0
		}
		for j, v := range xr {
			xh := (float64(v) - mu) * inv
			dr[j] = T(inv * (float64(gr[j]) - mg - xh*mgx))
		}
	}
}

// AffineRows sets y[r, j] = x[r, j]·γ[j] + β[j] for every row of x, of
// length d = len(γ) (or len(β) when γ is nil; one of them must be given),
// leaving out γ or β when it is nil. Float32 rounds the product and the sum
// separately. y may be x.
func AffineRows[T Float](y, x, gamma, beta []T) {
	y = y[:len(x)]
	if gamma != nil && beta != nil {
		beta = beta[:len(gamma)]
	}
	if is32[T]() {
		nk32.affineRows(f32(y), f32(x), f32(gamma), f32(beta))
		return
	}
	affineRowsGo(f64(y), f64(x), f64(gamma), f64(beta))
}

func affineRowsGo[T Float](y, x, gamma, beta []T) {
	d := len(gamma)
	if gamma == nil {
		d = len(beta)
	}
	if d == 0 {
		return
	}
	for r := 0; r+d <= len(x); r += d {
		xr, yr := x[r:r+d], y[r:r+d]
		switch {
		case gamma != nil && beta != nil:
			for j := range xr {
				yr[j] = xr[j]*gamma[j] + beta[j]
			}
		case gamma != nil:
			for j := range xr {
				yr[j] = xr[j] * gamma[j]
			}
		default:
			for j := range xr {
				yr[j] = xr[j] + beta[j]
			}
		}
	}
}

// ColSums adds the column sums of the rows of length d of x (y nil) or of
// x∘y (the products in float64) to acc [d], in float64: acc[j] += s[j],
// s[j] = Σ_r x[r, j]·y[r, j] summed from 0 in row order. Every level gives
// the same bits, so a caller that sums fixed blocks of rows and then the
// blocks' partials in order gets results that do not depend on the number
// of cores or the instruction set.
func ColSums[T Float](acc []float64, x, y []T, d int) {
	acc = acc[:d]
	if y != nil {
		y = y[:len(x)]
	}
	if is32[T]() {
		nk32.colSums(acc, f32(x), f32(y), d)
		return
	}
	colSumsGo(acc, f64(x), f64(y), d)
}

func colSumsGo[T Float](acc []float64, x, y []T, d int) { colSumsFrom(acc, x, y, d, 0) }

// colSumsFrom is ColSums on the columns [j0, d), in blocks of 64 columns
// summed from 0 in row order and then added to acc, as the assembly does.
func colSumsFrom[T Float](acc []float64, x, y []T, d, j0 int) {
	rows := len(x) / d
	var buf [64]float64
	for j := j0; j < d; j += len(buf) {
		s := buf[:min(len(buf), d-j)]
		clear(s)
		for r := 0; r < rows; r++ {
			xr := x[r*d+j : r*d+j+len(s)]
			if y != nil {
				yr := y[r*d+j : r*d+j+len(s)]
				for i, v := range xr {
					s[i] += float64(v) * float64(yr[i])
				}
				continue
			}
			for i, v := range xr {
				s[i] += float64(v)
			}
		}
		for i, v := range s {
			acc[j+i] += v
		}
	}
}

// CopyRows copies rows blocks of d entries between strided layouts:
//
//	dst[r·ds + j] = src[r·ss + j]    r < rows, j < d
//
// (the moves of attention heads between the rows of a projection and the
// [B, H, N, d] layout). The blocks must not overlap. Values are moved as
// bits, so float64 runs the float32 code on twice the entries.
func CopyRows[T Float](dst, src []T, rows, d, ds, ss int) {
	if rows <= 0 || d <= 0 {
		return
	}
	_, _ = dst[(rows-1)*ds+d-1], src[(rows-1)*ss+d-1] // bounds, once
	if is32[T]() {
		nk32.copyRows(f32(dst), f32(src), rows, d, ds, ss)
		return
	}
	d32 := f32Bits(f64(dst))
	s32 := f32Bits(f64(src))
	nk32.copyRows(d32, s32, rows, 2*d, 2*ds, 2*ss)
}

// f32Bits views a []float64 as the []float32 of its bits (twice as long).
func f32Bits(x []float64) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}

func copyRowsGo(dst, src []float32, rows, d, ds, ss int) {
	for r := 0; r < rows; r++ {
		copy(dst[r*ds:r*ds+d], src[r*ss:r*ss+d])
	}
}

// AdamWStep holds the constants of one AdamW update (see AdamW).
type AdamWStep struct {
	Beta1, Beta2, Eps float64
	LR                float64 // learning rate
	Decay             float64 // lr·λ for a decayed parameter, else 0
	C1, C2            float64 // the bias corrections 1 − β1ᵗ, 1 − β2ᵗ
}

// AdamW applies one AdamW update to the entries of p with gradient g and
// moments m, v (all of one length), in float64 whatever T:
//
//	m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
//	p ← p·(1 − Decay) − LR·(m/C1)/(√(v/C2) + Eps)
//
// the update using m and v before their rounding to T. In float32, moments
// below 2⁻¹²⁶ in magnitude (subnormals) are stored as 0, as GELUGrad's
// results are: a parameter whose gradient stays 0 (the embedding row of a
// character absent from the batches) has m multiplied by β1 each step, and
// in examples/gpt's default training (β1 = 0.9) the token embedding's m
// held subnormal entries from step 800 on, up to 1.2% of them (about 190
// a step) by step 1300; no other float32 tensor of its training held any
// (cmd/cpubench/results/dev-2026-11-24-s11/nn13). This kernel ran as fast
// on all-subnormal moments as on normal ones on the development machine's
// Xeon (it is bound by its float64 division and square root), so the
// flush buys no time there; it keeps subnormals out of the stored state
// for code and CPUs that do pay for them (no DAZ/FTZ in Go programs). The
// update itself uses the unrounded m and v, so it is unchanged; the next
// step's differs by at most β1·2⁻¹²⁶ in m. The last line is
// computed as p·(1 − Decay) − (A·m)/(√v + E) with A = LR·√C2/C1 and
// E = Eps·√C2 (adamScalars; the same value, rounded differently in the
// last float64 bits): one division and one square root per entry instead
// of three divisions and a root, the throughput that bounds the kernel on
// CPUs with slow vector dividers (the Xeons').
func AdamW[T Float](p, g, m, v []T, h *AdamWStep) {
	n := len(p)
	g, m, v = g[:n], m[:n], v[:n]
	if is32[T]() {
		nk32.adamW(f32(p), f32(g), f32(m), f32(v), h)
		return
	}
	adamWGo(f64(p), f64(g), f64(m), f64(v), h)
}

// adamScalars returns A = LR·√C2/C1 and E = Eps·√C2 of AdamW's update.
func adamScalars(h *AdamWStep) (a, e float64) {
	r := math.Sqrt(h.C2)
	return h.LR * r / h.C1, h.Eps * r
}

// moment rounds an AdamW moment to T, 0 for float32 below 2⁻¹²⁶ in
// magnitude (see AdamW).
func moment[T Float](x float64) T {
	if is32[T]() && x > -0x1p-126 && x < 0x1p-126 {
		return 0
	}
	return T(x)
}

func adamWGo[T Float](p, g, m, v []T, h *AdamWStep) {
	b1, b2 := h.Beta1, h.Beta2
	a, e := adamScalars(h)
	keep := 1 - h.Decay
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		gi := float64(g[i])
		mi := b1*float64(m[i]) + (1-b1)*gi
		vi := b2*float64(v[i]) + (1-b2)*gi*gi
		m[i], v[i] = moment[T](mi), moment[T](vi)
		pi := float64(p[i]) * keep
		p[i] = T(pi - a*mi/(math.Sqrt(vi)+e))
	}
}
