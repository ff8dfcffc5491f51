package cuda

import (
	"fmt"
	"strings"
	"unsafe"
)

// mmaBwdCfg is one tensor-core backward kernel of kernels/attention_mma_bwd.cu: the dK/dV
// kernel (a block of BN/16 warps per BN keys, a warp per 16 keys, query tiles of BM rows walked
// in sub-blocks of SB) or the dQ kernel (DQ: a block of BM/16 warps per BM query rows, key tiles
// of BN rows), for one precision and head dimension D (d == D only). Three forms:
//
//	float32 tiles (LDM, Pre false): every precision; tiles swizzled in shared memory as
//	  float32, operands converted as each warp loads its fragments;
//	bfloat16 tiles (LDM true): BF16 only; tiles converted once to bfloat16 in shared memory
//	  (the streamed ones staged as float32 by cp.async), fragments loaded with ldmatrix;
//	bfloat16 planes (Pre true): BF16 only; a pre-pass (fg_attn_bwd_bf16_prep) rounds Q, dO,
//	  K and V to bfloat16 once per call into a scratch buffer (and writes L2 and delta), and
//	  the kernels copy bfloat16 tiles by cp.async straight into shared memory (half the
//	  bytes, no conversion per tile), fragments loaded with ldmatrix; with Reg each warp keeps
//	  its own 16 rows of K and V (dK/dV) or Q and dO (dQ) as A fragments in registers;
//	  Fused (dK/dV only): the dK/dV kernel also computes dQ, adding each key tile's share
//	  in a fixed order (a semaphore per 16 query rows), and no dQ kernel runs;
//	Hopper (with Pre; compute capability 9.0 only): the kernels of
//	  kernels/attention_hopper_bwd.cu (PTX for sm_90a) on the same planes, Hopper's warpgroup
//	  products (wgmma) instead of mma.sync: a warpgroup per 64 keys (dK/dV) or 64 query rows
//	  (dQ), BN/64 or BM/64 of them per block, tiles in wgmma's 128-byte swizzle; SB = BM
//	  (a whole query tile per product); Reg: the block's own operand (K and V, or Q and dO)
//	  as A fragments in registers; Ovl: P computed while dP's product runs (dK/dV: and dS
//	  while dV's); Fx: P = exp2(s·scale·log2 e − L2) as one FFMA and one ex2.approx.ftz
//	  (exp2f adds a denormal fix-up), and dS = P (dP − δ) without the factor scale, which
//	  multiplies dK and dQ once before their store (FlashAttention-2's order); Pipe: dQ, the
//	  product dQ += dS·K of key tile j is waited for only in step j + 1, with S of tile
//	  j + 1 (three stages of K and V instead of two); dK/dV (BM = 64), Sᵀ and dPᵀ of query
//	  tile j + 1 are issued before the elementwise step of tile j (two sets of them in
//	  registers, three stages of Q and dO).
//	Split (Hopper, Exact, D = 64 and 128; needs a scratch buffer): the 3xTF32 kernels of
//	  kernels/attention_hopper_exact_bwd.cu on the tf32 hi and lo planes its pre-pass
//	  (fg_attn_bwd_exact_prep, after fg_attn_bwd_mma_pre) writes: Q, dO, K, V by rows and
//	  Q, dO, K by columns (exactBwdPlaneBytes), moved by bulk copies: dK/dV one warpgroup of
//	  BN = 64 keys, query tiles of BM = 32 (Ws: a second warpgroup takes dV and dK, the
//	  first S^T, dP^T and the exponentials; Raw: P^T and dS^T handed over as floats, split
//	  into tf32 hi and lo by the second; Reg with Raw: K lo and V lo as register fragments
//	  too; Cl: clusters of two blocks sharing each query tile's copies); dQ two warpgroups of
//	  64 rows (BM = 128) and a producer warpgroup, key tiles of BN = 32. D = 128: the dK/dV
//	  kernel with One (Ws and Raw with one stage of the query tile, whose rows and columns
//	  halves are refilled separately: two stages do not fit), and the dQ kernel with One (a
//	  warpgroup of BM = 64 query rows, 128 threads, thread 0 issuing the bulk copies; one
//	  stage of the key tile, its rows and columns halves refilled separately; Reg: Q hi in
//	  registers).
//	X3 (Hopper, Exact, with Pre): the BF16 Hopper kernels' work split and tiles with every
//	  product as three IEEE half products (hi·hi + hi·lo + lo·hi, 3xF16, which the H100 runs
//	  at twice tf32's rate: 1.5 tf32 products where 3xTF32 takes 3). The pre-pass
//	  fg_attn_bwd_x3_prep4 writes each row of Q, dO, K and V scaled by its own power of two
//	  (so that half's range holds it, mma_bwd.cuh) as half hi and lo planes, and the inverse
//	  factors; P and dS are split per row of each tile, and each tile's products are summed
//	  from zero and added in float32.
type mmaBwdCfg struct {
	DQ, LDM   bool
	Prec      Precision
	D, BM, BN int
	SB        int // dK/dV only: queries per sub-block (S^T and dP^T take SB/2 registers each)
	Pre, Reg  bool
	Fused     bool
	Hopper    bool
	Ovl       bool // Hopper only: P computed while dP's product runs (dK/dV: and dS while dV's)
	Fx        bool // Hopper only: exp2 as FFMA + ex2.approx.ftz, scale applied to dK and dQ at the end
	Pipe      bool // Hopper: the next tile's products issued before this one's are waited for (three stages; dQ: with Ovl; dK/dV: BM = 64)
	B3        bool // Hopper dK/dV only: registers capped at 168 for three blocks per multiprocessor
	Split     bool // Hopper Exact: 3xTF32 on wgmma, on the tf32 planes of fg_attn_bwd_exact_prep
	Cl        bool // Split dK/dV: clusters of two blocks (adjacent keys) sharing each query tile's copies (multicast)
	Ws        bool // Split dK/dV: two warpgroups, S^T, dP^T, P^T, dS^T on one, dV and dK on the other
	Raw       bool // Ws: P^T and dS^T handed over as floats, split by the second warpgroup (with Reg: K lo, V lo in registers too)
	One       bool // Split, D = 128: one stage of the streamed tile, its rows and columns halves refilled separately (dK/dV: Ws with Raw; dQ: one warpgroup)
	X3        bool // Hopper Exact with Pre: 3xF16, every product as three half products on the hi and lo planes of fg_attn_bwd_x3_prep4
	Late      bool // Hopper BF16 and X3: the next tile's copy issued once this tile's first products are (dK/dV: the plain loop; dQ: with or without Ovl); BF16: the masks tested once per tile

	// Var is a measured form of a kernel (name suffix _Var): the One dK/dV kernel's vs and vsw1
	// (the kernel's FgWs1; 16 KiB more shared memory).
	Var string
}

