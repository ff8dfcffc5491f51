package vec

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// tileShapes are the tiles of the tile-kernel tests: rows × cols at row
// stride ld, with lengths around the vector widths and attention's blocks.
var tileShapes = []struct{ rows, cols, ld int }{
	{1, 1, 1}, {3, 7, 9}, {5, 17, 20}, {7, 64, 64}, {2, 100, 128}, {4, 130, 130}, {6, 0, 3},
}

// tileGuard is the number of guard entries past a tile's end that must stay
// untouched (NaN bits).
const tileGuard = 37

// garbageTile returns a tile of rows×cols at stride ld with guard entries
// after it, every entry a NaN; fill sets the entries the kernel may read.
func garbageTile[T Float](rows, ld int) []T {
	s := make([]T, rows*ld+tileGuard)
	for i := range s {
		s[i] = T(math.NaN())
	}
	return s
}

// checkUntouched fails unless the entries of s outside rows×cols (stride
// ld) and the guard are still NaN.
func checkUntouched[T Float](t *testing.T, s []T, rows, cols, ld int) {
	t.Helper()
	for i, v := range s {
		if (i >= rows*ld || i%ld >= cols) && v == v {
			t.Fatalf("entry %d (row %d, column %d) outside the %d×%d tile was written: %v", i, i/ld, i%ld, rows, cols, v)
		}
	}
}

// TestOnlineExp2Rows checks OnlineExp2Rows against a float64 loop: the new
// maximum exactly, every exponential within 2 ulp (float32) or 4 (float64)
// of 2 to the difference, exact or (float32) rounded once to float32 (the
// AVX-512 kernel's argument), zeros past each row's visible entries
// whatever they held, the row sums, and nothing written outside the tile.
func TestOnlineExp2Rows(t *testing.T) {
	t.Run("float32", func(t *testing.T) {
		forEachLevel(t, func(t *testing.T) { testOnlineExp2Rows[float32](t, maxULP, ulps32OfT[float32]) })
	})
	t.Run("float64", func(t *testing.T) { testOnlineExp2Rows[float64](t, 4, ulps64OfT[float64]) })
}

func ulps32OfT[T Float](got T, want float64) float64 { return ulps32(float32(got), want) }
func ulps64OfT[T Float](got T, want float64) float64 { return ulps64(float64(got), want) }

func testOnlineExp2Rows[T Float](t *testing.T, maxErr float64, ulps func(T, float64) float64) {
	rng := rand.New(rand.NewSource(11))
	for _, sh := range tileShapes {
		rows, cols, ld := sh.rows, sh.cols, sh.ld
		s := garbageTile[T](rows, ld)
		n, m, sum := make([]int, rows), make([]T, rows), make([]float64, rows)
		for r := 0; r < rows; r++ {
			switch r % 4 {
			case 0:
				n[r] = cols
			case 1:
				n[r] = 0
			default:
				n[r] = rng.Intn(cols + 1)
			}
			for j := 0; j < n[r]; j++ {
				s[r*ld+j] = T((rng.Float64()*2 - 1) * 30)
			}
			switch r % 3 {
			case 0:
				m[r] = T(math.Inf(-1)) // the row's first block
			case 1:
				m[r] = T(40) // above every score: m stays
			default:
				m[r] = T(rng.Float64()*10 - 5)
			}
		}
		runExp2Rows(t, fmt.Sprint(sh), s, ld, rows, cols, n, m, sum, func(r, j int, a float64, got T) (float64, bool) {
			e := math.Exp2(a)
			u := ulps(got, e)
			if is32[T]() {
				u = min(u, ulps(got, math.Exp2(float64(float32(a)))))
			}
			if !(u <= maxErr) {
				t.Fatalf("%v row %d entry %d: 2^%v = %v, want %v (%.2f ulp)", sh, r, j, a, got, e, u)
			}
			return e, true
		})
	}
}

