package cuda

import (
	"fmt"
	"unsafe"
)

// mmaBwdCfg is one tensor-core backward kernel of kernels/attention_mma_bwd.cu (backward
// variant 3; 1 and 2 are attention_bwd.cu's FMA kernels): the dK/dV kernel (a block of
// BN/16 warps per BN keys, a warp per 16 keys, query tiles of BM rows walked in sub-blocks
// of SB) or the dQ kernel (DQ: a block of BM/16 warps per BM query rows, key tiles of BN
// rows), for one precision and head dimension D (d == D only).
type mmaBwdCfg struct {
	DQ        bool
	Prec      Precision
	D, BM, BN int
	SB        int // dK/dV only: queries per sub-block (S^T and dP^T take SB/2 registers each)
}

// mmaBwdCfgs lists the kernels instantiated in kernels/attention_mma_bwd.cu: the tile sizes of
// the tensor-core backward, chosen here only. For each precision and D the first dK/dV entry
// and the first dQ entry are the ones AttentionBackward runs. Registers (ptxas -v, sm_80):
// every kernel fits 255 without spills except the EXACT dK/dV kernel at D = 128 (104 bytes:
// dK and dV alone take 128 registers, the split operands 16 more). Shared memory: dK/dV
// K, V [BN][D] and two stages of Q, dO [BM][D]; dQ Q, dO [BM][D] and two stages of K, V [BN][D]
// (all float32, at most 192 KiB).
var mmaBwdCfgs = []mmaBwdCfg{
	{false, PrecisionBF16, 64, 64, 64, 64}, {false, PrecisionBF16, 128, 32, 64, 32},
	{false, PrecisionTF32, 64, 64, 64, 64}, {false, PrecisionTF32, 128, 32, 64, 16},
	{false, PrecisionExact, 64, 64, 64, 16}, {false, PrecisionExact, 128, 32, 64, 16},
	{true, PrecisionBF16, 64, 64, 64, 0}, {true, PrecisionBF16, 128, 64, 32, 0},
	{true, PrecisionTF32, 64, 64, 64, 0}, {true, PrecisionTF32, 128, 64, 32, 0},
	{true, PrecisionExact, 64, 64, 64, 0}, {true, PrecisionExact, 128, 64, 16, 0},
	// Kept for comparison: 8 warps per block (each K, V or Q, dO tile read from L2 serves twice
	// the rows; one block per multiprocessor).
	{false, PrecisionBF16, 128, 32, 128, 32}, {false, PrecisionTF32, 128, 32, 128, 16},
	{true, PrecisionBF16, 128, 128, 32, 0}, {true, PrecisionTF32, 128, 128, 32, 0},
}

func (c mmaBwdCfg) name() string {
	if c.DQ {
		return fmt.Sprintf("fg_attn_bwd_mma_dq_%s_d%d_m%d_n%d", c.Prec, c.D, c.BM, c.BN)
	}
	return fmt.Sprintf("fg_attn_bwd_mma_dkdv_%s_d%d_n%d_m%d_s%d", c.Prec, c.D, c.BN, c.BM, c.SB)
}

// threads is the block size: two threads per tile row of the block's own operand.
func (c mmaBwdCfg) threads() int {
	if c.DQ {
		return 2 * c.BM
	}
	return 2 * c.BN
}

// smem is the kernel's shared memory (its SMEM constant).
func (c mmaBwdCfg) smem() int {
	if c.DQ {
		return (2*c.BM*c.D + 2*2*c.BN*c.D) * 4
	}
	return (2*c.BN*c.D + 2*(2*c.BM*c.D+2*c.BM)) * 4
}

// grid is the launch grid: a block per key tile of every (b, key/value head), or per query tile
// of every (b, h).
func (c mmaBwdCfg) grid(kp *attnParams) [3]int {
	if c.DQ {
		return [3]int{ceilDiv(int(kp.nq), c.BM), int(kp.h), int(kp.b)}
	}
	return [3]int{ceilDiv(int(kp.nk), c.BN), int(kp.hkv), int(kp.b)}
}

// pickMMABwd is the one place that decides whether a backward runs on the tensor cores: when
// the forward would (pickMMA: float32, a precision other than PrecisionFMA, rows on 16 bytes)
// and mmaBwdCfgs has kernels for the precision and D. It returns the dK/dV and dQ kernels:
// the first of each for the precision and D, or the ones at indices dkdv and dq of
// mmaBwdCfgs when those are not negative (the tests' way to run every kernel).
func pickMMABwd(kp *attnParams, dt dtype, dkdv, dq int) (kv, q mmaBwdCfg, ok bool) {
	if _, ok := pickMMA(kp, dt, 0); !ok {
		return kv, q, false
	}
	var haveKV, haveQ bool
	for i, c := range mmaBwdCfgs {
		if c.Prec != Precision(kp.precision) || c.D != int(kp.d) {
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

// startMMABwd launches the tensor-core backward: the row preprocess (L2 and delta into the
// workspace kp.delta, 8 bytes per row), the dK/dV kernel kv and the dQ kernel q.
func (s *state) startMMABwd(kp *attnParams, kv, q mmaBwdCfg) error {
	rows := int(kp.b) * int(kp.h) * int(kp.nq)
	if err := s.start("attention_mma_bwd", "fg_attn_bwd_mma_pre", [3]int{ceilDiv(rows, 4), 1, 1}, 128, 0, unsafe.Pointer(kp)); err != nil {
		return err
	}
	for _, c := range []mmaBwdCfg{kv, q} {
		if err := s.start("attention_mma_bwd", c.name(), c.grid(kp), c.threads(), c.smem(), unsafe.Pointer(kp)); err != nil {
			return err
		}
	}
	return nil
}