// mmaBwdCfgs lists the kernels instantiated in kernels/attention_mma_bwd.cu and (Hopper)
// kernels/attention_hopper_bwd.cu: the tile sizes of the tensor-core backward, chosen here
// only. For each precision and D the first dK/dV entry
// and the first dQ entry are the ones AttentionBackward runs (the first without Pre where no
// scratch buffer can be had: AttentionBackwardBuffers without Scratch). Registers (ptxas -v,
// sm_80):
// 124 to 255; no spills except the EXACT dK/dV kernel at D = 128 (112 bytes: dK and dV alone
// take 128 registers, the split operands 16 more; the variant with 32-row query tiles spills
// 20 bytes but runs one block per multiprocessor instead of two and takes 34% longer).
// The bfloat16-plane kernels: 128 to 252 registers, no spills (ptxas -v, sm_90, CUDA 13).
// Shared memory: at most 192 KiB (see smem).
var mmaBwdCfgs = []mmaBwdCfg{
	// Exact on Hopper (compute capability 9.0, d = 64, with a scratch buffer): 3xTF32 on wgmma
	// (twelfth session, results/h100-2026-11-24-s12; backward time per launch, calls D and F).
	// The default dK/dV kernel puts S^T, dP^T and the exponentials on one warpgroup and dV, dK
	// on another (Ws; mbarriers hand the fragments over; K hi and V hi in registers): 3-5%
	// faster than the one-warpgroup kernel at N ≥ 4096 (call F; with named barriers instead
	// of mbarriers and K, V from shared memory it read 9-10% in call D, but racecheck flagged
	// the named-barrier handover). The dQ kernel keeps Q hi and dO hi in registers (3% faster
	// than dO hi from shared memory, call F). The whole Exact backward is 1.7-2.3× the mma.sync
	// pair's on attnbench's d = 64 rows. The dK/dV kernel in clusters of two sharing each query
	// tile by multicast (Cl: half the copies from L2) is 11-15% slower than the one-warpgroup
	// kernel (call C): the kernels are not bound by L2, and the cluster's barrier per tile costs
	// more than the copies it saves. Thirteenth session (results/h100-2026-11-24-s13, call A):
	// the default hands P^T and dS^T over as floats, which the second warpgroup splits (Raw:
	// half the handover's shared-memory bytes), 7-10% faster than the fragments (Ws alone);
	// K lo and V lo as register fragments as well (Reg) were within -4% to +1% of Raw alone.
	// 3xF16 (fifteenth session, results/h100-2026-11-24-s15; with a scratch buffer and
	// contiguous layouts, else the 3xTF32 kernels below): the BF16 kernels' tiles, two
	// warpgroups of 64 keys (or one) with query tiles of 64 (dK/dV; two warpgroups 6-9% faster
	// at N = 1024 and 4096, call x3c), two warpgroups of 64 rows with key tiles of 64 (dQ). The
	// backward at d = 64, non-causal N = 1024 / 4096 / 16384 (call x3e): 4.3 / 15.0 / 57.8 ms,
	// the 3xTF32 pair's 15.0 / 52.8 / 203 (call x3b). The defaults since the eighteenth session:
	// the same kernels with Late (the next tile's copy issued once the tile's first products
	// are, as the BF16 kernels below).
	{Prec: PrecisionExact, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, X3: true, Late: true},
	{DQ: true, Prec: PrecisionExact, D: 64, BM: 128, BN: 64, Pre: true, Hopper: true, X3: true, Late: true},
	{Prec: PrecisionExact, D: 128, BM: 32, BN: 128, SB: 32, Pre: true, Hopper: true, X3: true, Late: true},
	{DQ: true, Prec: PrecisionExact, D: 128, BM: 128, BN: 32, Pre: true, Hopper: true, X3: true, Late: true},
	{Prec: PrecisionExact, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, X3: true},
	{DQ: true, Prec: PrecisionExact, D: 64, BM: 128, BN: 64, Pre: true, Hopper: true, X3: true},
	{Prec: PrecisionExact, D: 64, BM: 64, BN: 64, SB: 64, Pre: true, Hopper: true, X3: true},
	// d = 128: K, V hi and lo take 128 KiB for 128 keys, so the query tile has 32 rows (two
	// warpgroups of 64 keys), and the dQ kernel's key tile 32 (two warpgroups of 64 rows). dV,
	// dK and dQ add each tile's products in two halves of 64 columns. One warpgroup with 64-row
	// (64-key) tiles instead ran dK/dV 1.33× and dQ 1.19× as long at N = 4096 (call x3c; its
	// dK/dV kernel spilled 292 bytes), and was dropped.
	{Prec: PrecisionExact, D: 128, BM: 32, BN: 128, SB: 32, Pre: true, Hopper: true, X3: true},
	{DQ: true, Prec: PrecisionExact, D: 128, BM: 128, BN: 32, Pre: true, Hopper: true, X3: true},
	{Prec: PrecisionExact, D: 64, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Ws: true, Raw: true},
	{DQ: true, Prec: PrecisionExact, D: 64, BM: 128, BN: 32, Hopper: true, Split: true},
	{Prec: PrecisionExact, D: 64, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Ws: true},
	{Prec: PrecisionExact, D: 64, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Ws: true, Raw: true, Reg: true},
	{Prec: PrecisionExact, D: 64, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true},
	{Prec: PrecisionExact, D: 64, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Cl: true},
	// d = 128 (fourteenth session): the dK/dV kernel of Ws and Raw with one stage of the query
	// tile (One; K hi and V hi in registers, K lo and V lo, the query tile's rows and columns
	// halves, each refilled as soon as its warpgroup is done with it), paired with the wgmma dQ
	// kernel below (until it came, with the mma.sync Exact dQ kernel). The default, vsw1: V hi's
	// columns 64-127 in shared memory (225.5 KiB; warpgroup 0 then holds 32 registers of V hi,
	// not 64) and warpgroup 1's chains one in flight, not two: ptxas spills 252 bytes, not 696,
	// and dK/dV takes 0.74-0.83 of the plain form's time (results/h100-2026-11-24-s14, calls
	// x128s and x128s-2; helper x128s measured eight forms: the one-chain forms alone, w0 and
	// w1, and warpgroup 1 in k rounds spilled as much or more and ran as fast or slower). Kept
	// for comparison: the plain form (209.5 KiB) and vs alone.
	{Prec: PrecisionExact, D: 128, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Ws: true, Raw: true, One: true, Var: "vsw1"},
	{Prec: PrecisionExact, D: 128, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Ws: true, Raw: true, One: true},
	{Prec: PrecisionExact, D: 128, BM: 32, BN: 64, SB: 32, Hopper: true, Split: true, Ws: true, Raw: true, One: true, Var: "vs"},
	// The dQ kernel at d = 128 (One: one warpgroup of 64 query rows, Q lo, dO hi and lo in
	// shared memory, one stage of the key tile of 32 whose rows and columns halves are
	// refilled separately; Reg: Q hi as A fragments in registers and dQ in column quarters
	// (m64n32k8: chain temporaries of 32 registers), else Q hi in shared memory too and dQ in
	// column halves), before the mma.sync one below, which stays as the pair without it
	// (mmaBwdPairs).
	{DQ: true, Prec: PrecisionExact, D: 128, BM: 64, BN: 32, Hopper: true, Split: true, One: true, Reg: true},
	{DQ: true, Prec: PrecisionExact, D: 128, BM: 64, BN: 32, Hopper: true, Split: true, One: true},
	// The BF16 defaults on Hopper since the eighteenth session (Late): the seventh session's
	// pairs below with the next tile's copy issued after the
	// tile's first products (ncu, call s18a: the copies' address arithmetic and issue, about
	// 40% of the d = 64 dK/dV kernel's warp samples, came before the products each tile), the
	// masks tested once per tile instead of per element (32 branches per tile in the dK/dV
	// kernel, a compare and a select per element in the dQ kernel), and the dK/dV walk's step
	// without a division (FgKvCursor). Call s18b, TestAttentionMMABwdTiming, backward ms old →
	// Late pair: d = 64 N = 4096 non-causal 5.93 → 4.86 (dK/dV 3.39 → 2.58, dQ 2.10 → 1.94),
	// N = 16384 21.5 → 17.9; d = 128 N = 4096 10.17 → 8.93, N = 16384 38.6 → 33.1. The d = 128
	// Ovl/Fx/Pipe dQ kernel with Late stays for comparison (within 1-4% of the Fx one). With
	// the copies' compile-time offsets (fg_load_sw128, call s18g): d = 64 N = 4096 4.86 → 3.99
	// (dK/dV 2.07, dQ 1.56), d = 128 8.93 → 7.58.
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64, Pre: true, Hopper: true, Fx: true, B3: true, Late: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Hopper: true, Ovl: true, Fx: true, Pipe: true, Late: true},
	{Prec: PrecisionBF16, D: 128, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, Late: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 128, Pre: true, Hopper: true, Fx: true, Late: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 64, Pre: true, Hopper: true, Ovl: true, Fx: true, Pipe: true, Late: true},
	// Hopper (compute capability 9.0) only; pickMMABwd passes over them elsewhere. The first
	// pair of each D is the fastest measured on the H100 (TestAttentionMMABwdTiming with
	// -mmabwd.cross after the tests checked every kernel, results/h100-2026-11-23-s7-bwd64,
	// call 2; the backward's time per launch: pre-pass, dK/dV, dQ). d = 64: the dK/dV kernel
	// of one warpgroup of 64 keys with 64-row query tiles, Fx, its registers capped at 168 (B3,
	// 32 bytes of spills) so that three blocks share a multiprocessor: 7-20% faster than the
	// sixth session's (one warpgroup, 128-row tiles, two blocks; Fx alone gains 0-4% there,
	// and spills 60 bytes at 255 registers); and the dQ kernel with Ovl, Fx and Pipe (two
	// warpgroups, 128-key tiles): 13-17% faster than Ovl alone (Fx 9-11%, Pipe 3-7% more).
	// The backward 8-13% faster than the sixth session's pair on every attnbench row. d = 128:
	// the sixth session's dK/dV kernel (two warpgroups of 64 keys, 64-row query tiles; its Fx
	// twin is 3-5% slower at 250 registers) and the dQ kernel with Fx (two warpgroups of 64 rows,
	// 128-key tiles; 4-5% faster than without): the backward 1-2% faster. Registers (ptxas
	// -v, sm_90a, CUDA 13): 130-255; spills only in the d = 64 Fx dK/dV kernels (32-60 bytes).
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64, Pre: true, Hopper: true, Fx: true, B3: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Hopper: true, Ovl: true, Fx: true, Pipe: true},
	{Prec: PrecisionBF16, D: 128, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 128, Pre: true, Hopper: true, Fx: true},
	// Other Hopper tiles and forms, for comparison. The sixth session's defaults: d = 64, the
	// dK/dV kernel n64 m128 and the dQ kernel with Ovl; d = 128, the dQ kernel m128 n128.
	{Prec: PrecisionBF16, D: 64, BM: 128, BN: 64, SB: 128, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Hopper: true, Ovl: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 128, Pre: true, Hopper: true},
	// Ovl in the dK/dV kernel loses 14-19%; in the dQ kernel without Fx, Ovl and Reg are
	// within 2% either way (results/h100-2026-11-23-s6-wgmmabwd).
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true},
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64, Pre: true, Hopper: true},
	{Prec: PrecisionBF16, D: 128, BM: 64, BN: 64, SB: 64, Pre: true, Hopper: true},
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, Ovl: true},
	{Prec: PrecisionBF16, D: 128, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, Ovl: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 64, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 64, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 64, BN: 64, Pre: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 64, Pre: true, Hopper: true, Ovl: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 128, Pre: true, Hopper: true, Ovl: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Reg: true, Hopper: true, Ovl: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Reg: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 64, Pre: true, Reg: true, Hopper: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 64, Pre: true, Reg: true, Hopper: true, Ovl: true},
	// Fx, Pipe and B3 forms (seventh session). d = 64: Fx in the sixth session's dK/dV tiles
	// (0-4%), in two warpgroups of 64 keys with 128-row tiles (n128 m128: within 2% of n64
	// m128, 255 registers, one block per multiprocessor); the dK/dV kernel with Pipe (n64 m64
	// and n128 m64: 31-49% slower than B3: ptxas serializes its wgmmas, C7511, "insufficient
	// register resources for the wgmma pipeline", 250 registers for two sets of S^T and dP^T,
	// dK, dV and the in-flight fragments); the dQ kernel with Ovl and Fx but not Pipe (m128
	// n128: 3-7% behind Pipe), one warpgroup of 64 rows (m64 n128, two blocks per
	// multiprocessor: 6-16% behind; m64 n64 with three blocks: 3-23% behind). d = 128: Fx in
	// the dK/dV kernel (3-5% slower); the dQ kernel with Ovl, Fx and Pipe, 64-key tiles (m128
	// n128 with three stages needs 256 KiB): its launches timed 1-3% under the default's on
	// every row, but only beside the Fx dK/dV kernel, so not yet the default.
	{Prec: PrecisionBF16, D: 64, BM: 128, BN: 64, SB: 128, Pre: true, Hopper: true, Fx: true},
	{Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, SB: 128, Pre: true, Hopper: true, Fx: true},
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64, Pre: true, Hopper: true, Fx: true, Pipe: true},
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, Fx: true, Pipe: true},
	{Prec: PrecisionBF16, D: 128, BM: 64, BN: 128, SB: 64, Pre: true, Hopper: true, Fx: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, Pre: true, Hopper: true, Ovl: true, Fx: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, Pre: true, Hopper: true, Ovl: true, Fx: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, Pre: true, Hopper: true, Ovl: true, Fx: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 64, Pre: true, Hopper: true, Ovl: true, Fx: true, Pipe: true},
	// BF16 on the pre-pass's bfloat16 planes (with a scratch buffer): the fastest tested pair
	// of each D on the H100 (results/h100-2026-11-23-s5-bwd/timing.log, every pair timed after
	// the tests checked it): backward 1.17–1.41× (d = 64) and 1.40–1.73× (d = 128) faster than
	// the defaults without a scratch buffer below, over attnbench's shapes. Four warps of 16
	// keys (d = 64: 64 keys and 64-row query tiles; d = 128: 64 keys, 32-row query tiles),
	// two blocks per multiprocessor, beat eight warps (128 keys) by up to 7% (d = 64; within
	// 0.3% the other way at N = 4096) and 11–15% (d = 128).
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64, Pre: true, Reg: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 64, Pre: true, Reg: true},
	{Prec: PrecisionBF16, D: 128, BM: 32, BN: 64, SB: 32, Pre: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 32, Pre: true, Reg: true},
	// The defaults without a scratch buffer: the fastest dK/dV and dQ kernels of each
	// precision and D on the H100 (results/mma-bwd/time-mma-bwd-run{2,3}.log, 44 kernels timed
	// after the tests checked them; those that lost everywhere were dropped: 8-warp float32
	// tiles, other stage sizes).
	{LDM: true, Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64},
	{DQ: true, LDM: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 32},
	{LDM: true, Prec: PrecisionBF16, D: 128, BM: 16, BN: 64, SB: 16},
	{DQ: true, LDM: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 16},
	{Prec: PrecisionTF32, D: 64, BM: 64, BN: 64, SB: 64},
	{DQ: true, Prec: PrecisionTF32, D: 64, BM: 64, BN: 64},
	{Prec: PrecisionTF32, D: 128, BM: 32, BN: 128, SB: 16},
	{DQ: true, Prec: PrecisionTF32, D: 128, BM: 128, BN: 32},
	{Prec: PrecisionExact, D: 64, BM: 32, BN: 64, SB: 16},
	{DQ: true, Prec: PrecisionExact, D: 64, BM: 64, BN: 64},
	{Prec: PrecisionExact, D: 128, BM: 16, BN: 64, SB: 16},
	{DQ: true, Prec: PrecisionExact, D: 128, BM: 64, BN: 16},
	// Other bfloat16-plane kernels, for comparison: eight warps (128 keys); the dQ kernel
	// without registers for Q and dO (d = 64: 0–2.4% faster than the default's dQ kernel,
	// timed with the 128-key dK/dV kernel only); and the fused ones (dQ inside the dK/dV
	// kernel), 1.1–1.7× slower than even the defaults without a scratch buffer: the ordered
	// adds wait for each other, three block syncs per query tile, and each tile's dQ share is
	// read, added and written in global memory.
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Reg: true},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 128, BN: 32, Pre: true},
	{Prec: PrecisionBF16, D: 128, BM: 32, BN: 128, SB: 16, Pre: true},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 128, BN: 16, Pre: true},
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, SB: 64, Pre: true, Reg: true, Fused: true},
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 128, SB: 32, Pre: true, Reg: true, Fused: true},
	{Prec: PrecisionBF16, D: 64, BM: 128, BN: 128, SB: 32, Pre: true, Reg: true, Fused: true},
	{Prec: PrecisionBF16, D: 128, BM: 32, BN: 128, SB: 16, Pre: true, Fused: true},
	{Prec: PrecisionBF16, D: 128, BM: 32, BN: 64, SB: 32, Pre: true, Fused: true},
	// Kept for comparison: BF16 on float32 tiles (the first defaults; the bfloat16-tile
	// defaults above take 22% (d = 64) and 43% (d = 128) off the backward at N = 16384).
	{Prec: PrecisionBF16, D: 64, BM: 64, BN: 64, SB: 64},
	{DQ: true, Prec: PrecisionBF16, D: 64, BM: 64, BN: 64},
	{Prec: PrecisionBF16, D: 128, BM: 32, BN: 64, SB: 32},
	{DQ: true, Prec: PrecisionBF16, D: 128, BM: 64, BN: 32},
}