// runExp2Rows runs OnlineExp2Rows on the tile s (rows × cols at stride ld,
// n visible entries a row, running maxima m, sums sum) and checks it
// against float64: each row's new maximum exactly, zeros past its visible
// entries, its sum, nothing written outside the tile. entry checks one
// visible entry, given its difference a from the row's new maximum, and
// returns 2^a and whether the sum counts it.
func runExp2Rows[T Float](t *testing.T, what string, s []T, ld, rows, cols int, n []int, m []T, sum []float64,
	entry func(r, j int, a float64, got T) (float64, bool)) {
	t.Helper()
	orig := make([]float64, len(s))
	for i, v := range s {
		orig[i] = float64(v)
	}
	mOld := append([]T(nil), m...)
	OnlineExp2Rows(s, ld, rows, cols, n, m, sum)
	for r := 0; r < rows; r++ {
		want := float64(mOld[r])
		for j := 0; j < n[r]; j++ {
			want = math.Max(want, orig[r*ld+j])
		}
		if float64(m[r]) != want {
			t.Fatalf("%s row %d: m = %v, want %v", what, r, m[r], want)
		}
		wantSum := 0.0
		for j := 0; j < cols; j++ {
			got := s[r*ld+j]
			if j >= n[r] {
				if got != 0 {
					t.Fatalf("%s row %d: masked entry %d = %v, want 0", what, r, j, got)
				}
				continue
			}
			if e, counts := entry(r, j, orig[r*ld+j]-want, got); counts {
				wantSum += e
			}
		}
		if math.Abs(sum[r]-wantSum) > 1e-6*wantSum {
			t.Fatalf("%s row %d: sum %v, want %v", what, r, sum[r], wantSum)
		}
	}
	checkUntouched(t, s, rows, cols, ld)
}

// TestOnlineExp2RowsFarBelow checks OnlineExp2Rows (float32) where scores
// lie far below their row's maximum: differences from 0 down to −170,
// dense around and below the flush (−125) and over what would be
// subnormal results, with −Inf scores, rows whose first block it is and
// rows with an earlier maximum: an entry whose difference is below
// −125.01 must be 0, one above −124.99 within 2 ulp of 2 to the
// difference (exact, or rounded once to float32), one between either;
// zeros past each row's visible entries; the row sums; rows without such
// scores in the same tile.
func TestOnlineExp2RowsFarBelow(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(13))
		for _, sh := range tileShapes {
			rows, cols, ld := sh.rows+4, sh.cols, max(sh.ld, sh.cols)
			s := garbageTile[float32](rows, ld)
			n, m, sum := make([]int, rows), make([]float32, rows), make([]float64, rows)
			for r := 0; r < rows; r++ {
				n[r] = cols - r%3
				if n[r] < 0 {
					n[r] = cols
				}
				top := rng.Float64()*40 - 20
				for j := 0; j < n[r]; j++ {
					var d float64
					switch {
					case r%4 == 3: // a row that needs no subnormal result
						d = -rng.Float64() * 100
					case j%7 == 6:
						d = math.Inf(-1)
					case j%2 == 0:
						d = -123 - rng.Float64()*28
					default:
						d = -rng.Float64() * 170
					}
					s[r*ld+j] = float32(top + d)
				}
				if n[r] > 0 {
					s[r*ld] = float32(top)
				}
				if r%2 == 0 {
					m[r] = float32(math.Inf(-1))
				} else {
					m[r] = float32(top + 3)
				}
			}
			runExp2Rows(t, fmt.Sprint(sh), s, ld, rows, cols, n, m, sum, func(r, j int, a float64, got float32) (float64, bool) {
				e := math.Exp2(a)
				u := min(ulps32(got, e), ulps32(got, math.Exp2(float64(float32(a)))))
				switch {
				case a < -125.01:
					if got != 0 {
						t.Fatalf("%v row %d entry %d: 2^%v = %v, want 0 (flushed)", sh, r, j, a, got)
					}
					return 0, false
				case a <= -124.99 && got == 0:
					return 0, false
				case !(u <= maxULP):
					t.Fatalf("%v row %d entry %d: 2^%v = %v, want %v (%.2f ulp)", sh, r, j, a, got, e, u)
				}
				return e, true
			})
		}
	})
}

// TestOnlineExp2RowsNaN: a NaN among a row's visible scores makes its entry
// and the row's sum NaN; a NaN running maximum makes the whole row, its
// maximum and sum NaN; other rows are unaffected.
func TestOnlineExp2RowsNaN(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		const rows, cols = 3, 40
		s := make([]float32, rows*cols)
		s[0*cols+33] = float32(math.NaN())
		n := []int{cols, cols, cols}
		m := []float32{float32(math.Inf(-1)), float32(math.NaN()), 0}
		sum := make([]float64, rows)
		OnlineExp2Rows(s, cols, rows, cols, n, m, sum)
		if !math.IsNaN(sum[0]) || !math.IsNaN(float64(s[33])) {
			t.Errorf("row 0: sum = %v, s[33] = %v, want NaN", sum[0], s[33])
		}
		if !math.IsNaN(float64(m[1])) || !math.IsNaN(sum[1]) || !math.IsNaN(float64(s[cols+5])) {
			t.Errorf("row 1: m = %v, sum = %v, s[5] = %v, want NaN", m[1], sum[1], s[cols+5])
		}
		if m[2] != 0 || sum[2] != cols {
			t.Errorf("row 2: m = %v, sum = %v, want 0 and %d", m[2], sum[2], cols)
		}
	})
}

