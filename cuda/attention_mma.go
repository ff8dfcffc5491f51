package cuda

import (
	"fmt"
	"unsafe"
)

// Precision selects the arithmetic of the float32 attention forward (AttentionParams.Precision).
// float64 problems always run the FMA kernels, in float64, whatever is asked for.
type Precision int32

// The precisions, with the values of params.h's FG_PREC_*.
const (
	// PrecisionFMA (the zero value, the default) runs the FMA kernels: float32 products and
	// sums on the CUDA cores, every head dimension.
	PrecisionFMA Precision = iota
	// PrecisionExact runs the tensor cores at float32 accuracy by 3xTF32: each operand x of
	// the products S = QKᵀ and O = PV is split into hi = tf32(x) and lo = tf32(x − hi), and
	// a·b = a_lo·b_hi + a_hi·b_lo + a_hi·b_hi with float32 accumulation.
	PrecisionExact
	// PrecisionTF32 rounds the operands to TF32 (10 mantissa bits, to nearest, ties away from
	// zero) and accumulates in float32.
	PrecisionTF32
	// PrecisionBF16 rounds the operands (q, k, v and the probabilities P) to bfloat16 (8
	// mantissa bits, to nearest even) and accumulates in float32; the softmax, its row sums
	// and L stay float32 (sums double).
	PrecisionBF16
)

func (p Precision) String() string {
	switch p {
	case PrecisionFMA:
		return "fma"
	case PrecisionExact:
		return "exact"
	case PrecisionTF32:
		return "tf32"
	case PrecisionBF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", int32(p))
}

// ParsePrecision returns the Precision whose String is s.
func ParsePrecision(s string) (Precision, error) {
	for p := PrecisionFMA; p <= PrecisionBF16; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("cuda: unknown precision %q (want fma, exact, tf32 or bf16)", s)
}

// mmaCfg is one tensor-core forward kernel of kernels/attention_mma.cu: its forward variant
// (3: float32 tiles in shared memory, operands converted per fragment; 4: bfloat16 tiles in
// shared memory read with ldmatrix, bfloat16 only), its precision, the head dimension D it
// takes (d == D only) and the key tile rows BN. The query tile is mmaBM rows, one warp per 16.
type mmaCfg struct {
	Variant int
	Prec    Precision
	D, BN   int
}

const (
	mmaBM      = 64  // query rows per block: kMmaBM in the kernel
	mmaThreads = 128 // 4 warps: kMmaThreads
)

// mmaCfgs lists the kernels instantiated in kernels/attention_mma.cu: the tile sizes of the
// tensor-core forward, chosen here only. For each precision and D the first entry is the one
// AttentionForward runs. BN = 64 keeps every kernel within 255 registers without spills
// (ptxas -v, sm_80 and sm_90: 126 to 196) and its shared memory at most 105 KiB, two blocks
// per multiprocessor at d = 128.
var mmaCfgs = []mmaCfg{
	{4, PrecisionBF16, 64, 64}, {4, PrecisionBF16, 128, 64},
	{3, PrecisionBF16, 64, 64}, {3, PrecisionBF16, 128, 64},
	{3, PrecisionTF32, 64, 64}, {3, PrecisionTF32, 128, 64},
	{3, PrecisionExact, 64, 64}, {3, PrecisionExact, 128, 64},
}

func (c mmaCfg) name() string {
	if c.Variant == 4 {
		return fmt.Sprintf("fg_attn_fwd_mma_ldm_%s_d%d_n%d", c.Prec, c.D, c.BN)
	}
	return fmt.Sprintf("fg_attn_fwd_mma_%s_d%d_n%d", c.Prec, c.D, c.BN)
}

// smem is the kernel's shared memory (its SMEM constant): variant 3 Q [64][D+16], K [BN][D+16],
// V [BN][D+4] float32; variant 4 K and V [BN][D] float32 and [BN][D+8] bfloat16.
func (c mmaCfg) smem() int {
	if c.Variant == 4 {
		return 2*c.BN*c.D*4 + 2*c.BN*(c.D+8)*2
	}
	return (mmaBM*(c.D+16) + c.BN*(c.D+16) + c.BN*(c.D+4)) * 4
}

// pickMMA is the one place that decides whether a forward runs on the tensor cores: a float32
// problem, a precision other than PrecisionFMA, a head dimension with a kernel in mmaCfgs (64
// or 128), and rows of q, k, v, o that start on 16 bytes (strides multiples of 4 elements; the
// launchers' layouts are contiguous). Every other forward runs the FMA kernel, variant 2,
// which is at least as accurate as the precision asked for. variant 0 takes the first kernel
// of mmaCfgs for the precision and D, 3 or 4 that variant's.
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

// startMMA launches tensor-core forward c: a block of 128 threads per 64 query rows of every
// (b, h).
func (s *state) startMMA(kp *attnParams, c mmaCfg) error {
	grid := [3]int{ceilDiv(int(kp.nq), mmaBM), int(kp.h), int(kp.b)}
	return s.start("attention_mma", c.name(), grid, mmaThreads, c.smem(), unsafe.Pointer(kp))
}
