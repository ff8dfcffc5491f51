package gemm

import (
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// GemmBias computes
//
//	C = op(A)·op(B) + 1·biasᵀ      op(A) [m, k], op(B) [k, n], bias [n], C [m, n]
//
// (a linear layer's x·W + b) as GemmDepth's product (each depth block
// summed in one chain; DepthParts 1 at any shape GemmBias is given in nn)
// followed by the addition of bias to every row of C, each product entry
// rounded and then the sum: the bits of that product and then vec.Add.
// Each core adds the bias to each block of rows (at most cBlockBytes of C)
// as soon as it has computed it, still in its cache, instead of a pass
// over C of its own. Arguments and errors are Gemm's; bias has at least n
// entries.
func GemmBias[T Float](tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, bias []T, c []T, ldc int) error {
	if err := check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	bias = bias[:n]
	addBias := func(r0, r1 int) {
		for i := r0; i < r1; i++ {
			row := c[i*ldc : i*ldc+n]
			vec.Add(row, row, bias)
		}
	}
	kn := nnFor[T]()
	if m < n || 2*m*n*k < parallelFlops {
		// The product splits the columns (or runs on one core): then one pass.
		product(kn, tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
		parallel.For(m, max(1, 8192/max(n, 1)), addBias)
		return nil
	}
	// Gemm's split by strips of rows (see Gemm), each strip's bias after it.
	rowsParallel(kn, tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, addBias)
	return nil
}
