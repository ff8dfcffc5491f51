package gemm

// GemmChainStair computes, on the calling goroutine, one strip of
// StairRows rows of a product whose row i sums i more depth steps than the
// row before (the causal mask's staircase on the diagonal tile of
// ops/attention, where query row i sees one key more than row i−1):
//
//	c[i·ldc + j] = alpha·Σ_{l < k+i} op(a)[i, l]·b[l·ldb + j] + beta·c[i·ldc + j]    i < StairRows, j < n
//
// with op(a) = a (row i at a[i·lda:]) or, with tA, aᵀ (a stored
// [k+StairRows−1, StairRows], row i of op(a) is column i of a). Each entry
// is one FMA chain along its k+i steps, as GemmChain sums a product of
// that depth (k+StairRows−1 ≤ 128: one depth block), so row i gets the
// bits GemmChain would give it over its own k+i columns alone; op(a)[i, l]
// and b's row l are never read for l ≥ k+i, so whatever they hold (NaN,
// ±Inf) cannot reach row i. With beta = 0, c is only written.
//
// It returns false, computing nothing, where the machine's kernels have no
// stair kernel for n columns (the AVX-512 6×64 float32 and 6×32 float64
// tiles have: n a multiple of 64 or 32), or k < 1, or
// k+StairRows−1 > 128; the caller then sums the staircase another way.
// It returns an error naming the sizes when a slice is too short for its
// shape or a stride is smaller than its row.
func (w *Workspace[T]) GemmChainStair(tA bool, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) (bool, error) {
	depth := k + StairRows - 1
	if !HasStair[T](n) || k < 1 || depth > stairMaxDepth {
		return false, nil
	}
	kn := chainFor[T]().forColumns(n)
	if err := check(tA, false, StairRows, n, depth, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return false, err
	}
	rs, ps := lda, 1
	if tA {
		rs, ps = 1, lda
	}
	for j := 0; j < n; j += kn.nr {
		kn.stair(k, k, &a[0], rs, ps, &b[j], ldb, &c[j], ldc, alpha, beta, beta != 0)
	}
	return true, nil
}

// HasStair reports whether GemmChainStair runs products of n columns on
// this machine's kernels (its other conditions are on k): a caller with
// many strips of one width asks once.
func HasStair[T Float](n int) bool {
	kn := chainFor[T]().forColumns(n)
	return kn.stair != nil && kn.mr == StairRows && n > 0 && n%kn.nr == 0
}

// StairRows is the number of rows of GemmChainStair's strip: the AVX-512
// chained kernels' mr.
const StairRows = 6

// stairMaxDepth is the largest depth GemmChainStair sums: one depth block
// of GemmChain (depthBlock), so that its rows get GemmChain's bits.
const stairMaxDepth = 128
