// Package gemm is the project's one CPU matrix product, shared by nn's
// matrix products and ops/attention's tile products, in float32 and float64:
//
//	C = alpha·op(A)·op(B) + beta·C      op(A) [m, k], op(B) [k, n], C [m, n]
//
// row-major, op(X) = X or Xᵀ, with row strides lda, ldb, ldc. Gemm splits
// the product over cores (internal/parallel); GemmDepth and GemmBias, nn's
// products, do too, summing each depth block in one chain (see
// Accumulation), and GemmDepth cuts a long depth into parts where C is
// small (weight gradients; see Over the cores); Workspace.Gemm runs it on
// the calling goroutine with
// caller-owned buffers, allocation-free once they have grown, for
// attention's tiles (the attention op already runs one goroutine per (b, h,
// query block)).
//
// # Blocking
//
// The product is cut as in GotoBLAS/BLIS: column blocks of nc (a packed
// block of op(B) of at most 512 KiB), depth blocks of kc, row strips of mr
// and column strips of nr, where mr×nr is the micro-kernel's register tile:
//
//	AVX-512  float32 6×64, float64 6×32 (four zmm per row; variant 6)
//	AVX2     float32 6×16, float64 6×8  (two ymm per row)
//	generic  4×4 (plain Go)
//
// A product of fewer columns than a strip runs on a narrower AVX-512
// kernel of 12 rows where one holds them (kernel.forColumns): 12×16 for
// n ≤ 16, 12×32 for n ≤ 32 (float64 12×8, 12×16), instead of a full strip
// computed into a scratch tile of which a quarter or a half is kept.
// ops/attention's products with n = d (O += P·V; dQ, dK, dV) at
// examples/gpt's d = 16 and 32: its backward ran 2.2× faster at d = 32.
// GemmDepth's depth parts run a weight gradient xᵀ·g whose width the
// float32 6×64 tile does not divide and an 8×48 tile does (the vocabulary
// head's 96) on the 8×48 tile (kernel.forGradient; variant 17 in
// micro_amd64.go): two full column strips instead of a 6×64 and a 6×32
// one.
//
// The micro-kernel reads op(A) where it lies, through a row stride and a
// depth stride: A·… reads rows of A, Aᵀ·… the mr values of a depth step,
// lda apart. nn's products (GemmDepth, GemmBias) pack each full strip of
// Aᵀ in its first column strip's tile instead, the micro-kernel's packing
// twin copying the values it reads (kernel.packFirst), and the strip's
// other tiles read the copy: the weight gradients xᵀ·g ran 1.02–1.13×
// faster so on the GPU machine's Xeon at two cores. (Variant 15 packs
// the strips of Aᵀ where they are reused across more than two column
// strips, a group of strips at a time, reading A along its rows,
// packABlock, as every variant did before: on the development machine's
// Xeon that pass took 4–15% of nn's weight gradients, which ran as fast
// or faster without it. Variant 16 packs with the twin in every
// product.) It reads op(B) as rows of nr
// values at a depth stride: straight from B when B is not transposed and
// small (attention's tiles), or beside a transposed A when B's rows are at
// most 2 KiB apart (the weight gradients' g [4096, 256]; packsB), else
// from a packed copy of the kc×nc block, zero-padded to whole strips (AVX
// row copier; an 8×8 AVX transposer when B is stored transposed). The last rows of C (h < mr) run on the variant's kernel of
// h rows where it has one (the generated AVX-512 kernels come in every
// height), so A is never padded; the last columns (w < nr) on its kernel
// of the same rows and one or two vectors a row where one holds them
// (kernel.cols: 6×16 or 6×32 beside 6×64; the head 4096×256·256×96 ran
// 1.4× faster on one Zen 5 core than with a 6×64 strip of which half was
// kept). Else the last full strip (rows m−mr…m−1, columns n−w…n−1 of the
// kernel's width w) is recomputed into a scratch tile of which only the
// new part is kept, and A is packed only when m < mr.
//
// Within a depth block the rows go in groups (their part of op(A) at most
// aBlockBytes), each row strip over the column strips (the A strip stays
// in L1, the B strips stream from L2); variants with kernel.bPanel set run
// each column strip over the group's row strips instead where the B strip
// fits in L1 (BLIS's order; variants 13, 14: for the Xeon to time).
//
// # Accumulation (accuracy)
//
// A single FMA chain along the whole depth has a float32 error that grows
// with k (on data of one sign, ≈ √(k/3)·u relative, u = 2⁻²⁴); that is what a
// previous AVX2 kernel did, and it broke ops/attention's float32 error rule.
// Here each output is the sum of short chains, combined as a tree:
//
//  1. chunks: the micro-kernel sums kb consecutive depth steps in fresh
//     registers, one FMA chain per accumulator: kb is 4 for depth blocks
//     under 64, 8 up to 128 and 16 for the 256-deep blocks of k > 512
//     (chunkSingle). AVX-512 variant 1 sums the even and odd steps of a
//     chunk in two register sets, added at the chunk's end, in chunks twice
//     as long (chunkPaired): the same chain lengths. The first step of a
//     chunk multiplies instead of zeroing and adding.
//  2. four totals: chunk c is added to total c mod 4 (on the stack), so
//     each total's chain is a quarter of the chunks; at the end the totals
//     are added as a tree, (T₀+T₁)+(T₂+T₃).
//  3. depth blocks: k is cut into even blocks of at most 128 (k ≤ 512, or
//     Aᵀ with rows a page or more apart: pagedA) or 256; each block's
//     result, times alpha, is added into C.
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
// Chunk flushes (an add and a store per accumulator and chunk) and the
// tree cost about one vector instruction per 8 FMAs at kb = 8. Longer
// chunks would halve that but break the rule above (kb = 16 up to depth
// 128 gives up to 1.13× gonum's error, at k = 64; kb = 32 for 256-deep
// blocks 1.09× at k = 1024). On one Zen 5 core the micro-kernel alone runs
// at 88–91% of the FMA peak loop at kb = 8, 95% at kb = 16 and 100% with
// one chunk per block; on the Xeon the flush's adds take FMA ports.
//
// That rule is attention's (its fused float32 error within 2× of the
// decomposed path's, whose products are gonum's). nn's products, GemmDepth
// and GemmBias, sum each depth block in one chunk instead (chainFor: one
// FMA chain per accumulator along the block, blocks chained through C, as
// BLAS libraries do; GemmDepth's depth parts, each such a chain of blocks,
// added in order): their float32 error is one FMA chain's up to k = 256
// and below it beyond (TestAccuracyChain; at k = 1024, two depth parts on
// its 64×64 and 128×128 products, 0.16–0.36 of one chain's; at k = 4096,
// eight parts, 0.07–0.19 of one chain's and 0.07–1.3× gonum's), and
// float64 stays within 1e-12. One Zen 5
// core, nn's GPT products: the k = 256 ones +10–15% (235–250 GFLOP/s,
// 90–96% of the peak loop), the 1024- and 4096-deep ones +3–8%.
// Workspace.GemmChain is Workspace.Gemm in that order: ops/attention's
// products that accumulate its outputs (O += P·V and the gradients' dV,
// dK, dQ) run on it, its score and dP products on the chunks (see its
// tile.go). On the Xeon development machine one core ran the 6×64 kernel
// on a 128-deep block at 95–96% of the FMA peak loop in one chain, 85% in
// chunks of 8 (64-deep: 90–93%, 75%; BenchmarkChunks), and attention's
// tile products 1.15–1.17× faster in one chain (BenchmarkChainSplit).
// Workspace.GemmChainStair is one strip of 6 rows of such a product where
// row i sums i more depth steps than k (the causal mask's diagonal tile in
// ops/attention's O += P·V and dQ), on AVX-512 stair kernels
// (gen_micro.go) that add the staircase's last steps to the later rows only.
//
// # Over the cores
//
// Gemm cuts the larger of m and n into strips of the micro-kernel's tile
// and hands them to internal/parallel's ForDynamic in up to four chunks per
// worker, claimed as workers finish (a late or slow core then holds up one
// small chunk). Split by rows, op(B) is packed once, its strips over the
// cores, into a copy every worker reads (rowsParallel; each worker used to
// pack all of it); with op(B) packed whole, a worker's rows go in blocks
// whose part of C (256 KiB) stays in its cache across the depth blocks.
// Neither changes a bit of C: every entry sums the same micro-kernel calls
// in the same order as on one goroutine (TestRowsParallelBits).
//
// A weight gradient xᵀ·g (C [In, Out] small, the depth batch·context
// long) cut that way gives every chunk all of the depth of the operand it
// does not cut: at two cores eight chunks each re-read the packed g (4 MiB
// at 4096×256), at 16 cores the 256×96 head gradient ran as 43 chunks of
// one strip each reading 2 MiB for 4.7 MFLOP. GemmDepth cuts such a
// product (k ≥ 1024, (P−1)·m·n elements of scratch ≤ 1 MiB) along the
// depth into P parts, a power of two up to 8 fixed by the shape
// (DepthParts: two for C of 1 MiB, four for 256×256, eight for 256×96),
// each reading only its rows of both operands, and, where the cores
// outnumber the parts, C into a grid of blocks of whole strips
// (depthGrid: two units a core, blocks of at least 4096 entries and two
// strips); part 0 goes into C, the others into scratch, added into C in
// the order of p. The grid only moves entries between cores, so the bits
// are the same at any GOMAXPROCS (TestGemmDepth, TestDepthGrid), though
// not Gemm's.
//
// # Exp kernels (attention's forward)
//
// ScoreExp is ops/attention's score product S = alpha·Q·Kᵀ with the online
// softmax's exponentials taken in the micro-kernel's epilogue, while a
// 6×64 strip of scores is still in its 24 accumulators (gen_micro.go's
// expEpilogue; float32, AVX-512, depth ≤ 128): the same sums and the same
// rounding of alpha·t as Gemm's C, then per row a shift m that moves only
// when the strip's largest score passes it by more than τ = 8 (a lazy
// rescale, as FlashAttention-4's: the probabilities are at most 2^τ, and
// after a row's first keys its shift rarely moves), 2^(s − m) by
// vec.OnlineExp2Rows's AVX-512 exponential (its table, from
// vec.Exp2Table16), and the row sums in float64 lanes. The score tile is
// written once, as probabilities, instead of written as scores and then
// read twice (the maximum, the exponentials) by a separate pass. Their
// chunk totals are written in each chunk's last step, each accumulator's
// after its last product (gen_micro.go's closing), not in a burst after
// the step as the other kernels write theirs: the same sums. The epilogue
// is µops for the FMA ports (about 370 a strip beside its 1536 FMAs and
// 168 adds of the totals), so the exponentials leave no idle port time
// that overlapping them with the next strip's products could fill
// (cmd/cpubench/results/dev-2026-11-25-s16).
//
// # Instruction sets and variants
//
// The kernels are picked once from internal/isa (AVX-512, AVX2+FMA, or
// generic Go; the purego build tag or FLASHGORGON_SIMD=generic forces Go).
// A level may have several numbered variants (register tiles, micro_amd64.go
// lists them with their measured rates); one is in use, the others stay
// while they teach something, and FLASHGORGON_GEMM_VARIANT=n runs AVX-512
// variant n instead (to time it inside a program). The AVX-512 variants
// other than 1 are generated (gen_micro.go, micro512_amd64.s). Tests run
// every variant of every level the machine supports (TestVariants checks
// each against a float64 loop; BenchmarkVariants and BenchmarkVariantTable
// run that check before timing). BenchmarkVariantTable times the variants
// round-robin and keeps each one's best round, which compares them on a
// machine shared with other work.
//
// On the development machine's Zen 5 all variants reach 80–90% of the
// AVX-512 FMA peak loop at attention's tiles. On the GPU machine's Xeon
// (Sapphire Rapids class, two FMA ports whose adds share them) variant 6
// (6×64) reaches 76–80% on attention's tiles and 68–79% on nine of nn's
// ten products at one core, where variant 1 (the 6×32 kernel used before)
// reached 62–75% and 57–69% in the same rounds
// (cmd/cpubench/results/gemm-xeon-variants-run3.log). The tenth, the
// 4096-deep weight gradient D256/fc/xtg (now D256/256x1024/xtg), gave
// variant 6 49% and variant 1 68% there, and the reverse order (56%, 47%)
// in the run before; that was before the depth parts and Aᵀ read in place
// (results/dev-2026-11-23-s6.md).
package gemm
