package cuda

import (
	"fmt"
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
	PrecisionFMA   = attnspec.PrecisionFMA
	PrecisionExact = attnspec.PrecisionExact
	PrecisionTF32  = attnspec.PrecisionTF32
	PrecisionBF16  = attnspec.PrecisionBF16
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
// (BM/16 warps, one per 16 rows, 2·BM threads) and the key tile rows BN. The variants:
//
//	3: float32 tiles in shared memory, operands converted as each warp loads its fragments;
//	   64-row query tiles (4 warps)
//	4: bfloat16 only: tiles converted to bfloat16 once in shared memory, fragments loaded with
//	   ldmatrix; 64-row query tiles
//	5: variant 3 with 128-row query tiles (8 warps): each K and V tile read from L2 serves
//	   twice the rows
//	6: variant 4 with 128-row query tiles
type mmaCfg struct {
	Variant   int
	Prec      Precision
	D, BM, BN int
}

// mmaCfgs lists the kernels instantiated in kernels/attention_mma.cu: the tile sizes of the
// tensor-core forward, chosen here only. For each precision and D the first entry is the one
// AttentionForward runs: the fastest on the H100 over attnbench's shapes
// (results/bench-mma-h100.log, every variant timed after the tests checked it). At d = 64 the
// 64-row tiles win (bf16: variants 3 and 4 within 2% of each other; 128-row tiles leave one
// block of 8 warps per multiprocessor), at d = 128 the 128-row tiles (bf16 v6 155 against
// 131 TFLOP/s). BN = 64 keeps every kernel within 255 registers without spills (ptxas -v,
// sm_80 and sm_90: 126 to 199) and its shared memory at most 144 KiB.
var mmaCfgs = []mmaCfg{
	{3, PrecisionBF16, 64, 64, 64}, {6, PrecisionBF16, 128, 128, 64},
	{5, PrecisionTF32, 64, 128, 64}, {5, PrecisionTF32, 128, 128, 64},
	{3, PrecisionExact, 64, 64, 64}, {5, PrecisionExact, 128, 128, 64},
	// The other variants, kept for comparison (attnbench times them all).
	{4, PrecisionBF16, 64, 64, 64}, {4, PrecisionBF16, 128, 64, 64},
	{6, PrecisionBF16, 64, 128, 64}, {3, PrecisionBF16, 128, 64, 64},
	{3, PrecisionTF32, 64, 64, 64}, {3, PrecisionTF32, 128, 64, 64},
	{5, PrecisionExact, 64, 128, 64}, {3, PrecisionExact, 128, 64, 64},
}

// ldm reports whether c is an ldmatrix kernel (variants 4 and 6).
func (c mmaCfg) ldm() bool { return c.Variant == 4 || c.Variant == 6 }

func (c mmaCfg) name() string {
	if c.ldm() {
		return fmt.Sprintf("fg_attn_fwd_mma_ldm_%s_d%d_m%d_n%d", c.Prec, c.D, c.BM, c.BN)
	}
	return fmt.Sprintf("fg_attn_fwd_mma_%s_d%d_m%d_n%d", c.Prec, c.D, c.BM, c.BN)
}

// smem is the kernel's shared memory (its SMEM constant): variants 3, 5 Q [BM][D+16],
// K [BN][D+16], V [BN][D+4] float32; variants 4, 6 K and V [BN][D] float32 (Q is staged there
// first, so BM <= 2 BN) and [BN][D+8] bfloat16.
func (c mmaCfg) smem() int {
	if c.ldm() {
		return 2*c.BN*c.D*4 + 2*c.BN*(c.D+8)*2
	}
	return (c.BM*(c.D+16) + c.BN*(c.D+16) + c.BN*(c.D+4)) * 4
}

// pickMMA is the one place that decides whether a forward runs on the tensor cores: a float32
// problem, a precision other than PrecisionFMA, a head dimension with a kernel in mmaCfgs (64
// or 128), and rows of q, k, v, o that start on 16 bytes (strides multiples of 4 elements; the
// launchers' layouts are contiguous). Every other forward runs the FMA kernel, variant 2,
// which is at least as accurate as the precision asked for. variant 0 takes the first kernel
// of mmaCfgs for the precision and D, another that variant's.
func pickMMA(kp *attnParams, dt dtype, variant int) (mmaCfg, bool) {
	if dt != f32 || Precision(kp.precision) == PrecisionFMA {
		return mmaCfg{}, false
	}
	for _, s := range []int64{kp.qRow, kp.qHead, kp.qBatch, kp.kRow, kp.kHead, kp.kBatch,
		kp.vRow, kp.vHead, kp.vBatch, kp.oRow, kp.oHead, kp.oBatch} {
		if s%4 != 0 {
			return mmaCfg{}, false
		}
	}
	for _, c := range mmaCfgs {
		if c.Prec == Precision(kp.precision) && c.D == int(kp.d) && (variant == 0 || variant == c.Variant) {
			return c, true
		}
	}
	return mmaCfg{}, false
}

// startMMA launches tensor-core forward c: a block of 2·BM threads per BM query rows of every
// (b, h).
func (s *state) startMMA(kp *attnParams, c mmaCfg) error {
	grid := [3]int{ceilDiv(int(kp.nq), c.BM), int(kp.h), int(kp.b)}
	return s.start("attention_mma", c.name(), grid, 2*c.BM, c.smem(), unsafe.Pointer(kp))
}