func (c mmaBwdCfg) name() string {
	if c.Hopper {
		sfx := map[bool]string{true: "_reg"}[c.Reg] + map[bool]string{true: "_ovl"}[c.Ovl] + map[bool]string{true: "_fx"}[c.Fx] +
			map[bool]string{true: "_pipe"}[c.Pipe] + map[bool]string{true: "_b3"}[c.B3] + map[bool]string{true: "_cl"}[c.Cl] + map[bool]string{true: "_ws"}[c.Ws] +
			map[bool]string{true: "_raw"}[c.Raw] + map[bool]string{true: "_one"}[c.One] + map[bool]string{true: "_x3"}[c.X3] +
			map[bool]string{true: "_late"}[c.Late]
		if c.Var != "" {
			sfx += "_" + c.Var
		}
		if c.DQ {
			return fmt.Sprintf("fg_attn_bwd_wgmma_dq_%s_d%d_m%d_n%d%s", c.Prec, c.D, c.BM, c.BN, sfx)
		}
		return fmt.Sprintf("fg_attn_bwd_wgmma_dkdv_%s_d%d_n%d_m%d%s", c.Prec, c.D, c.BN, c.BM, sfx)
	}
	form := ""
	switch {
	case c.Fused:
		form = "fused_"
	case c.Pre:
		form = "pre_"
	case c.LDM:
		form = "ldm_"
	}
	reg := ""
	if c.Pre {
		reg = "_r0"
		if c.Reg {
			reg = "_r1"
		}
	}
	if c.DQ {
		return fmt.Sprintf("fg_attn_bwd_mma_%sdq_%s_d%d_m%d_n%d%s", form, c.Prec, c.D, c.BM, c.BN, reg)
	}
	return fmt.Sprintf("fg_attn_bwd_mma_%sdkdv_%s_d%d_n%d_m%d_s%d%s", form, c.Prec, c.D, c.BN, c.BM, c.SB, reg)
}

