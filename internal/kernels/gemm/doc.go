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
// The product is cut as in GotoBLAS/BLIS: column blocks of nc (a packed
// block of op(B) of at most 512 KiB), depth blocks of kc, row strips of mr
// and column strips of nr, where mr×nr is the micro-kernel's register tile:
//
//	AVX-512  float32 6×32, float64 6×16 (two zmm per row)
//	AVX2     float32 6×16, float64 6×8  (two ymm per row)
//	generic  4×4 (plain Go)
//
// The micro-kernel reads op(A) where it lies, through a row stride and a
// depth stride (A·… reads rows of A; Aᵀ·… packs a strip when it is reused
// across many column strips), and op(B) as rows of nr values at a depth
// stride: straight from B when B is not transposed and small (attention's
// tiles), else from a packed copy of the kc×nc block, zero-padded to whole
// strips (AVX row copier; an 8×8 AVX transposer when B is stored
// transposed). Edge strips recompute the last full strip (rows m−mr…m−1,
// columns n−nr…n−1) into a scratch tile and keep only the new part, so A
// is packed only when m < mr.
//
// # Accumulation (accuracy)
//
// A single FMA chain along the whole depth has a float32 error that grows
// with k (on data of one sign, ≈ √(k/3)·u relative, u = 2⁻²⁴); that is what a
// previous AVX2 kernel did, and it broke ops/attention's float32 error rule.
// Here each output is the sum of short chains, combined as a tree:
//
//  1. chunks: the micro-kernel sums kb consecutive depth steps in fresh
//     registers; on AVX-512 (32 registers) the even and odd steps of a
//     chunk go to two register sets, added at the chunk's end, so a chain
//     is kb/2 long. kb is 4–8 for depth blocks under 64, 8 (AVX2, Go) or 16
//     (AVX-512) up to 128, and 16 or 32 for the 256-deep blocks of k > 512.
//     The first step of a chunk multiplies instead of zeroing and adding.
//  2. four totals: chunk c is added to total c mod 4 (on the stack), so
//     each total's chain is a quarter of the chunks; at the end the totals
//     are added as a tree, (T₀+T₁)+(T₂+T₃).
//  3. depth blocks: k is cut into even blocks of at most 128 (k ≤ 512) or
//     256; each block's result, times alpha, is added into C.
//
// This is the structure of gonum's Sgemm (eight interleaved SSE partial
// sums, a tree, and 64-deep blocks chained through C) with shorter chains,
// FMA instead of a rounded product plus a sum, and a chain through C four
// times shorter at large k. TestAccuracy measures the RMS error of float32
// products against a float64 loop for k = 8…4096, on 64×64 and 128×128
// products, A·B and A·Bᵀ, with entries of random sign and of one sign:
// at every point this package's error is at most gonum's (the largest ratio
// is 1.00, to two digits; the test allows 1.02) and one chain's; at
// k = 4096 it is 0.3–0.7× gonum's A·Bᵀ error and 0.07–0.1× its A·B error
// (gonum's A·B is one axpy chain per entry). float64 runs the same kernels;
// TestFloat64Exact holds it to 1e-12 relative to Σ|a·b|.
//
// Chunk flushes and the tree cost the AVX-512 micro-kernel about 6–10% of
// its FMA rate at kb = 16 and 4–8% at kb = 32 (on the development machine's
// Zen 5, whose adds have pipes of their own; more where adds share the FMA
// ports).
//
// # Instruction sets
//
// The kernels are picked once from internal/isa (AVX-512, AVX2+FMA, or
// generic Go; the purego build tag or FLASHGORGON_SIMD=generic forces Go);
// tests run every level the machine supports.
package gemm
