//go:build !purego

package vec

import (
	"math"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// The assembly kernels (kernels_amd64.s) work on whole vectors: n is a
// multiple of the vector width (16 floats for AVX-512, 8 for AVX2) and at
// least one vector. The Go functions below run them on the longest such
// prefix and do the tail here, through a zero-padded vector on the stack
// where the tail must go through the same arithmetic (the exponentials).

//go:noescape
func maxAVX512(x *float32, n int) float32

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func expSumAVX512(dst, x, pf *float32, n int, tab *expTable, scale, shift float32) float64

//go:noescape
func expSumAVX2(dst, x, pf *float32, n int, tab *expTable, scale, shift float32) float64

//go:noescape
func expSumStreamAVX512(dst, x, pf, out, prev *float32, n int, tab *expTable, shift, c float32) float64

//go:noescape
func expSumStreamAVX2(dst, x, pf, out, prev *float32, n int, tab *expTable, shift, c float32) float64

//go:noescape
func expShiftsAVX512(dst, x, hi, lo *float32, n int, tab *expTable)

//go:noescape
func expShiftsAVX2(dst, x, hi, lo *float32, n int, tab *expTable)

//go:noescape
func onlineExp2RowsAVX512(s *float32, ld, rows, cols int, n *int, m *float32, sum *float64, tab *exp2Table16, iota *[16]int32)

//go:noescape
func exp2MulDiffRowsAVX512(p, ds *float32, ld, rows, cols int, first *int, hi, lo, delta *float32, tab *expTable, iota *[16]int32)

//go:noescape
func subScaledRowsAVX512(c *float32, ldc, rows, nc int, coef *float32, ldcoef int, cnt *int, b *float32, ldb int, iota *[16]int32)

// Transpose8 sets dst[p·ldd + j] = src[j·lds + p] for j < rows, p < cols
// (both multiples of 8; either may be 0) in 8×8 blocks of AVX shuffles: the
// one float32 block transposer of the module, used by Transpose here and by
// gemm's packing of transposed operands. ldd and lds count elements.
//
//go:noescape
func Transpose8(dst *float32, ldd int, src *float32, lds int, rows, cols int)

//go:noescape
func sumAVX512(x *float32, n int) float64

//go:noescape
func sumAVX2(x *float32, n int) float64

//go:noescape
func dotAVX512(x, y *float32, n int) float64

//go:noescape
func dotAVX2(x, y *float32, n int) float64

//go:noescape
func scaleAVX512(x *float32, n int, c float32)

//go:noescape
func scaleAVX2(x *float32, n int, c float32)

//go:noescape
func streamScaledAVX512(dst, x *float32, n int, c float32)

//go:noescape
func streamScaledAVX2(dst, x *float32, n int, c float32)

//go:noescape
func mulDiffAVX512(dst, p, q *float32, n int, c float32)

//go:noescape
func mulDiffAVX2(dst, p, q *float32, n int, c float32)

//go:noescape
func mulDiffsAVX512(dst, p, q, c *float32, n int)

//go:noescape
func mulDiffsAVX2(dst, p, q, c *float32, n int)

//go:noescape
func subScaledAVX512(dst, y, x *float32, n int, c float32)

//go:noescape
func subScaledAVX2(dst, y, x *float32, n int, c float32)

//go:noescape
func subShiftAVX512(dst, x *float32, n int, a, b float64)

//go:noescape
func subShiftAVX2(dst, x *float32, n int, a, b float64)

// wide selects the assembly of one instruction set: true for AVX-512
// (vectors of 16 floats), false for AVX2 (8). Its methods call the
// assembly directly, never through a function value, so that the
// escape analysis sees the go:noescape and stack buffers stay on the stack.
type wide bool

func (v wide) width() int {
	if v {
		return 16
	}
	return 8
}

func (v wide) max(x *float32, n int) float32 {
	if v {
		return maxAVX512(x, n)
	}
	return maxAVX2(x, n)
}

func (v wide) expSum(dst, x, pf *float32, n int, tab *expTable, scale, shift float32) float64 {
	if v {
		return expSumAVX512(dst, x, pf, n, tab, scale, shift)
	}
	return expSumAVX2(dst, x, pf, n, tab, scale, shift)
}

func (v wide) expSumStream(dst, x, pf, out, prev *float32, n int, tab *expTable, shift, c float32) float64 {
	if v {
		return expSumStreamAVX512(dst, x, pf, out, prev, n, tab, shift, c)
	}
	return expSumStreamAVX2(dst, x, pf, out, prev, n, tab, shift, c)
}

func (v wide) expShifts(dst, x, hi, lo *float32, n int, tab *expTable) {
	if v {
		expShiftsAVX512(dst, x, hi, lo, n, tab)
		return
	}
	expShiftsAVX2(dst, x, hi, lo, n, tab)
}

func (v wide) sum(x *float32, n int) float64 {
	if v {
		return sumAVX512(x, n)
	}
	return sumAVX2(x, n)
}

func (v wide) dot(x, y *float32, n int) float64 {
	if v {
		return dotAVX512(x, y, n)
	}
	return dotAVX2(x, y, n)
}

func (v wide) scale(x *float32, n int, c float32) {
	if v {
		scaleAVX512(x, n, c)
		return
	}
	scaleAVX2(x, n, c)
}

func (v wide) streamScaled(dst, x *float32, n int, c float32) {
	if v {
		streamScaledAVX512(dst, x, n, c)
		return
	}
	streamScaledAVX2(dst, x, n, c)
}

func (v wide) mulDiff(dst, p, q *float32, n int, c float32) {
	if v {
		mulDiffAVX512(dst, p, q, n, c)
		return
	}
	mulDiffAVX2(dst, p, q, n, c)
}

func (v wide) mulDiffs(dst, p, q, c *float32, n int) {
	if v {
		mulDiffsAVX512(dst, p, q, c, n)
		return
	}
	mulDiffsAVX2(dst, p, q, c, n)
}

func (v wide) subScaled(dst, y, x *float32, n int, c float32) {
	if v {
		subScaledAVX512(dst, y, x, n, c)
		return
	}
	subScaledAVX2(dst, y, x, n, c)
}

func (v wide) subShift(dst, x *float32, n int, a, b float64) {
	if v {
		subShiftAVX512(dst, x, n, a, b)
		return
	}
	subShiftAVX2(dst, x, n, a, b)
}

var (
	kernelsAVX512 = wide(true).kernels().withTiles512()
	kernelsAVX2   = wide(false).kernels().withTranspose()
)

// withTranspose adds the AVX 8×8 transpose to k.
func (k *kernels32) withTranspose() *kernels32 {
	k.transpose8 = transpose8
	return k
}

// transpose8 runs Transpose8 on the whole 8×8 blocks of a rows×cols
// source (rows, cols multiples of 8, both at least 8).
func transpose8(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	Transpose8(&dst[0], ldd, &src[0], lds, rows, cols)
}

// laneNumbers holds 0…15: the AVX-512 tile kernels compare it with a count
// to mask the first lanes of a vector.
var laneNumbers = [16]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// withTiles512 adds the AVX-512 tile kernels to k (the masked loads and
// stores of AVX-512 take any row length and mask without a tail in Go).
func (k *kernels32) withTiles512() *kernels32 {
	k.transpose8 = transpose8
	k.onlineExp2Rows = func(s []float32, ld, rows, cols int, n []int, m []float32, sum []float64) {
		if cols == 0 {
			clear(sum)
			return
		}
		onlineExp2RowsAVX512(&s[0], ld, rows, cols, &n[0], &m[0], &sum[0], &exp2Tab16, &laneNumbers)
	}
	k.exp2MulDiffRows = func(p, ds []float32, ld, rows, cols int, first []int, hi, lo, delta []float32) {
		if cols == 0 {
			return
		}
		exp2MulDiffRowsAVX512(&p[0], &ds[0], ld, rows, cols, &first[0], &hi[0], &lo[0], &delta[0], &expTables[base2], &laneNumbers)
	}
	k.subScaledRows = func(c []float32, ldc, rows, nc int, coef []float32, ldcoef int, cnt []int, b []float32, ldb int) {
		subScaledRowsAVX512(&c[0], ldc, rows, nc, &coef[0], ldcoef, &cnt[0], &b[0], ldb, &laneNumbers)
	}
	return k
}

func asmKernels(l isa.Level) *kernels32 {
	switch l {
	case isa.AVX512:
		return kernelsAVX512
	case isa.AVX2:
		return kernelsAVX2
	}
	return nil
}

// kernels wraps the assembly of s into a kernels32: the full vectors in
// assembly, the remaining tail of fewer than a vector in Go, or, where
// the tail must go through the same arithmetic (the exponentials), in
// assembly on a zero-padded vector on the stack.
func (s wide) kernels() *kernels32 {
	w := s.width()
	body := func(n int) int { return n &^ (w - 1) } // entries done in assembly
	return &kernels32{
		max: func(x []float32) float32 {
			n := body(len(x))
			m := float32(math.Inf(-1))
			if n > 0 {
				m = s.max(&x[0], n)
			}
			if t := maxGo(x[n:]); t > m || t != t {
				m = t
			}
			return m
		},
		expSum: func(dst, x, next []float32, scale, shift float32, b base) float64 {
			n, tab := body(len(x)), &expTables[b]
			var sum float64
			if n > 0 {
				var d *float32
				if dst != nil {
					d = &dst[0]
				}
				pf := &x[0] // prefetching x itself, already in cache, costs little
				if len(next) >= n {
					pf = &next[0]
				}
				sum = s.expSum(d, &x[0], pf, n, tab, scale, shift)
			}
			if n < len(x) {
				var buf [16]float32
				t := copy(buf[:], x[n:])
				s.expSum(&buf[0], &buf[0], &buf[0], w, tab, scale, shift)
				if dst != nil {
					copy(dst[n:], buf[:t])
				}
				for _, v := range buf[:t] {
					sum += float64(v)
				}
			}
			return sum
		},
		expSumStream: func(dst, x, next []float32, shift float32, out, prev []float32, c float32) (float64, bool) {
			n := len(x)
			if n == 0 || n%w != 0 || len(out) != n || uintptr(unsafe.Pointer(&out[0]))%64 != 0 {
				return 0, false
			}
			pf := &x[0]
			if len(next) >= n {
				pf = &next[0]
			}
			return s.expSumStream(&dst[0], &x[0], pf, &out[0], &prev[0], n, &expTables[baseE], shift, c), true
		},
		expShifts: func(dst, x, hi, lo []float32, b base) {
			n, tab := body(len(x)), &expTables[b]
			if n > 0 {
				s.expShifts(&dst[0], &x[0], &hi[0], &lo[0], n, tab)
			}
			if n < len(x) {
				var bx, bh, bl [16]float32
				t := copy(bx[:], x[n:])
				copy(bh[:], hi[n:])
				copy(bl[:], lo[n:])
				s.expShifts(&bx[0], &bx[0], &bh[0], &bl[0], w, tab)
				copy(dst[n:], bx[:t])
			}
		},
		sum: func(x []float32) float64 {
			n := body(len(x))
			var sum float64
			if n > 0 {
				sum = s.sum(&x[0], n)
			}
			return sum + sumGo(x[n:])
		},
		dot: func(x, y []float32) float64 {
			n := body(len(x))
			var sum float64
			if n > 0 {
				sum = s.dot(&x[0], &y[0], n)
			}
			return sum + dotGo(x[n:], y[n:])
		},
		scale: func(x []float32, c float32) {
			if n := body(len(x)); n > 0 {
				s.scale(&x[0], n, c)
				x = x[n:]
			}
			scaleGo(x, c)
		},
		streamScaled: func(dst, x []float32, c float32) {
			// Whole cache lines from the first 64-byte boundary of dst on.
			head := int((64-uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%64)%64) / 4
			if head > len(dst) {
				head = len(dst)
			}
			scaleToGo(dst[:head], x[:head], c)
			dst, x = dst[head:], x[head:]
			if n := body(len(dst)); n > 0 {
				s.streamScaled(&dst[0], &x[0], n, c)
				dst, x = dst[n:], x[n:]
			}
			scaleToGo(dst, x, c)
		},
		mulDiff: func(dst, p, q []float32, c float32) {
			if n := body(len(dst)); n > 0 {
				s.mulDiff(&dst[0], &p[0], &q[0], n, c)
				dst, p, q = dst[n:], p[n:], q[n:]
			}
			mulDiffGo(dst, p, q, c)
		},
		mulDiffs: func(dst, p, q, c []float32) {
			if n := body(len(dst)); n > 0 {
				s.mulDiffs(&dst[0], &p[0], &q[0], &c[0], n)
				dst, p, q, c = dst[n:], p[n:], q[n:], c[n:]
			}
			mulDiffsGo(dst, p, q, c)
		},
		subScaled: func(dst, y, x []float32, c float32) {
			if n := body(len(dst)); n > 0 {
				s.subScaled(&dst[0], &y[0], &x[0], n, c)
				dst, y, x = dst[n:], y[n:], x[n:]
			}
			subScaledGo(dst, y, x, c)
		},
		subShift: func(dst, x []float32, a, b float64) {
			if n := body(len(x)); n > 0 {
				s.subShift(&dst[0], &x[0], n, a, b)
				dst, x = dst[n:], x[n:]
			}
			subShiftGo(dst, x, a, b)
		},
	}
}

// expTable holds the constants of the float32 exponential in one base,
// each replicated in 8 lanes so that the AVX2 kernels can use it as a
// memory operand (the AVX-512 ones broadcast lane 0 into registers). The
// layout is fixed by the offsets in kernels_amd64.s (entry k at 32·k).
type expTable [17][8]uint32

const (
	tabLog2Base = iota // n = round(a·log2Base): 1/ln2, or 1 in base 2
	tabC1              // the unit of n: ln2 = C1 + C2 with C1's 9 bits making n·C1 exact; 1 in base 2
	tabC2
	// The argument a is clamped to [lo, hi] and its rounding error e to
	// [eLo, eHi] = [−¼, ¼] (NaN, which comes from an infinite a, to −¼).
	// Past lo the result is 0 and past hi +Inf for every e in that range:
	// at a = lo, n = −151 (−152) and r ≤ −0.336 + ¼ (0 + ¼ in base 2);
	// at a = hi, n = 129 and r ≥ 0.085 − ¼ (0.25 − ¼). |n| ≤ 152 keeps
	// n·C1 exact and 2ⁿ within reach of the AVX2 two-factor product. A
	// legitimate |e| stays below ¼ while |scale·x| < 2²³ (always for
	// scale = 1, where e is the difference's error, below 2⁻¹⁷).
	tabLo
	tabHi
	tabELo
	tabEHi
	tabQ6 // e^r = 1 + r·q(r), q(r) = q1 + q2·r + … + q6·r⁵ (for 2^r: e^{r·ln2})
	tabQ5
	tabQ4
	tabQ3
	tabQ2
	tabQ1
	tabOne
	tabBMin // int32: 2ⁿ = 2^(n−b)·2^b with b = clamp(n, bMin, bMax) (AVX2)
	tabBMax
	tabBias // int32: 127, the exponent bias
	tabLen
)

// exp2Table16 holds the constants of onlineExp2RowsAVX512's 2^a
// (EXP2TAB512 in kernels_amd64.s, whose LOADEXP2TAB512 reads them at fixed
// offsets): pow[j] = 2^(j/16) rounded to float32, the clamp lo (below it
// every result is 0), the shifter S = 1.5·2¹⁹ (a + S rounds a to a multiple
// of 1/16), q(r) = c1 + c2·r + c3·r², the Taylor polynomial of
// (2^r − 1)/r (on |r| ≤ 1/32 its truncation costs 2^r a relative 9.4·10⁻⁹,
// 0.08 ulp), and the least argument whose result is kept, −125 (below it
// the result is 0: see OnlineExp2Rows).
type exp2Table16 struct {
	pow               [16]float32
	lo, s, c3, c2, c1 float32
	least             float32
}

var exp2Tab16 = func() (t exp2Table16) {
	for j := range t.pow {
		t.pow[j] = float32(math.Exp2(float64(j) / 16))
	}
	t.lo, t.s = -152, 1.5*(1<<19)
	t.c1, t.c2, t.c3 = float32(math.Ln2), float32(math.Ln2*math.Ln2/2), float32(math.Ln2*math.Ln2*math.Ln2/6)
	t.least = -125
	return t
}()

// expTables holds the tables of base e and base 2, indexed by base.
var expTables = [2]expTable{
	makeExpTable(1/math.Ln2, 0.693359375, -2.12194440e-4, -105, 89.5, expQ[0]),
	makeExpTable(1, 1, 0, -152, 129.25, expQ[1]),
}

// expQ are the coefficients q1…q6 of q(r) = (e^r − 1)/r on
// |r| ≤ 1.02·ln2/2 (base e) and of (2^r − 1)/r on |r| ≤ 1.02·½ (base 2):
// Chebyshev interpolation at 6 nodes, rounded to float32. 1 + r·q(r) is
// within 0.21 ulp of e^r (2^r) over the interval; the 2% margin covers an r
// slightly past ln2/2 from the float32 rounding of a·log₂e.
var expQ = [2][6]float32{
	{1, 0.5, 0.166664913, 0.0416664481, 0.00837059785, 0.00139354519},
	{0.693147182, 0.240226507, 0.0555035286, 0.00961807836, 0.00133931835, 0.000154551715},
}

func makeExpTable(log2Base, c1, c2, lo, hi float32, q [6]float32) (t expTable) {
	f := func(v float32) uint32 { return math.Float32bits(v) }
	i := func(v int32) uint32 { return uint32(v) }
	vals := [tabLen]uint32{
		tabLog2Base: f(log2Base), tabC1: f(c1), tabC2: f(c2), tabLo: f(lo), tabHi: f(hi),
		tabELo: f(-0.25), tabEHi: f(0.25),
		tabQ6: f(q[5]), tabQ5: f(q[4]), tabQ4: f(q[3]), tabQ3: f(q[2]), tabQ2: f(q[1]), tabQ1: f(q[0]),
		tabOne: f(1), tabBMin: i(-126), tabBMax: i(2), tabBias: i(127),
	}
	for k, v := range vals {
		for l := range t[k] {
			t[k][l] = v
		}
	}
	return t
}

// Exp2Table16 returns the constants of the AVX-512 2^a of OnlineExp2Rows
// (EXP2TAB512; see exp2Table16): the 16 powers 2^(j/16), the shifter S,
// the polynomial's c3, c2, c1 and the least argument kept (−125). Other
// packages' kernels that compute the same exponential (gemm's exp
// micro-kernels) build their tables from it.
func Exp2Table16() (pow [16]float32, s, c3, c2, c1, least float32) {
	t := &exp2Tab16
	return t.pow, t.s, t.c3, t.c2, t.c1, t.least
}