// module is the kernels/<module>.cu file of c's kernel.
func (c mmaBwdCfg) module() string {
	if c.Split {
		return "attention_hopper_exact_bwd"
	}
	if c.Hopper {
		return "attention_hopper_bwd"
	}
	return "attention_mma_bwd"
}

// threads is the block size: two threads per tile row of the block's own operand (Hopper: a
// warpgroup of 128 threads per 64 rows).
func (c mmaBwdCfg) threads() int {
	if c.Split && c.DQ && c.One { // one warpgroup, which issues the bulk copies too
		return 2 * c.BM
	}
	if c.Split && c.DQ { // and a producer warpgroup
		return 2*c.BM + 128
	}
	if c.Ws {
		return 4 * c.BN
	}
	if c.DQ {
		return 2 * c.BM
	}
	return 2 * c.BN
}

// smem is the kernel's shared memory (its SMEM constant). Float32 tiles: dK/dV K, V [BN][D]
// and two stages of Q, dO [BM][D] with (L2, delta) [BM]; dQ Q, dO [BM][D] and two stages of
// K, V [BN][D]. bfloat16 tiles: the float32 stages of the streamed tiles, and every tile in
// bfloat16 with rows of D + 8. bfloat16 planes: every tile in bfloat16 with rows of D + 8,
// two stages of the streamed ones (dK/dV: and their (L2, delta)); Fused: and dS^T [BN][BM+8]
// bfloat16. Hopper: the same tiles with rows of D (wgmma's swizzle needs no padding) and 1024
// bytes for their alignment.
func (c mmaBwdCfg) smem() int {
	h := (2*c.BM + 2*c.BN) * (c.D + 8) * 2
	switch {
	case c.Split && c.DQ && c.One: // Q lo, dO hi, dO lo (and without Reg Q hi) [BM][D]; one stage of K, V hi, lo [BN][D] and K^T hi, lo; 2 mbarriers
		return map[bool]int{false: 4, true: 3}[c.Reg]*c.BM*c.D*4 + 6*c.BN*c.D*4 + 16 + 1024
	case c.Split && c.DQ: // Q lo, dO lo [BM][D]; two stages of K, V hi, lo [BN][D] and K^T hi, lo; 4 mbarriers
		return 2*c.BM*c.D*4 + 2*6*c.BN*c.D*4 + 32 + 1024
	case c.One: // K lo, V lo [BN][D]; one stage of Q, dO hi, lo by rows and by columns; PB (Raw); (vs: V hi's second half;) (L2, delta) of two tiles; 4 mbarriers
		vh := 0
		if strings.HasPrefix(c.Var, "vs") {
			vh = c.BN * c.D * 4 / 2
		}
		return 2*c.BN*c.D*4 + 8*c.BM*c.D*4 + 128*32*4 + vh + 2*c.BM*8 + 32 + 1024
	case c.Ws: // as Split's, the fragment buffer (128 threads × 64 registers; Raw 32 floats) and its 2 mbarriers
		pb := 128 * 64 * 4
		if c.Raw {
			pb /= 2
		}
		return 4*c.BN*c.D*4 + 2*(8*c.BM*c.D*4+c.BM*8) + pb + 32 + 1024
	case c.Split: // K, V hi, lo [BN][D]; two stages of Q, dO hi, lo by rows and by columns and (L2, delta); 2 mbarriers
		return 4*c.BN*c.D*4 + 2*(8*c.BM*c.D*4+c.BM*8) + 16 + 1024
	case c.X3 && c.DQ: // Q, dO hi and lo [BM][D]; two stages of K, V hi and lo [BN][D], half, and of the keys' factors
		return (4*c.BM+8*c.BN)*c.D*2 + 2*c.BN*8 + 1024
	case c.X3: // K, V hi and lo [BN][D]; two stages of Q, dO hi and lo [BM][D], (L2, delta) and the rows' factors
		return (4*c.BN+8*c.BM)*c.D*2 + 2*2*c.BM*8 + 1024
	case c.Hopper && c.DQ && c.Pipe:
		return (2*c.BM+6*c.BN)*c.D*2 + 1024
	case c.Hopper && c.DQ:
		return (2*c.BM+4*c.BN)*c.D*2 + 1024
	case c.Hopper && c.Pipe:
		return (2*c.BN+6*c.BM)*c.D*2 + 3*c.BM*8 + 1024
	case c.Hopper:
		return (2*c.BN+4*c.BM)*c.D*2 + 2*c.BM*8 + 1024
	case c.DQ && c.Pre:
		return (2*c.BM + 4*c.BN) * (c.D + 8) * 2
	case c.Fused:
		return (2*c.BN+4*c.BM)*(c.D+8)*2 + 2*c.BM*8 + c.BN*(c.BM+8)*2
	case c.Pre:
		return (2*c.BN+4*c.BM)*(c.D+8)*2 + 2*c.BM*8
	case c.DQ && c.LDM:
		return 2*2*c.BN*c.D*4 + h
	case c.DQ:
		return (2*c.BM*c.D + 2*2*c.BN*c.D) * 4
	case c.LDM:
		return 2*(2*c.BM*c.D+2*c.BM)*4 + h
	}
	return (2*c.BN*c.D + 2*(2*c.BM*c.D+2*c.BM)) * 4
}

