package vec

import "fmt"

// The tile kernels of attention: one call per score tile instead of one per
// row, so that the exponential's constants are loaded once per tile and the
// per-call overhead (a few dozen cycles, next to a row of 64 scores that
// takes about a hundred) is paid once. Each runs, row by row, the same
// arithmetic as the row kernels it replaces (Max, Exp2ShiftSum,
// Exp2Shifts, MulDiffs), over a tile that is still in the L1 cache from
// the matrix product that wrote it.

// OnlineExp2Rows is the online-softmax step of attention's forward on a
// tile of scores s (rows × cols at row stride ld, in log₂ units). Row r
// sees its first n[r] entries (0 ≤ n[r] ≤ cols; a causal mask or padding
// hides the rest). For each row, with v = n[r] and j < cols,
//
//	m[r]      ← max(m[r], max_{j<v} s[r·ld+j])
//	s[r·ld+j] ← 2^{s[r·ld+j] − m[r]}  (j < v),  0  (j ≥ v)
//	sum[r]     = Σ_j s[r·ld+j]                    accumulated in float64
//
// using the new m[r]. A row with v = 0 is zeroed, its m unchanged, sum 0.
// NaN: a NaN m[r] stays NaN (the whole row and its sum are then NaN); a
// NaN among the visible scores makes its own entry and sum[r] NaN, and may
// or may not reach m[r] (the AVX-512 maximum skips it, the others keep it).
// The entries j ≥ v are never read: a NaN there does not reach the row.
// In float32 the AVX-512 kernel takes the argument as fl(s − m), rounded
// once (exact where s ≥ m/2, so for every entry above 2^(−|m|/2); an entry
// further below the row's maximum gets a relative error of at most
// 2⁻²⁴·ln2·|s − m| more), in about half the instructions of an exact
// argument; the other levels take it exactly (as Exp2ShiftSum does). The
// sum adds at most 4 terms per lane in float32 before float64.
//
// In float32 an entry below 2⁻¹²⁵ is set to 0 (flush; AVX-512 flushes
// where fl(s − m) < −125, the other levels where the result is below
// 2⁻¹²⁵, and the sum may count such an entry): an absolute change below
// 2⁻¹²⁵ of a probability whose row holds a 1, so that neither this kernel
// nor the product P·V that reads the tile next meets a subnormal number.
// On Intel cores one costs a microcode assist of about 200 cycles per
// vector instruction: before the flush, attention's forward with scores
// 30 times larger ran 16–19 times slower.
func OnlineExp2Rows[T Float](s []T, ld, rows, cols int, n []int, m []T, sum []float64) {
	if rows == 0 {
		return
	}
	checkTile("OnlineExp2Rows", len(s), ld, rows, cols)
	n, m, sum = n[:rows], m[:rows], sum[:rows]
	for r, v := range n {
		if v < 0 || v > cols {
			panic(fmt.Sprintf("vec.OnlineExp2Rows: row %d sees %d entries, want 0…%d", r, v, cols))
		}
	}
	if is32[T]() && k32.onlineExp2Rows != nil {
		k32.onlineExp2Rows(f32(s), ld, rows, cols, n, f32(m), sum)
		return
	}
	for r, v := range n {
		row := s[r*ld : r*ld+cols]
		if v == 0 {
			clear(row)
			sum[r] = 0
			continue
		}
		mx := max(m[r], Max(row[:v]))
		m[r] = mx
		sum[r] = Exp2ShiftSum(row[:v], row[:v], 1, mx)
		flush(row[:v])
		clear(row[v:])
	}
}

// flush sets to 0, in float32, the probabilities in p below 2⁻¹²⁵ (see
// OnlineExp2Rows); float64 keeps them.
func flush[T Float](p []T) {
	if !is32[T]() {
		return
	}
	for j, x := range p {
		if x < 0x1p-125 {
			p[j] = 0
		}
	}
}

// Exp2MulDiffRows is attention's backward step on a transposed tile (key
// rows, query columns): p holds the scores Sᵀ and ds the products dPᵀ
// (rows × cols at row stride ld, p in log₂ units); column c has the
// log-sum-exp L_c·log₂e = hi[c] + lo[c] and D_c = delta[c]; row r is seen
// by the columns c ≥ first[r] (0 ≤ first[r] ≤ cols). For every entry,
//
//	p[r·ld+c] = 2^{(p[r·ld+c] − hi[c]) − lo[c]},  ds[r·ld+c] = p[r·ld+c]·(ds[r·ld+c] − delta[c])   (c ≥ first[r])
//	p[r·ld+c] = ds[r·ld+c] = 0                                                                (c < first[r])
//
// in one pass over both tiles: P = exp(S − L) and dS = P∘(dP − D). Masked
// entries are set, never computed: a NaN in a score or product hidden by
// the mask does not reach the result. In float32 the exponential's
// argument is taken exactly (as Exp2Shifts does), and P below 2⁻¹²⁵ is 0
// (AVX-512: where fl(p − hi) < −125), so is its dS: as OnlineExp2Rows's
// flush, it keeps subnormal numbers out of the kernel and of the products
// dV += Pᵀ·dO, dK += dSᵀ·Q, dQ += dS·K (attention's backward with scores
// 30 times larger ran 23 times slower before).
func Exp2MulDiffRows[T Float](p, ds []T, ld, rows, cols int, first []int, hi, lo, delta []T) {
	if rows == 0 {
		return
	}
	checkTile("Exp2MulDiffRows", len(p), ld, rows, cols)
	checkTile("Exp2MulDiffRows", len(ds), ld, rows, cols)
	first, hi, lo, delta = first[:rows], hi[:cols], lo[:cols], delta[:cols]
	for r, f := range first {
		if f < 0 || f > cols {
			panic(fmt.Sprintf("vec.Exp2MulDiffRows: row %d starts at column %d, want 0…%d", r, f, cols))
		}
	}
	if is32[T]() && k32.exp2MulDiffRows != nil {
		k32.exp2MulDiffRows(f32(p), f32(ds), ld, rows, cols, first, f32(hi), f32(lo), f32(delta))
		return
	}
	for r, f := range first {
		pr, dr := p[r*ld:r*ld+cols], ds[r*ld:r*ld+cols]
		clear(pr[:f])
		clear(dr[:f])
		Exp2Shifts(pr[f:], pr[f:], hi[f:], lo[f:])
		flush(pr[f:])
		MulDiffs(dr[f:], pr[f:], dr[f:], delta[f:])
	}
}