// TestExp2MulDiffRows checks Exp2MulDiffRows against a float64 loop:
// P within 2 ulp (float32) or 4 (float64) of 2^{(s − hi) − lo} with the
// argument exact (the scores go from 1.5 above to 40 below hi), dS equal
// to P·(dP − D) computed in T from the returned P, zeros before each row's
// first column whatever the inputs held there (NaN), and nothing written
// outside the tiles.
func TestExp2MulDiffRows(t *testing.T) {
	t.Run("float32", func(t *testing.T) {
		forEachLevel(t, func(t *testing.T) { testExp2MulDiffRows[float32](t, maxULP, ulps32OfT[float32], 40) })
	})
	t.Run("float64", func(t *testing.T) { testExp2MulDiffRows[float64](t, 4, ulps64OfT[float64], 40) })
}

// TestExp2MulDiffRowsFarBelow is TestExp2MulDiffRows with every third score
// up to 170 below hi, across the flush: in float32 a P whose exact
// argument is below −125.01 must be 0 (and its dS), one above −124.99
// within 2 ulp, one between either; float64 keeps every P.
func TestExp2MulDiffRowsFarBelow(t *testing.T) {
	t.Run("float32", func(t *testing.T) {
		forEachLevel(t, func(t *testing.T) { testExp2MulDiffRows[float32](t, maxULP, ulps32OfT[float32], 170) })
	})
	t.Run("float64", func(t *testing.T) { testExp2MulDiffRows[float64](t, 4, ulps64OfT[float64], 170) })
}

// testExp2MulDiffRows: every third score lies up to below under hi.
func testExp2MulDiffRows[T Float](t *testing.T, maxErr float64, ulps func(T, float64) float64, below float64) {
	rng := rand.New(rand.NewSource(12))
	for _, sh := range tileShapes {
		rows, cols, ld := sh.rows, sh.cols, sh.ld
		p, ds := garbageTile[T](rows, ld), garbageTile[T](rows, ld)
		first := make([]int, rows)
		hi, lo, delta := make([]T, cols), make([]T, cols), make([]T, cols)
		for c := 0; c < cols; c++ {
			l := (rng.Float64()*2 - 1) * 20
			hi[c] = T(l)
			lo[c] = T(l - float64(hi[c]))
			delta[c] = T(rng.NormFloat64())
		}
		for r := 0; r < rows; r++ {
			switch r % 3 {
			case 0:
				first[r] = 0
			case 1:
				first[r] = cols
			default:
				first[r] = rng.Intn(cols + 1)
			}
			for c := first[r]; c < cols; c++ {
				p[r*ld+c] = T(float64(hi[c]) + rng.Float64()*2 - 1.5)
				if c%3 == 2 {
					p[r*ld+c] = T(float64(hi[c]) - rng.Float64()*below)
				}
				ds[r*ld+c] = T(rng.NormFloat64())
			}
		}
		p0, ds0 := append([]T(nil), p...), append([]T(nil), ds...)
		Exp2MulDiffRows(p, ds, ld, rows, cols, first, hi, lo, delta)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				i := r*ld + c
				if c < first[r] {
					if p[i] != 0 || ds[i] != 0 {
						t.Fatalf("%v row %d column %d before first %d: p = %v, ds = %v, want 0", sh, r, c, first[r], p[i], ds[i])
					}
					continue
				}
				a := (float64(p0[i]) - float64(hi[c])) - float64(lo[c])
				want := math.Exp2(a)
				switch {
				case is32[T]() && a < -125.01:
					if p[i] != 0 || ds[i] != 0 {
						t.Fatalf("%v row %d column %d: 2^%v: p = %v, ds = %v, want 0 (flushed)", sh, r, c, a, p[i], ds[i])
					}
					continue
				case is32[T]() && a <= -124.99 && p[i] == 0:
					want = 0
				}
				if u := ulps(p[i], want); !(u <= maxErr) {
					t.Fatalf("%v row %d column %d: p = %v, want %v (%.2f ulp)", sh, r, c, p[i], want, u)
				}
				if wantDs := p[i] * (ds0[i] - delta[c]); ds[i] != wantDs {
					t.Fatalf("%v row %d column %d: ds = %v, want %v", sh, r, c, ds[i], wantDs)
				}
			}
		}
		checkUntouched(t, p, rows, cols, ld)
		checkUntouched(t, ds, rows, cols, ld)
	}
}