// grid is the launch grid: a block per key tile of every (b, key/value head), or per query tile
// of every (b, h). The fused kernel's blocks run over (b, key/value head) first, key tiles
// second, so that key tile j's blocks launch after key tile j - 1's, whose turns they wait for.
func (c mmaBwdCfg) grid(kp *attnParams) [3]int {
	if c.Cl { // clusters of two blocks along x
		return [3]int{2 * ceilDiv(int(kp.nk), 2*c.BN), int(kp.hkv), int(kp.b)}
	}
	if c.Fused {
		return [3]int{int(kp.b) * int(kp.hkv), ceilDiv(int(kp.nk), c.BN), 1}
	}
	if c.DQ {
		return [3]int{ceilDiv(int(kp.nq), c.BM), int(kp.h), int(kp.b)}
	}
	return [3]int{ceilDiv(int(kp.nk), c.BN), int(kp.hkv), int(kp.b)}
}

// pickMMABwd is the one place that decides whether a backward runs on the tensor cores: a
// float32 problem, a precision other than PrecisionFMA, rows of q, k, v, o (and of their
// gradients, which share their strides) on 16 bytes (the rule pickMMA applies to the forward),
// and kernels in mmaBwdCfgs for the precision and D. It returns the dK/dV and dQ kernels:
// the first of each for the precision and D, or the ones at indices dkdv and dq of
// mmaBwdCfgs when those are not negative (the tests' way to run every kernel). Kernels on the
// pre-pass's bfloat16 planes (Pre) only when scratch (a scratch buffer can be had) is set and
// the layouts are contiguous (the planes share the strides of the operands they copy), and
// those on tf32 planes (Split, whose layout is their own) only when scratch is set; the
// Hopper kernels only when sm, the device's compute capability as 10 major + minor, is 90.
func pickMMABwd(kp *attnParams, dt dtype, dkdv, dq int, scratch bool, sm int) (kv, q mmaBwdCfg, ok bool) {
	if dt != f32 || Precision(kp.precision) == PrecisionFMA {
		return kv, q, false
	}
	if !aligned16(kp) { // as the forward (pickMMA): the FMA kernels take the rest
		return kv, q, false
	}
	pre := scratch && contiguous(kp)
	var haveKV, haveQ bool
	for i, c := range mmaBwdCfgs {
		if c.Prec != Precision(kp.precision) || c.D != int(kp.d) || (c.Pre && !pre) || (c.Split && !scratch) || (c.Hopper && sm != 90) {
			continue
		}
		switch {
		case !c.DQ && !haveKV && (dkdv < 0 || dkdv == i):
			kv, haveKV = c, true
		case c.DQ && !haveQ && (dq < 0 || dq == i):
			q, haveQ = c, true
		}
	}
	return kv, q, haveKV && haveQ
}

