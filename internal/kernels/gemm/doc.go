// Package gemm is the project's one CPU matrix product, shared by nn's
// matrix products and ops/attention's tile products, in float32 and float64:
//
//	C = alpha·op(A)·op(B) + beta·C      op(A) [m, k], op(B) [k, n], C [m, n]
//
// row-major, op(X) = X or Xᵀ, with row strides lda, ldb, ldc. Gemm splits
// the product over cores (internal/parallel) for nn's large shapes;
// Workspace.Gemm runs it on the calling goroutine with caller-owned buffers,
// allocation-free once they have grown, for attention's tiles (the attention
// op already runs one goroutine per (b, h, query block)).
//
// # Blocking
//
// The product is cut as in GotoBLAS/BLIS: column blocks of nc, depth blocks
// of kc (at most kcMax), row strips of mr and column strips of nr, where
// mr×nr is the micro-kernel's register tile:
//
//	AVX-512  float32 6×32, float64 6×16 (two zmm per row)
//	AVX2     float32 6×16, float64 6×8  (two ymm per row)
//	generic  4×4 (plain Go)
//
// The micro-kernel reads op(A) where it lies, through a row stride and a
// depth stride (A·… reads row-major rows, Aᵀ·… columns; no packing), and
// op(B) as rows of nr values at a depth stride: straight from B when B is
// not transposed and the product is small, else from a packed copy of the
// kc×nc block (zero-padded to whole strips), which also keeps large
// power-of-two strides from thrashing the caches. Edge strips of A and B
// recompute the last full strip (rows m−mr…m−1, columns n−nr…n−1) into a
// scratch tile and keep only the new part, so A is packed only when m < mr.
//
// # Accumulation (accuracy)
//
// A single FMA chain along the whole depth has a float32 error growing like
// k·u (u = 2⁻²⁴) in the worst case and like √k·u on random data with a
// constant ≈ √(k/2)·u per output; that is what a previous AVX2 kernel did,
// and it broke ops/attention's float32 error rule. Here each output is the
// sum of short chains:
//
//  1. chunks: the micro-kernel sums kb consecutive depth steps (kb = 8 for
//     depth blocks up to 128, 16 above) into fresh registers;
//  2. block total: chunk sums are added into a second set of accumulators
//     (registers on AVX-512, a stack tile on AVX2, a local array in Go),
//     one add per chunk, so this chain has kc/kb links;
//  3. depth blocks: each block's total, times alpha, is added into C, a
//     chain of ⌈k/kc⌉ links.
//
// Summed over the three levels the squared error of random data grows like
// k·kb/2 + k·kc/(2kb) + k²/(2kc) (in units of u²·E[(ab)²]), against k²/2 for
// one chain: at k = 64 that is 512 against 2048, at k = 4096 about 1.1·10⁵
// against 8.4·10⁶. Gonum's Sgemm (eight SSE partial sums of the rounded
// products, 64-deep blocks chained through C) sits at about the same level;
// TestAccuracy measures both against a float64 loop for k = 8…4096 and
// fails when this package's error exceeds gonum's by more than the margin
// stated there. float64 uses the same kernels and scheme; its error is
// below 1e-13 relative on the test shapes.
//
// # Instruction sets
//
// The kernels are picked once from internal/isa (AVX-512, AVX2+FMA, or
// generic Go; the purego build tag or FLASHGORGON_SIMD=generic forces Go);
// tests run every level the machine supports.
package gemm