// TestTileKernelsNoAllocs: the tile kernels allocate nothing.
func TestTileKernelsNoAllocs(t *testing.T) {
	const rows, cols = 8, 64
	s, ds := make([]float32, rows*cols), make([]float32, rows*cols)
	n, first := make([]int, rows), make([]int, rows)
	m, sum := make([]float32, rows), make([]float64, rows)
	hi, lo, delta := make([]float32, cols), make([]float32, cols), make([]float32, cols)
	forEachLevel(t, func(t *testing.T) {
		if a := testing.AllocsPerRun(10, func() {
			OnlineExp2Rows(s, cols, rows, cols, n, m, sum)
			Exp2MulDiffRows(s, ds, cols, rows, cols, first, hi, lo, delta)
		}); a != 0 {
			t.Errorf("%v allocations per call, want 0", a)
		}
	})
}

// TestTranspose checks Transpose against the definition on shapes around
// the 8×8 blocks, in both element types, with nothing written past dst.
func TestTranspose(t *testing.T) {
	shapes := [][2]int{{1, 1}, {3, 5}, {8, 8}, {9, 8}, {8, 17}, {16, 64}, {128, 64}, {127, 130}, {64, 7}}
	forEachLevel(t, func(t *testing.T) {
		for _, sh := range shapes {
			testTranspose[float32](t, sh[0], sh[1])
			testTranspose[float64](t, sh[0], sh[1])
		}
	})
}

func testTranspose[T Float](t *testing.T, rows, cols int) {
	src := make([]T, rows*cols)
	for i := range src {
		src[i] = T(i + 1)
	}
	dst := make([]T, rows*cols+tileGuard)
	for i := range dst {
		dst[i] = T(math.NaN())
	}
	Transpose(dst, src, rows, cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if got, want := dst[c*rows+r], src[r*cols+c]; got != want {
				t.Fatalf("%d×%d: dst[%d·%d + %d] = %v, want %v", rows, cols, c, rows, r, got, want)
			}
		}
	}
	for i := rows * cols; i < len(dst); i++ {
		if dst[i] == dst[i] {
			t.Fatalf("%d×%d: dst[%d] past the end written", rows, cols, i)
		}
	}
}

// TestSubScaledRows checks SubScaledRows against a float64 loop: each
// entry within a few roundings of c − Σ_j coef·b (relative to Σ|terms|),
// the rows of b past a row's count never read (NaN there), entries of c
// past nc untouched.
func TestSubScaledRows(t *testing.T) {
	t.Run("float32", func(t *testing.T) {
		forEachLevel(t, func(t *testing.T) { testSubScaledRows[float32](t, 1e-6) })
	})
	t.Run("float64", func(t *testing.T) { testSubScaledRows[float64](t, 1e-15) })
}

func testSubScaledRows[T Float](t *testing.T, tol float64) {
	rng := rand.New(rand.NewSource(13))
	for _, sh := range []struct{ rows, nc, ldc, ldcoef, ldb int }{
		{1, 1, 1, 1, 1}, {6, 16, 20, 6, 16}, {6, 32, 32, 5, 40}, {5, 17, 19, 9, 17}, {7, 130, 130, 16, 131}, {3, 8, 8, 3, 8},
	} {
		cnt := make([]int, sh.rows)
		most := 0
		for r := range cnt {
			cnt[r] = rng.Intn(sh.ldcoef + 1)
			if r%3 == 1 {
				cnt[r] = 0
			}
			most = max(most, cnt[r])
		}
		c := garbageTile[T](sh.rows, sh.ldc)
		coef := make([]T, sh.rows*sh.ldcoef)
		b := garbageTile[T](max(most, 1), sh.ldb)
		for r := 0; r < sh.rows; r++ {
			for j := 0; j < sh.nc; j++ {
				c[r*sh.ldc+j] = T(rng.NormFloat64())
			}
			for j := 0; j < sh.ldcoef; j++ {
				coef[r*sh.ldcoef+j] = T(rng.NormFloat64())
			}
		}
		for j := 0; j < most; j++ {
			for l := 0; l < sh.nc; l++ {
				b[j*sh.ldb+l] = T(rng.NormFloat64())
			}
		}
		c0 := append([]T(nil), c...)
		SubScaledRows(c, sh.ldc, sh.rows, sh.nc, coef, sh.ldcoef, cnt, b, sh.ldb)
		for r := 0; r < sh.rows; r++ {
			for l := 0; l < sh.nc; l++ {
				want, mag := float64(c0[r*sh.ldc+l]), math.Abs(float64(c0[r*sh.ldc+l]))
				for j := 0; j < cnt[r]; j++ {
					term := float64(coef[r*sh.ldcoef+j]) * float64(b[j*sh.ldb+l])
					want -= term
					mag += math.Abs(term)
				}
				got := float64(c[r*sh.ldc+l])
				if !(math.Abs(got-want) <= tol*mag) {
					t.Fatalf("%v row %d column %d: %v, want %v", sh, r, l, got, want)
				}
			}
		}
		checkUntouched(t, c, sh.rows, sh.nc, sh.ldc)
	}
}