// contiguous reports whether q, o [B, H, Nq, d] and k, v [B, Hkv, Nk, d] are contiguous (the
// layouts attnBase gives).
func contiguous(kp *attnParams) bool {
	d := int64(kp.d)
	qh, kh := int64(kp.nq)*d, int64(kp.nk)*d
	qb, kb := int64(kp.h)*qh, int64(kp.hkv)*kh
	return kp.qRow == d && kp.qHead == qh && kp.qBatch == qb && kp.oRow == d && kp.oHead == qh && kp.oBatch == qb &&
		kp.kRow == d && kp.kHead == kh && kp.kBatch == kb && kp.vRow == d && kp.vHead == kh && kp.vBatch == kb
}

// bwdScratchBytes is the size of fg_attn_bwd_bf16_prep's output: Q, dO [B, H, Nq, d] and K, V
// [B, Hkv, Nk, d] in bfloat16, then the fused kernel's semaphores, int32 [B, H, ceil(Nq/16)];
// with kept planes (AttentionBuffers.Planes), fg_attn_bwd_bf16_prep4_do's: dO alone.
func bwdScratchBytes(kp *attnParams, kept bool) int64 {
	q := int64(kp.b) * int64(kp.h) * int64(kp.nq) * int64(kp.d)
	k := int64(kp.b) * int64(kp.hkv) * int64(kp.nk) * int64(kp.d)
	if kept {
		return 2 * q
	}
	return 2*2*(q+k) + 4*int64(kp.b)*int64(kp.h)*int64(ceilDiv(int(kp.nq), 16))
}

