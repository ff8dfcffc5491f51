package cuda

import (
	"fmt"
	"structs"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// Precision selects the arithmetic of the float32 attention kernels, forward and backward
// (AttentionParams.Precision): internal/attnspec defines it once (with ops/attention's
// Options.Precision and the problem description); float64 problems always run the FMA
// kernels, in float64, whatever is asked for.
type Precision = attnspec.Precision

// The precisions (attnspec's), with the values of params.h's FG_PREC_*.
const (
	PrecisionDefault = attnspec.PrecisionDefault
	PrecisionFMA     = attnspec.PrecisionFMA
	PrecisionExact   = attnspec.PrecisionExact
	PrecisionTF32    = attnspec.PrecisionTF32
	PrecisionBF16    = attnspec.PrecisionBF16
)

// ParsePrecision returns the Precision whose String is s.
func ParsePrecision(s string) (Precision, error) {
	p, err := attnspec.ParsePrecision(s)
	if err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return p, nil
}

// mmaCfg is one tensor-core forward kernel of kernels/attention_mma.cu: its forward variant
// number, its precision, the head dimension D it takes (d == D only), the query tile rows BM
// and the key tile rows BN. The variants:
//
//	3: float32 tiles in shared memory, operands converted as each warp loads its fragments;
//	   64-row query tiles (4 warps of 16 rows)
//	4: bfloat16 only: tiles converted to bfloat16 once in shared memory, fragments loaded with
//	   ldmatrix; 64-row query tiles
//	5: variant 3 with 128-row query tiles (8 warps): each K and V tile read from L2 serves
//	   twice the rows
//	6: variant 4 with 128-row query tiles
//	7: bfloat16 only: K and V converted to bfloat16 once per call by a pre-pass
//	   (fg_attn_mma_prep, into a scratch buffer), so the loop streams half of float32's bytes;
//	   swizzled tiles without padding, ldmatrix (V transposed), two cp.async stages of K and V;
//	   warps of 16 rows, 64-row query tiles
//	8: variant 7 with 128-row query tiles (8 warps of 16 rows)
//	9: variant 7 with warps of 32 rows (4 warps, 128-row tiles): each B fragment read from
//	   shared memory serves two 16-row products
//	10: variant 9 with another key tile (BN = 128 at d = 64, 32 at d = 128)
//	11: TF32 and Exact: variants 3/5 on K and V converted once per call by the pre-pass
//	   (TF32: rounded; Exact: split into hi and lo planes), no conversion in the loop
//	12: bfloat16 only, compute capability 9.0 only (kernels/attention_hopper.cu, PTX for
//	   sm_90a): Hopper's warpgroup products (wgmma) on the pre-pass's K and V, two
//	   warpgroups of 64 query rows, tiles in wgmma's 128-byte swizzle, two cp.async stages
//	13: variant 12 with FlashAttention-3's overlap of each tile's softmax with the previous
//	   tile's P V inside a warpgroup
//	14: variant 12 fed by bulk copies (kernels/attention_hopper_bulk.cu): the pre-pass
//	   (fg_attn_hopper_prep) writes K and V tile by tile in the shared-memory layout, a
//	   producer warp moves each tile with one cp.async.bulk, mbarriers instead of block syncs
//	   (BN = 128, the pre-pass's tiling)
//	15: variant 14 with variant 13's overlap, the first tile peeled
//	16: variant 12 with one warpgroup per block (BM = 64): two blocks per SM overlap each
//	   other's softmax and products, at twice the tile reads per query row (d = 128: BN = 64,
//	   for two blocks' shared memory)
//	17, 18: variants 15 and 14 with a producer warpgroup instead of a producer warp, which
//	   hands its registers to the consumers (setmaxnreg: 240 each instead of 168)
//	19: variant 17 in a persistent grid (kernels/attention_hopper_persist.cu): one block per
//	   multiprocessor loops over the query tiles, the producer keeps the tile copies going
//	   from one tile's keys to the next's and prefetches the next Q into L2
//	20: variant 19 without the pre-pass kernel: the producer warpgroup's other warps convert
//	   K and V into the scratch planes under the products, a flag per tile (zeroed before the
//	   launch) telling the copies when a tile is there
//	21: variant 20 with the converters' loads staged in shared memory by cp.async (8 or 16
//	   chunks of 8 columns in flight per thread instead of 2 in registers)
//	22: variant 20 with each work item's Q rows staged in shared memory by the producer's
//	   bulk copies (float32, issued an item ahead), so that the consumers convert Q from
//	   shared memory instead of waiting for a load from L2 or DRAM at each item's start
//	24: Exact and TF32, compute capability 9.0 (kernels/attention_hopper_exact.cu): variant
//	   11's 3xTF32 (TF32: one product) on wgmma (m64nNk8 tf32), fed as variant 18 (a pre-pass
//	   writing K and V^T split into hi and lo tiles of BN keys in the shared-memory layout,
//	   TF32 the hi tiles only, bulk copies into a two-stage ring, a producer warpgroup); Q hi
//	   in registers, Q lo in shared memory; Exact's BN = 64 at d = 64, 32 at d = 128 (for the
//	   ring's two stages beside Q lo), TF32's 128 and 64
//	25: variant 24 in a persistent grid (the schedule of variants 19 to 22): the producer
//	   keeps the ring running from one query tile's keys to the next's and prefetches the next
//	   tile's Q rows into L2
//	26: variant 25 without the pre-pass kernel, as variant 20: the producer warpgroup's other
//	   warps write K and V^T's hi and lo tiles (the pre-pass's chunks, FgExactTile) into the
//	   scratch planes under the products, a flag per tile (zeroed before the launch) telling
//	   the copies when a tile is there; setmaxnreg 40 and 232 (Exact) or 56 and 224 (TF32)
//	   instead of 24 and 240
//	27: Exact, compute capability 9.0 (kernels/attention_hopper.cu): variant 12 in 3xF16 (three
//	   IEEE half products per product, which the H100 runs at twice tf32's rate: mma_bwd.cuh),
//	   on half hi and lo planes of K and V from a pre-pass (fg_attn_x3_kv: each tile of BN keys
//	   of K and of V scaled by its own power of two into half's range); Q split in the kernel
//	   with a factor per block; each key tile's P V summed from zero and added to O in float32
//	   (the accumulator truncates)
//	30: variant 27 in a persistent grid (the schedule of variants 19 to 22) without the
//	   pre-pass kernel: a converter warpgroup writes the planes' tiles under the products
//	   (fg_x3_kv_tile, 4 rows of K and V in flight per thread), a flag per tile (zeroed before
//	   the launch) telling the consumers when a tile is there
//	38: BF16, variant 22 whose converter 0 prefetches each conversion task's K and V rows into
//	   L2 as the task starts, and whose read-once and write-once streams (Q, the converters'
//	   rows, O) carry an L2 evict_first policy (HINT in attention_hopper_persist.cu)
type mmaCfg struct {
	Variant   int
	Prec      Precision
	D, BM, BN int
	MinNk     int // the default (variant 0) only where Nk >= MinNk (0: every Nk)
}

// mmaCfgs lists the kernels instantiated in kernels/attention_mma.cu: the tile sizes of the
// tensor-core forward, chosen here only. For each precision and D the first entry is the one
// AttentionForward runs, the first without a pre-pass the one where no scratch buffer can be
// had (AttentionBuffers without Scratch). The order is the speed on the H100 over
// attnbench's shapes (BenchmarkAttentionMMA in results/mma-fwd-v2/run2: every variant timed
// after the tests checked it; forward TFLOP/s from N = 1024 causal to N = 16384):
//
//	bf16 d=64:   v10 117–273, v9 114–239, v7 118–233, v8 111–231; v3 106–134 (the float32
//	             kernels at d = 64 are within 2% of each other)
//	bf16 d=128:  v9 131–288, v10 125–260, v7 109–213, v8 101–206; v6 116–160
//	tf32:        v11 71–122; v5 77–99
//	exact:       v11 29–42; v3 23–38, v5 27–35
//
// On the H100, Exact and TF32 on wgmma (results/h100-2026-11-24-s11, calls D to F, TFLOP/s
// from N = 1024 causal to N = 16384; the pre-pass included):
//
//	exact d=64:  v25 55–102, v24 52–100; v11 30–42
//	exact d=128: v25 56–101, v24 54–103; v11 29–41
//	tf32 d=64:   v25 110–255, v24 104–229; v11 71–122
//	tf32 d=128:  v25 127–294, v24 124–306; v11 71–116
//
// The 32-row warps (v9, v10) use 245–255 registers (ptxas -v, sm_80 and sm_90; v9 at d = 128
// and v10 at d = 64 spill 36–48 bytes), the others 124–207.
//
// On the H100 (compute capability 9.0; BenchmarkAttentionMMA, the pre-pass included,
// TFLOP/s from N = 1024 causal to N = 16384; results/hopper/run2 and, for 14, 15, 17 and 18
// side by side, run4):
//
//	bf16 d=64:   v15 132–372, v14 131–358, v16 112–278, v12 106–278, v13 100–236; v10 117–272
//	             run4: v15 134–371, v17 125–364, v14 131–358, v18 130–353
//	bf16 d=128:  v14 166–552, v15 153–426, v12 126–351, v16 127–295, v13 123–329; v9 131–269
//	             run4: v17 168–571, v18 161–521, v14 165–519, v15 152–427
//
// The bulk copies and mbarriers (v14, v15) are what pays: the warpgroups stop waiting for
// each other; at d = 128 the producer warpgroup's registers (v17) add 2–11%. v13's overlap
// loses: ptxas (CUDA 13) serializes its wgmma instructions ("non wgmma instructions reading
// accumulator registers ... between start and end of the pipeline stage"); v12, v13 and v16
// use 158–204 registers, no spills; v14 and v15 166–168 (ptxas's budget for 288 threads), v15
// at d = 128 serialized for lack of registers, which v17 (240 by setmaxnreg) is not.
//
// The persistent kernels (eighth session, results/h100-2026-11-24-s8, BenchmarkAttentionMMA
// call F, ms from N = 1024 to 16384, non-causal / causal; every variant checked by the tests
// first):
//
//	bf16 d=64:   v20 0.520 / 0.408, 1.526 / 0.883, 5.58 / 3.01; v21 0.540 / 0.438, 1.505 /
//	             0.872, 5.31 / 2.80; v15 0.653 / 0.548, 1.708 / 1.138, 5.91 / 3.17
//	bf16 d=128:  v20 0.778 / 0.734, 2.010 / 1.190, 7.16 / 4.10; v21 0.894 / 0.777, 2.047 /
//	             1.239, 7.29 / 3.74; v17 1.020 / 0.808, 2.280 / 1.490, 8.10 / 4.57
//
// What paid, call by call: the pre-pass fused into the kernel (v20 against v19, whose pre-pass
// runs first: N = 1024 8-13% at d = 128), setmaxnreg at d = 64 too (v20 without it, 2-7%
// slower at N >= 4096), and each item's Q loads all issued before the first conversion (on
// the critical path of every item: 8-17% at N = 1024). Staging the converters' loads with
// cp.async (v21, 8 times the bytes in flight) is faster at d = 64 from N = 4096 (1-7%) and
// slower at N = 1024 (4-15%): at N = 1024 the DRAM traffic of float32 inputs (Q, K and V
// read, O written, the planes written) is what bounds the kernel, and faster converters take
// it from the consumers. v19 at d = 64 without setmaxnreg (the first call) was 30% slower
// than v15.
//
// Variant 22 against variant 20 (tenth session, results/h100-2026-11-24-s10 call B, three
// rounds alternating, ms means, v22 ÷ v20): d = 64 N = 1024 0.958 (non-causal) / 1.012
// (causal), 4096 0.987 / 0.990, 16384 0.985 / 0.999; d = 128 N = 1024 0.962 / 1.046 (one
// round at 1.17, the others 1.004 and 0.966), 4096 0.977 / 0.972, 16384 0.993 / 0.967. The
// staged Q pays where items are short and not causal (8 key tiles of 128 at N = 1024: an
// item's Q load was a round trip of the consumers' critical path).
var mmaCfgs = []mmaCfg{
	// Exact: 3xF16 (fifteenth session, results/h100-2026-11-24-s15, call x3f, BenchmarkAttentionMMA,
	// v27 ÷ v26 time, N = 1024 non-causal / causal and N = 4096): d = 64 0.91 / 0.98 and 0.79 /
	// 0.88; d = 128 0.86 / 1.04 and 0.73 / 0.77 (v27 64-142 TFLOP/s in call F). The rows below
	// (v24 from Nk = 16384 at d = 128, v26) stay for comparison.
	// Until the eighteenth session: variant 30 (variant 27 in a persistent grid, its pre-pass
	// under the products) at d = 128 below Nk = 4096, 27 elsewhere (sixteenth session,
	// results/h100-2026-11-25-s16 call x29c,
	// BenchmarkAttentionMMA, three rounds, ms, v27 / v30, N = 1024 non-causal and causal, then
	// 4096): d = 128 2.56 / 2.51, 1.75 / 1.61, 8.57 / 8.90, 4.74 / 4.79; d = 64 1.39 / 1.45,
	// 0.92 / 0.95, 4.61 / 4.96, 2.47 / 2.77. Variants 29, 31 and 32 (2 and 1 rows in flight per
	// converter with setmaxnreg 40 and 232; 30 with Q loaded 2 chunks at a time) were within 1-8%
	// of 30 but at d = 128, N = 1024 causal (29: 2.09 ms; 31 and 32: 1.71-1.73), and were dropped.
	// Variants 45 and 46 (eighteenth session): 27 and 30 with the next key tile's copy issued
	// once the tile's S' product is (LATE in attention_hopper.cu). Variant 45 is the default
	// (results/h100-2026-11-25-s18 call E, BenchmarkAttentionMMA, two rounds, ms, v27 / v45 /
	// v30 / v46, N = 1024 non-causal and causal, 4096 non-causal and causal, 16384 non-causal):
	// d = 64 1.38 / 1.33 / 1.45 / 1.38, 0.91 / 0.88 / 0.95 / 0.90, 4.59 / 4.28 / 4.99 / 4.65,
	// 2.64 / 2.36 / 2.82 / 2.49, 18.9 / 16.3 / 19.5 / 17.7; d = 128 2.52 / 2.43 / 2.51 / 2.46,
	// 1.67 / 1.62 / 1.61 / 1.62, 8.44 / 8.24 / 8.94 / 8.67, 4.67 / 4.46 / 4.85 / 4.68,
	// 33.5 / 33.7 / 35.8 / 33.4: v45 at or below the others on every row but the last (within
	// 1%), so the persistent variant no longer pays at d = 128 below Nk = 4096.
	{45, PrecisionExact, 64, 128, 128, 0}, {45, PrecisionExact, 128, 128, 64, 0},
	{46, PrecisionExact, 128, 128, 64, 0}, {46, PrecisionExact, 64, 128, 128, 0},
	{27, PrecisionExact, 64, 128, 128, 0}, {27, PrecisionExact, 128, 128, 64, 4096},
	{30, PrecisionExact, 128, 128, 64, 0}, {30, PrecisionExact, 64, 128, 128, 0},
	// Hopper (compute capability 9.0) only; pickMMA passes over them elsewhere. At d = 64
	// variant 21 from Nk = 16384, else 22: BenchmarkAttentionMMA, five alternating rounds
	// (results/h100-2026-11-24-s9, call F), v21 against v20: N = 16384 1.3% (non-causal) and
	// 0.6% (causal) faster, N = 4096 1.4% and 2.7% slower, N = 1024 1-14% slower; v22 against
	// v20 above (N = 16384: 1.5% and 0.1% faster). d = 128: variant 22. Below Nk = 4096,
	// variant 38 (22 with L2 hints and each converter task's rows prefetched into L2):
	// seventeenth session, results/h100-2026-11-25-s17 calls s17b and s17c, BenchmarkAttentionMMA
	// three rounds each, medians, ms, v22 / v38 at N = 1024 non-causal and causal: d = 64
	// 0.462 / 0.474, 0.362 / 0.317 and 0.457 / 0.476, 0.355 / 0.313; d = 128 0.754 / 0.718,
	// 0.709 / 0.644 and 0.744 / 0.702, 0.708 / 0.641. From N = 4096 v38 is up to 10% slower.
	{Variant: 21, Prec: PrecisionBF16, D: 64, BM: 128, BN: hopperBN, MinNk: 16384},
	{Variant: 22, Prec: PrecisionBF16, D: 64, BM: 128, BN: hopperBN, MinNk: 4096},
	{Variant: 22, Prec: PrecisionBF16, D: 128, BM: 128, BN: hopperBN, MinNk: 4096},
	{38, PrecisionBF16, 64, 128, hopperBN, 0}, {38, PrecisionBF16, 128, 128, hopperBN, 0},
	// Exact and TF32: variant 25 (persistent), but variant 24 at d = 128 from Nk = 16384
	// (Exact) and 4096 (TF32) (results/h100-2026-11-24-s11, calls E and F: d = 64, three
	// rounds alternating, v25 ÷ v24 1.05, 1.06, 1.02, 1.03, 1.01, 1.00 for Exact and 1.08-1.10
	// for TF32 from N = 1024 to 16384; d = 128, one round, Exact 1.04, 1.05, 1.01, 1.02, 0.98,
	// 0.98 and TF32 1.02, 1.03, 0.98, 0.96, 0.96, 0.92).
	{Variant: 24, Prec: PrecisionExact, D: 128, BM: 128, BN: 32, MinNk: 16384},
	{Variant: 24, Prec: PrecisionTF32, D: 128, BM: 128, BN: 64, MinNk: 4096},
	// Exact: variant 26 (variant 25 with its pre-pass fused) elsewhere; TF32 keeps 25. Against
	// 25 (thirteenth session, results/h100-2026-11-24-s13 call B, BenchmarkAttentionMMA, five
	// rounds alternating, v26 ÷ v25 from N = 1024 to 16384, non-causal / causal): Exact d = 64
	// 0.90 / 0.88, 0.97 / 0.96, 1.00 / 0.99; d = 128 0.90 / 0.90, 1.00 / 0.97, 0.97 / 1.00;
	// TF32 1.39 / 1.82 and 1.55 / 1.97 at N = 1024 (its converters cannot keep up with a
	// third of Exact's products), 0.94-1.08 from 4096.
	{26, PrecisionExact, 64, 128, 64, 0}, {26, PrecisionExact, 128, 128, 32, 0},
	{25, PrecisionTF32, 64, 128, 128, 0}, {25, PrecisionTF32, 128, 128, 64, 0},
	{25, PrecisionExact, 64, 128, 64, 0}, {25, PrecisionExact, 128, 128, 32, 0},
	{24, PrecisionExact, 64, 128, 64, 0}, {24, PrecisionTF32, 64, 128, 128, 0},
	{26, PrecisionTF32, 64, 128, 128, 0}, {26, PrecisionTF32, 128, 128, 64, 0},
	{20, PrecisionBF16, 64, 128, hopperBN, 0}, {20, PrecisionBF16, 128, 128, hopperBN, 0},
	{15, PrecisionBF16, 64, 128, hopperBN, 0}, {17, PrecisionBF16, 128, 128, hopperBN, 0},
	{14, PrecisionBF16, 64, 128, hopperBN, 0}, {14, PrecisionBF16, 128, 128, hopperBN, 0},
	{17, PrecisionBF16, 64, 128, hopperBN, 0}, {18, PrecisionBF16, 128, 128, hopperBN, 0},
	{18, PrecisionBF16, 64, 128, hopperBN, 0}, {15, PrecisionBF16, 128, 128, hopperBN, 0},
	{12, PrecisionBF16, 64, 128, 128, 0}, {12, PrecisionBF16, 128, 128, 128, 0},
	{16, PrecisionBF16, 64, 64, 128, 0}, {16, PrecisionBF16, 128, 64, 64, 0},
	{13, PrecisionBF16, 64, 128, 128, 0}, {13, PrecisionBF16, 128, 128, 128, 0},
	{19, PrecisionBF16, 64, 128, hopperBN, 0}, {19, PrecisionBF16, 128, 128, hopperBN, 0},
	{21, PrecisionBF16, 128, 128, hopperBN, 0},
	// Every GPU of compute capability 8.0 on.
	{10, PrecisionBF16, 64, 128, 128, 0}, {9, PrecisionBF16, 128, 128, 64, 0},
	{11, PrecisionTF32, 64, 128, 64, 0}, {11, PrecisionTF32, 128, 128, 64, 0},
	{11, PrecisionExact, 64, 64, 64, 0}, {11, PrecisionExact, 128, 128, 64, 0},
	// Without a scratch buffer.
	{3, PrecisionBF16, 64, 64, 64, 0}, {6, PrecisionBF16, 128, 128, 64, 0},
	{5, PrecisionTF32, 64, 128, 64, 0}, {5, PrecisionTF32, 128, 128, 64, 0},
	{3, PrecisionExact, 64, 64, 64, 0}, {5, PrecisionExact, 128, 128, 64, 0},
	// The other variants, kept for comparison (BenchmarkAttentionMMA times them all).
	{7, PrecisionBF16, 64, 64, 64, 0}, {7, PrecisionBF16, 128, 64, 64, 0},
	{8, PrecisionBF16, 64, 128, 64, 0}, {8, PrecisionBF16, 128, 128, 64, 0},
	{9, PrecisionBF16, 64, 128, 64, 0}, {10, PrecisionBF16, 128, 128, 32, 0},
	{4, PrecisionBF16, 64, 64, 64, 0}, {4, PrecisionBF16, 128, 64, 64, 0},
	{6, PrecisionBF16, 64, 128, 64, 0}, {3, PrecisionBF16, 128, 64, 64, 0},
	{3, PrecisionTF32, 64, 64, 64, 0}, {3, PrecisionTF32, 128, 64, 64, 0},
	{5, PrecisionExact, 64, 128, 64, 0}, {3, PrecisionExact, 128, 64, 64, 0},
}

// ldm reports whether c is an ldmatrix kernel of float32 inputs (variants 4 and 6).
func (c mmaCfg) ldm() bool { return c.Variant == 4 || c.Variant == 6 }

// pre reports whether c reads K and V converted by a pre-pass (variants 7 to 18).
func (c mmaCfg) pre() bool { return c.Variant >= 7 }

// hopper reports whether c is a wgmma kernel (variants 12 to 18: attention_hopper.cu and
// attention_hopper_bulk.cu), whose PTX (sm_90a) only a GPU of compute capability 9.0 runs.
func (c mmaCfg) hopper() bool { return c.Variant >= 12 }

// bulk reports whether c is a wgmma kernel fed by bulk copies (variants 14, 15, 17 to 22, 24
// to 26),
// whose K and V planes are in its pre-pass's layout (whole tiles of c.BN keys in the
// shared-memory layout: fg_attn_hopper_prep's, BN = hopperBN, or fg_attn_hopper_prep_exact's).
func (c mmaCfg) bulk() bool { return c.Variant == 14 || c.Variant == 15 || c.pwg() }

// pwg reports whether c's producer is a whole warpgroup (variants 17 to 22, 24 to 26 and 38),
// not a warp.
func (c mmaCfg) pwg() bool { return c.Variant == 17 || c.Variant == 18 || c.persistBF16() || c.exact() }

// exact reports whether c is a TF32 wgmma kernel of Exact or TF32 (variants 24 to 26), whose
// pre-pass (26: its converters) writes K and V^T rounded to tf32 (Exact: split into hi and lo)
// in tiles of c.BN keys.
func (c mmaCfg) exact() bool { return c.Variant >= 24 && c.Variant <= 26 }

// qst reports whether c stages each work item's Q rows by bulk copies (variants 22 and 38),
// which take the rows as one block: Q's rows must be contiguous.
func (c mmaCfg) qst() bool { return c.Variant == 22 || c.Variant == 38 }

// persistBF16 reports whether c is a persistent BF16 kernel of attention_hopper_persist.cu
// (variants 19 to 22 and 38).
func (c mmaCfg) persistBF16() bool { return c.Variant >= 19 && c.Variant <= 22 || c.Variant == 38 }

// x3 reports whether c is a 3xF16 forward (variants 27, 30, 45 and 46).
func (c mmaCfg) x3() bool { return c.Variant == 27 || c.x3persist() || c.Variant == 45 }

// x3persist reports whether c is a persistent 3xF16 forward (variants 30 and 46).
func (c mmaCfg) x3persist() bool { return c.Variant == 30 || c.Variant == 46 }

// persistent reports whether c runs in a persistent grid (variants 19 to 22, 25, 26, 30, 38
// and 46: persistGrid blocks, each looping over query tiles).
func (c mmaCfg) persistent() bool {
	return c.persistBF16() || c.Variant == 25 || c.Variant == 26 || c.x3persist()
}

// fused reports whether c converts K and V itself (variants 20 to 22, 26, 30, 38 and 46): no
// pre-pass kernel runs, and its scratch holds a flag per tile after the planes.
func (c mmaCfg) fused() bool {
	return c.persistBF16() && c.Variant != 19 || c.Variant == 26 || c.x3persist()
}

// keeps reports whether c's planes can be kept for the backward (AttentionBuffers.Planes,
// keptLayout): the fused bfloat16 kernels (variants 20 to 22 and 38), whose tiles are the BF16
// backward's operands; variant 26's tf32 tiles are not.
func (c mmaCfg) keeps() bool { return c.fused() && c.Prec == PrecisionBF16 }

// hopperBN is the key tile of fg_attn_hopper_prep's layout (FG_HOPPER_BN).
const hopperBN = 128

// prep is the pre-pass kernel of c (c.pre() and not c.fused()), which is in
// attention_hopper_bulk for the bulk kernels, beside its kernel for the Exact ones and in
// attention_mma otherwise.
func (c mmaCfg) prep() (module, name string) {
	if c.x3() {
		return c.module(), fmt.Sprintf("fg_attn_x3_kv_d%d_n%d", c.D, c.BN)
	}
	if c.exact() {
		return c.module(), fmt.Sprintf("fg_attn_hopper_prep_%s_d%d_n%d", c.Prec, c.D, c.BN)
	}
	if c.bulk() {
		return "attention_hopper_bulk", "fg_attn_hopper_prep"
	}
	return "attention_mma", "fg_attn_mma_prep"
}

// module is the kernels/<module>.cu file of c's kernel.
func (c mmaCfg) module() string {
	switch {
	case c.x3():
		return "attention_hopper"
	case c.exact():
		return "attention_hopper_exact"
	case c.persistent():
		return "attention_hopper_persist"
	case c.bulk():
		return "attention_hopper_bulk"
	case c.hopper():
		return "attention_hopper"
	}
	return "attention_mma"
}

// warpRows is the query rows of one warp: 32 in variants 9 and 10, 16 in the others.
func (c mmaCfg) warpRows() int {
	if c.Variant == 9 || c.Variant == 10 {
		return 32
	}
	return 16
}

// threads is the block size: a warp per warpRows query rows, and the producer warp (or
// warpgroup) of the bulk kernels.
func (c mmaCfg) threads() int {
	switch {
	case c.pwg() || c.x3() && c.fused(): // and the producer (variant 30: converter) warpgroup
		return 32*c.BM/c.warpRows() + 128
	case c.bulk():
		return 32*c.BM/c.warpRows() + 32
	}
	return 32 * c.BM / c.warpRows()
}

func (c mmaCfg) name() string {
	switch {
	case c.hopper():
		return fmt.Sprintf("fg_attn_fwd_wgmma_v%d_%s_d%d_m%d_n%d", c.Variant, c.Prec, c.D, c.BM, c.BN)
	case c.ldm():
		return fmt.Sprintf("fg_attn_fwd_mma_ldm_%s_d%d_m%d_n%d", c.Prec, c.D, c.BM, c.BN)
	case c.pre() && c.Prec == PrecisionBF16:
		return fmt.Sprintf("fg_attn_fwd_mma_pre_bf16_d%d_m%d_w%d_n%d", c.D, c.BM, c.warpRows(), c.BN)
	case c.pre():
		return fmt.Sprintf("fg_attn_fwd_mma_split_%s_d%d_m%d_n%d", c.Prec, c.D, c.BM, c.BN)
	}
	return fmt.Sprintf("fg_attn_fwd_mma_%s_d%d_m%d_n%d", c.Prec, c.D, c.BM, c.BN)
}

// smem is the kernel's shared memory (its SMEM constant): variants 3, 5 and 11 (TF32)
// Q [BM][D+16], K [BN][D+16], V [BN][D+4] float32, 11 (Exact) K and V twice (hi and lo);
// variants 4, 6 K and V [BN][D] float32 (Q is staged there first, so BM <= 2 BN) and
// [BN][D+8] bfloat16; variants 7 to 10 Q [BM][D], K and V [2][BN][D] bfloat16; 12, 13 and
// 16 the same and 1024 bytes, to align the tiles to wgmma's swizzle blocks; the bulk kernels
// (14, 15, 17 to 22) 64 more, their mbarriers; variant 21 the converters' staging (96
// threads' chunks of 8 columns of K and V in float32: 16 each at d = 64, 8 at d = 128, the U
// of its instantiations); variant 22 64 more for Q's mbarriers, and Q's staging tile.
func (c mmaCfg) smem() int {
	switch {
	case c.x3(): // Q hi, lo [BM][D]; two stages of K, V hi, lo [BN][D], half
		return (2*c.BM+8*c.BN)*c.D*2 + 1024
	case c.exact(): // Exact: Q lo [BM][D]; K and V^T [2][parts][BN][D] float32 (hi, lo; TF32 hi); alignment, 8 mbarriers
		qlo, parts := c.BM*c.D*4, 2
		if c.Prec == PrecisionTF32 {
			qlo, parts = 0, 1
		}
		return qlo + 4*parts*c.BN*c.D*4 + 1024 + 64
	case c.qst(): // and Q's two mbarriers (64 bytes with their padding) and staging tile, float32 [BM][D]
		return (c.BM+4*c.BN)*c.D*2 + 1024 + 64 + 64 + c.BM*c.D*4
	case c.Variant == 21: // and the converters' staging: 96 threads' U chunks of K and V (64 bytes each)
		u := 16 // the kernel's U: 16 chunks at d = 64, 8 at d = 128
		if c.D == 128 {
			u = 8
		}
		return (c.BM+4*c.BN)*c.D*2 + 1024 + 64 + 96*64*u
	case c.bulk():
		return (c.BM+4*c.BN)*c.D*2 + 1024 + 64 // and 8 mbarriers
	case c.hopper():
		return (c.BM+4*c.BN)*c.D*2 + 1024
	case c.ldm():
		return 2*c.BN*c.D*4 + 2*c.BN*(c.D+8)*2
	case c.pre() && c.Prec == PrecisionBF16:
		return (c.BM + 4*c.BN) * c.D * 2
	case c.pre() && c.Prec == PrecisionExact:
		return (c.BM*(c.D+16) + 2*(c.BN*(c.D+16)+c.BN*(c.D+4))) * 4
	}
	return (c.BM*(c.D+16) + c.BN*(c.D+16) + c.BN*(c.D+4)) * 4
}

// scratchPlanes is the number of [B, Hkv, Nk, D] planes of the pre-pass's output and their
// element size in bytes: BF16 K and V in bfloat16 (2, 2); TF32 K and V rounded (2, 4); Exact
// K hi, K lo, V hi, V lo (4, 4).
func scratchPlanes(prec Precision) (planes, size int64) {
	switch prec {
	case PrecisionBF16:
		return 2, 2
	case PrecisionTF32:
		return 2, 4
	}
	return 4, 4
}

// scratchBytes is the size of the pre-pass's output for kp's problem (0 when c has none), and
// of the fused kernel's flags after it (a uint32 per tile of a plane, in 16-byte units).
func (c mmaCfg) scratchBytes(kp *attnParams) int64 {
	if !c.pre() {
		return 0
	}
	if c.x3() { // K, V hi and lo [B, Hkv, Nk, d] half, then an int2 per tile of BN keys (FgX3Kv), to 16 bytes
		tiles := int64(kp.b) * int64(kp.hkv) * int64(ceilDiv(int(kp.nk), c.BN))
		n := 8*int64(kp.b)*int64(kp.hkv)*int64(kp.nk)*int64(kp.d) + 8*((tiles+1)/2*2)
		if c.fused() {
			n += c.flagBytes(kp)
		}
		return n
	}
	planes, size := scratchPlanes(c.Prec)
	n := planes * size * int64(kp.b) * int64(kp.hkv) * int64(c.planeKeys(kp)) * int64(kp.d)
	if c.fused() {
		n += c.flagBytes(kp)
	}
	return n
}

// planeKeys is the keys a head of c's pre-pass planes holds: Nk, in whole tiles of c.BN for the
// bulk kernels.
func (c mmaCfg) planeKeys(kp *attnParams) int {
	if c.bulk() {
		return ceilDiv(int(kp.nk), c.BN) * c.BN
	}
	return int(kp.nk)
}

// flagBytes is the size of the fused kernel's tile flags, a uint32 per tile of a plane (B Hkv
// ceil(Nk / BN), with BN = hopperBN but for the Exact and TF32 kernels' c.BN), rounded up to
// 16 bytes.
func (c mmaCfg) flagBytes(kp *attnParams) int64 {
	bn := hopperBN
	if c.exact() || c.x3() {
		bn = c.BN
	}
	return int64(ceilDiv(4*int(kp.b)*int(kp.hkv)*ceilDiv(int(kp.nk), bn), 16) * 16)
}

// persistGrid is the number of blocks of a persistent kernel (c.persistent()) on a device of
// sms multiprocessors: one per multiprocessor, at most one per query tile; when causal, the
// largest count from half the multiprocessors up that makes 2 G a multiple of the query tiles
// of a head T, so that the kernel's snake pairs a head's tile x with its tile T - 1 - x (equal
// causal work per block and round; attention_hopper_persist.cu).
func (c mmaCfg) persistGrid(kp *attnParams, sms int) int {
	t := ceilDiv(int(kp.nq), c.BM)
	g := max(1, min(t*int(kp.h)*int(kp.b), sms))
	if kp.causal != 0 && t > 1 && t <= 2*g {
		for n := g; n >= (g+1)/2; n-- {
			if 2*n%t == 0 {
				return n
			}
		}
	}
	return g
}

// aligned16 reports whether every row of the float32 operands starts on 16 bytes, as the
// tensor-core kernels' 16-byte loads, copies and stores need: the strides of q, k, v, o (and
// do, dq, dk, dv, which share them) multiples of 4 elements, and every base address on 16
// bytes (the launchers' buffers are; a Buffer's View may start anywhere). The FMA kernels,
// element by element, take the rest.
func aligned16(kp *attnParams) bool {
	for _, s := range []int64{kp.qRow, kp.qHead, kp.qBatch, kp.kRow, kp.kHead, kp.kBatch,
		kp.vRow, kp.vHead, kp.vBatch, kp.oRow, kp.oHead, kp.oBatch} {
		if s%4 != 0 {
			return false
		}
	}
	return (kp.q|kp.k|kp.v|kp.o|kp.do|kp.dq|kp.dk|kp.dv)&15 == 0
}

// pickMMA is the one place that decides whether a forward runs on the tensor cores: a float32
// problem, a precision other than PrecisionFMA, a head dimension with a kernel in mmaCfgs (64
// or 128), and operands whose rows start on 16 bytes (aligned16). Every other forward runs
// the FMA kernel, variant 2, which is at least as accurate as the precision asked for. variant
// 0 takes the first kernel of mmaCfgs for the precision and D whose MinNk the problem's Nk
// reaches, another that variant's; kernels with a pre-pass only
// when scratch (a scratch buffer can be had) is set, the Hopper kernels only when sm, the
// device's compute capability as 10 major + minor, is 90 (everywhere else, and for the
// problems they do not cover, the kernels of attention_mma.cu run); variant 22, whose bulk
// copies take a query tile's rows as one block, only where Q's rows are contiguous (the
// layouts the launchers give).
func pickMMA(kp *attnParams, dt dtype, variant int, scratch bool, sm int) (mmaCfg, bool) {
	if dt != f32 || Precision(kp.precision) == PrecisionFMA {
		return mmaCfg{}, false
	}
	if !aligned16(kp) {
		return mmaCfg{}, false
	}
	for _, c := range mmaCfgs {
		if c.Prec == Precision(kp.precision) && c.D == int(kp.d) && (variant == 0 && int(kp.nk) >= c.MinNk || variant == c.Variant) &&
			(scratch || !c.pre()) && (sm == 90 || !c.hopper()) && (!c.qst() || kp.qRow == int64(kp.d)) {
			return c, true
		}
	}
	return mmaCfg{}, false
}

// mmaPrepParams is fg_mma_prep_params (kernels/attention_mma.cu): the problem and the scratch
// buffer the pre-pass writes.
type mmaPrepParams struct {
	_      structs.HostLayout
	src    attnParams
	dst    devptr
	qplane devptr // the persistent forward: where it writes Q in bfloat16 for the backward, or 0
}

// startMMA launches tensor-core forward c: a block of c.threads() threads per BM query rows of
// every (b, h), or persistGrid blocks for the persistent kernels. A kernel with a pre-pass
// first runs it (c.prep) into a buffer of c.scratchBytes(kp) bytes from scratch, then reads K
// and V from there (contiguous planes); a fused kernel converts them itself into that buffer,
// whose flags are zeroed first. With keep, scratch is AttentionBuffers.Planes (keptLayout),
// c must keep its planes, and it also writes Q's plane after its workspace.
func (s *state) startMMA(kp *attnParams, c mmaCfg, scratch func(bytes int64) (devptr, error), keep bool) error {
	grid := [3]int{ceilDiv(int(kp.nq), c.BM), int(kp.h), int(kp.b)}
	if keep && !c.keeps() {
		return fmt.Errorf("cuda: attention forward: %s does not keep bfloat16 planes for the backward (Planes)", c.name())
	}
	if !c.pre() {
		return s.start(c.module(), c.name(), grid, c.threads(), c.smem(), unsafe.Pointer(kp))
	}
	if scratch == nil {
		return fmt.Errorf("cuda: attention forward: %s needs a scratch buffer", c.name())
	}
	n := c.scratchBytes(kp)
	size, qAt := n, int64(0)
	if keep {
		_, _, qAt, size = keptLayout(kp)
	}
	dst, err := scratch(size)
	if err != nil {
		return err
	}
	pp := &mmaPrepParams{src: *kp, dst: dst}
	if keep {
		pp.qplane = dst + devptr(qAt)
	}
	if c.fused() { // the tile flags, after the planes, zeroed; the kernel converts K and V
		flags := c.flagBytes(kp)
		if err := memset8(dst+devptr(n-flags), 0, flags); err != nil {
			return err
		}
	} else if err := s.startPrep(kp, c, pp); err != nil {
		return err
	}
	if c.persistent() { // the problem and the planes, as the pre-pass has them
		return s.start(c.module(), c.name(), [3]int{c.persistGrid(kp, s.sms), 1, 1}, c.threads(), c.smem(), unsafe.Pointer(pp))
	}
	planes, _ := scratchPlanes(c.Prec)
	m := *kp
	d := int64(kp.d)
	m.kRow, m.kHead, m.kBatch = d, int64(kp.nk)*d, int64(kp.hkv)*int64(kp.nk)*d
	m.vRow, m.vHead, m.vBatch = m.kRow, m.kHead, m.kBatch
	// Plane order: BF16 and TF32 K, V; Exact K hi, K lo, V hi, V lo (the kernel finds each
	// lo plane one plane after its hi plane). The bulk kernels find their tiles in the K and V
	// planes from b, the key head and Nk, without the strides.
	m.k = dst
	m.v = dst + devptr(n/planes*(planes/2))
	if c.x3() { // K hi, K lo, V hi, V lo: V hi after two K planes
		m.v = dst + devptr(4*int64(kp.b)*int64(kp.hkv)*int64(kp.nk)*int64(kp.d))
	}
	return s.start(c.module(), c.name(), grid, c.threads(), c.smem(), unsafe.Pointer(&m))
}

// startPrep launches c's pre-pass (c.pre(), not c.fused()) on pp: one thread per 8 elements
// of K (and of V), grid-stride; whole tiles for the bulk kernels. Variant 27's: 256 threads
// per tile of its BN keys, grid-stride (8 blocks per multiprocessor at most).
func (s *state) startPrep(kp *attnParams, c mmaCfg, pp *mmaPrepParams) error {
	module, prep := c.prep()
	if c.x3() {
		tiles := int(kp.b) * int(kp.hkv) * ceilDiv(int(kp.nk), c.BN)
		return s.start(module, prep, [3]int{max(1, min(tiles, 8*s.sms)), 1, 1}, 256, 0, unsafe.Pointer(pp))
	}
	groups := int(kp.b) * int(kp.hkv) * c.planeKeys(kp) * int(kp.d) / 8
	return s.start(module, prep, [3]int{max(1, min(ceilDiv(groups, 256), 8192)), 1, 1}, 256, 0, unsafe.Pointer(pp))
}

// sm is the compute capability of the worker's device as 10 major + minor (90: Hopper).
func (s *state) sm() int { return 10*s.major + s.minor }

// deviceSM is the compute capability of the device in use as 10 major + minor, or 0 without
// one, for the callers off the worker (Kernels, ForwardScratch): the worker writes major and
// minor once, before Enabled's first answer, and never again.
func deviceSM() int {
	if !Enabled() {
		return 0
	}
	return dev.sm()
}