// SubScaledRows subtracts from each of rows rows of c (nc values at row
// stride ldc) its own sequence of scaled rows of b:
//
//	c[r·ldc : r·ldc+nc] ← c[r·ldc : r·ldc+nc] − coef[r·ldcoef+j]·b[j·ldb : j·ldb+nc]
//
// for j = 0, 1, …, cnt[r]−1 in turn, each step one SubScaled (rounded once
// per entry on AVX-512, where it is a fused multiply-add). Rows of b from
// cnt[r] on are never read for row r: attention's products where each
// query row sees its own prefix of the keys (the causal staircase of a
// diagonal tile) run their rows' last keys here, one call per group of rows
// instead of one SubScaled per row and key, whose call costs as much as
// the arithmetic at d = 16 or 32.
func SubScaledRows[T Float](c []T, ldc, rows, nc int, coef []T, ldcoef int, cnt []int, b []T, ldb int) {
	if rows == 0 || nc == 0 {
		return
	}
	cnt = cnt[:rows]
	most := 0
	for r, k := range cnt {
		if k < 0 || (k > 0 && ldcoef < k && r < rows-1) {
			panic(fmt.Sprintf("vec.SubScaledRows: row %d takes %d rows of b with coefficients at stride %d", r, k, ldcoef))
		}
		most = max(most, k)
	}
	if most == 0 {
		return
	}
	checkTile("SubScaledRows", len(c), ldc, rows, nc)
	checkTile("SubScaledRows", len(b), ldb, most, nc)
	lastCoef := 0
	for r := rows - 1; r >= 0; r-- {
		if cnt[r] > 0 {
			lastCoef = r*ldcoef + cnt[r]
			break
		}
	}
	if len(coef) < lastCoef {
		panic(fmt.Sprintf("vec.SubScaledRows: %d coefficients, want %d", len(coef), lastCoef))
	}
	if is32[T]() && k32.subScaledRows != nil {
		k32.subScaledRows(f32(c), ldc, rows, nc, f32(coef), ldcoef, cnt, f32(b), ldb)
		return
	}
	for r, k := range cnt {
		cr := c[r*ldc : r*ldc+nc]
		for j := 0; j < k; j++ {
			SubScaled(cr, cr, b[j*ldb:j*ldb+nc], coef[r*ldcoef+j])
		}
	}
}

// Transpose writes the transpose of the rows×cols matrix src (row-major,
// contiguous) into dst (cols×rows): dst[c·rows + r] = src[r·cols + c]. dst
// must not overlap src. In float32 on AVX2 and AVX-512 machines the whole
// 8×8 blocks go through AVX shuffles (8 loads, 24 shuffles, 8 stores a
// block), the edges through Go.
func Transpose[T Float](dst, src []T, rows, cols int) {
	n := rows * cols
	dst, src = dst[:n], src[:n]
	r8, c8 := rows&^7, cols&^7
	if is32[T]() && k32.transpose8 != nil && r8 > 0 && c8 > 0 {
		k32.transpose8(f32(dst), rows, f32(src), cols, r8, c8)
		if c8 < cols {
			transposeGo(dst, src, rows, cols, 0, r8, c8) // right edge of the blocks' rows
		}
		if r8 < rows {
			transposeGo(dst, src, rows, cols, r8, rows, 0) // the rows below them
		}
		return
	}
	transposeGo(dst, src, rows, cols, 0, rows, 0)
}

// transposeGo is Transpose on rows [r0, r1), columns [c0, cols): four
// source rows at a time, so that each column's four values go out as one
// contiguous run.
func transposeGo[T Float](dst, src []T, rows, cols, r0, r1, c0 int) {
	r := r0
	for ; r+4 <= r1; r += 4 {
		s0 := src[r*cols+c0 : (r+1)*cols]
		s1 := src[(r+1)*cols+c0 : (r+2)*cols][:len(s0)]
		s2 := src[(r+2)*cols+c0 : (r+3)*cols][:len(s0)]
		s3 := src[(r+3)*cols+c0 : (r+4)*cols][:len(s0)]
		for i, x := range s0 {
			c := c0 + i
			d := dst[c*rows+r : c*rows+r+4]
			d[0], d[1], d[2], d[3] = x, s1[i], s2[i], s3[i]
		}
	}
	for ; r < r1; r++ {
		for i, x := range src[r*cols+c0 : (r+1)*cols] {
			dst[(c0+i)*rows+r] = x
		}
	}
}

// checkTile panics unless a slice of length n holds rows × cols at stride ld.
func checkTile(name string, n, ld, rows, cols int) {
	if cols < 0 || ld < cols || rows < 0 || (rows > 0 && n < (rows-1)*ld+cols) {
		panic(fmt.Sprintf("vec.%s: %d×%d tile at stride %d does not fit %d elements", name, rows, cols, ld, n))
	}
}