// bwdScratchFor is the scratch the backward pair kv, q uses for kp (kept: with the planes a
// forward kept): the bfloat16 planes (Pre), the tf32 planes (Split), or none.
func bwdScratchFor(kp *attnParams, kv, q mmaBwdCfg, kept bool) int64 {
	switch {
	case kv.Split || q.Split:
		return exactBwdPlaneBytes(kp)
	case kv.X3:
		return x3ScratchBytes(kp)
	case kv.Pre || q.Pre:
		return bwdScratchBytes(kp, kept)
	}
	return 0
}

// bwdPrepKernel returns the pre-pass startMMABwd launches for kp and the query or key rows
// each of its warps converts: fg_attn_bwd_bf16_prep4 (16-byte accesses, two rows per warp at
// d <= 64), or with kept planes its form that converts dO alone. The first pre-pass,
// fg_attn_bwd_bf16_prep (a warp per row, 8-byte accesses), is kept for comparison
// (BenchmarkAttentionBwdPrep times the three). On the H100 at attnbench's sizes (B·H·N =
// 524288 on every row, so the same work on each; results/h100-2026-11-23-s7-bwd64): prep4
// 0.40-0.45 ms at d = 64 against 0.43-0.46 for prep, 0.70-0.74 against 0.70-0.78 at d = 128,
// before each row's L was loaded ahead of its sum (bwdPrepBlocks has the figures since).
// With x3 (the 3xF16 kernels, mmaBwdCfg.X3) it is fg_attn_bwd_x3_prep4, the same rows per warp.
func bwdPrepKernel(kp *attnParams, kept, x3 bool) (name string, rowsPerWarp int) {
	name = "fg_attn_bwd_bf16_prep4"
	switch {
	case x3:
		name = "fg_attn_bwd_x3_prep4"
	case kept:
		name = "fg_attn_bwd_bf16_prep4_do"
	}
	if kp.d <= 64 {
		return name, 2
	}
	return name, 1
}

// bwdPrepBlocks is the grid of the pre-pass for warps warps of work on sms multiprocessors:
// eight blocks of 8 warps a multiprocessor, grid-stride, where the work has more. On the H100
// (BenchmarkAttentionBwdPrep, B·H·N = 524288, results/h100-2026-11-24-s9 call D, each row's L
// loaded before its sum): fg_attn_bwd_bf16_prep4_do, the pre-pass with kept planes, 0.142 ms
// against 0.145 with a block per 8 warps of work (d = 64), 0.250 against 0.259 (d = 128);
// prep4 0.329 against 0.338 (d = 64), 0.652 against 0.630 (d = 128). (Before L was loaded
// early, call C: prep4_do 0.205 and 0.362 ms, prep4 0.406 and 0.702.)
func bwdPrepBlocks(warps, sms int) int { return max(1, min(ceilDiv(warps, 8), 8*sms)) }

// bwdStageMark, when set (by TestAttentionMMABwdTiming, on the worker), is called by
// startMMABwd after each of its launches with the number of kernels launched so far (1: the
// pre-pass, 2: the dK/dV kernel, 3: the dQ kernel), to record a CUDA event between them.
var bwdStageMark func(stage int) error

// startMMABwd launches the tensor-core backward: the row preprocess (L2 and delta into the
// workspace kp.delta, 8 bytes per row), the dK/dV kernel kv and the dQ kernel q (none when kv
// is Fused), each taking kp, or the pre-pass's output where it reads one:
//   - Pre (bfloat16 planes): the preprocess is bwdPrepKernel's, which also writes the planes
//     into bwdScratchBytes(kp) bytes from scratch, and those kernels read Q, dO, K and V from
//     there (same strides: pickMMABwd requires contiguous layouts). With planes (those a
//     forward kept, AttentionBuffers.Planes), the preprocess converts dO alone and the
//     kernels, which must share them (sharesPlanes), read Q's plane and the K and V tiles there.
//   - Split (the Exact kernels on Hopper, kernels/attention_hopper_exact_bwd.cu; a Split dQ
//     kernel only with a Split dK/dV kernel, which may also pair with the mma.sync dQ kernel, as
//     the tests do at d = 128): fg_attn_bwd_mma_pre, then fg_attn_bwd_exact_prep_d* writes the tf32 planes
//     into exactBwdPlaneBytes(kp) bytes from scratch (grid (G, 4): a column of blocks per
//     tensor, a tile of 32 rows at a time), and the Split kernels take the problem and the
//     planes (fg_mma_prep_params), a non-Split dQ kernel the problem (kp).
func (s *state) startMMABwd(kp *attnParams, kv, q mmaBwdCfg, scratch func(bytes int64) (devptr, error), planes *keptPlanes) error {
	const mod = "attention_mma_bwd" // the pre-passes
	rows := int(kp.b) * int(kp.h) * int(kp.nq)
	if planes != nil && !readsPlanes(kv, q) {
		return fmt.Errorf("cuda: attention backward: %s and %s do not read the forward's bfloat16 planes (Planes)", kv.name(), q.name())
	}
	if kv.X3 != q.X3 || kv.X3 && planes != nil {
		return fmt.Errorf("cuda: attention backward: %s and %s are not a pair of the 3xF16 Exact kernels on their own planes", kv.name(), q.name())
	}
	if (kv.Split || q.Split) && (!kv.Split || kv.D != int(kp.d) || q.D != int(kp.d)) {
		return fmt.Errorf("cuda: attention backward: %s and %s are not a pair of the Exact Hopper kernels for d=%d", kv.name(), q.name(), kp.d)
	}
	if (kv.Pre || q.Pre || kv.Split) && scratch == nil {
		return fmt.Errorf("cuda: attention backward: %s needs a scratch buffer", kv.name())
	}
	mark := func(stage int) error {
		if bwdStageMark != nil {
			return bwdStageMark(stage)
		}
		return nil
	}
	// arg is what kernel c takes: kp, or where it reads a pre-pass's output, m or pp.
	m := *kp
	var pp *mmaPrepParams
	arg := func(c mmaBwdCfg) unsafe.Pointer {
		switch {
		case c.Split:
			return unsafe.Pointer(pp)
		case c.Pre:
			return unsafe.Pointer(&m)
		}
		return unsafe.Pointer(kp)
	}
	if kv.Pre || q.Pre {
		dst, err := scratch(bwdScratchFor(kp, kv, q, planes != nil))
		if err != nil {
			return err
		}
		pp = &mmaPrepParams{src: *kp, dst: dst}
		// A warp per query row and per key row (prep4: per two rows where d <= 64), 8 warps a
		// block, grid-stride; query rows only with kept planes.
		prep, perWarp := bwdPrepKernel(kp, planes != nil, kv.X3)
		work := rows + int(kp.b)*int(kp.hkv)*int(kp.nk)
		if planes != nil {
			work = rows
		}
		if err := s.start(mod, prep, [3]int{bwdPrepBlocks(ceilDiv(work, perWarp), s.sms), 1, 1}, 256, 0,
			unsafe.Pointer(pp)); err != nil {
			return err
		}
		qn := devptr(2 * int64(rows) * int64(kp.d))
		kn := devptr(2 * int64(kp.b) * int64(kp.hkv) * int64(kp.nk) * int64(kp.d))
		m.q, m.do, m.k, m.v = dst, dst+qn, dst+2*qn, dst+2*qn+kn
		if kv.X3 { // hi planes, each followed by its lo plane
			m.q, m.do, m.k, m.v = dst, dst+2*qn, dst+4*qn, dst+4*qn+2*kn
		}
		if planes != nil { // Q's plane and the K, V tiles of the forward (kv_tiles), dO from the pre-pass
			m.q, m.do, m.k, m.v = planes.q, dst, planes.k, planes.v
			m.kvTiles = 1
		}
	} else {
		if err := s.start(mod, "fg_attn_bwd_mma_pre", [3]int{ceilDiv(rows, 4), 1, 1}, 128, 0, unsafe.Pointer(kp)); err != nil {
			return err
		}
		if kv.Split {
			dst, err := scratch(exactBwdPlaneBytes(kp))
			if err != nil {
				return err
			}
			pp = &mmaPrepParams{src: *kp, dst: dst}
			tiles := max(int(kp.b)*int(kp.h)*ceilDiv(int(kp.nq), 32), int(kp.b)*int(kp.hkv)*ceilDiv(int(kp.nk), 32))
			if err := s.start("attention_hopper_exact_bwd", exactBwdPrep(kp), [3]int{max(1, min(tiles, 4*s.sms)), 4, 1}, 256, 0,
				unsafe.Pointer(pp)); err != nil {
				return err
			}
		}
	}
	if err := mark(1); err != nil {
		return err
	}
	kernels := []mmaBwdCfg{kv, q}
	if kv.Fused {
		kernels = kernels[:1]
	}
	for i, c := range kernels {
		if err := s.start(c.module(), c.name(), c.grid(kp), c.threads(), c.smem(), arg(c)); err != nil {
			return err
		}
		if err := mark(2 + i); err != nil {
			return err
		}
	}
	return nil
}

// x3ScratchBytes is the size of fg_attn_bwd_x3_prep4's output (FgX3Planes): half hi and lo
// planes of Q, dO [B, H, Nq, d] and K, V [B, Hkv, Nk, d], then the inverse row factors, a
// float2 per query row and per key row.
func x3ScratchBytes(kp *attnParams) int64 {
	qr := int64(kp.b) * int64(kp.h) * int64(kp.nq)
	kr := int64(kp.b) * int64(kp.hkv) * int64(kp.nk)
	return 2*2*2*(qr+kr)*int64(kp.d) + 8*(qr+kr)
}

// exactBwdPlaneBytes is the size of fg_attn_bwd_exact_prep's planes (kernels/
// attention_hopper_exact_bwd.cu, FgTf32Planes): float32 tiles of 32 rows of d, four parts
// (hi and lo, by rows and by columns) of Q and of dO [B, H, ceil(Nq/32)·32, d], four of K and
// two of V [B, Hkv, ceil(Nk/32)·32, d].
func exactBwdPlaneBytes(kp *attnParams) int64 {
	tile := int64(32) * int64(kp.d) * 4
	q := int64(kp.b) * int64(kp.h) * int64(ceilDiv(int(kp.nq), 32)) * tile
	k := int64(kp.b) * int64(kp.hkv) * int64(ceilDiv(int(kp.nk), 32)) * tile
	return 8*q + 6*k
}

// exactBwdPrep is the name of the tf32-plane pre-pass for kp's head dimension.
func exactBwdPrep(kp *attnParams) string { return fmt.Sprintf("fg_attn_bwd_exact_prep_d%d", kp.d) }
