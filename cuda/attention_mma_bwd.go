package cuda

import (
	"fmt"
	"unsafe"
)

// mmaBwdCfg is one tensor-core backward kernel of kernels/attention_mma_bwd.cu: the dK/dV
// kernel (a block of BN/16 warps per BN keys, a warp per 16 keys, query tiles of BM rows walked
// in sub-blocks of SB) or the dQ kernel (DQ: a block of BM/16 warps per BM query rows, key tiles
// of BN rows), for one precision and head dimension D (d == D only). Two forms:
//
//	float32 tiles (LDM false): every precision; tiles swizzled in shared memory as float32,
//	  operands converted as each warp loads its fragments;
//	bfloat16 tiles (LDM true): BF16 only; tiles converted once to bfloat16 in shared memory
//	  (the streamed ones staged as float32 by cp.async), fragments loaded with ldmatrix.
type mmaBwdCfg struct {
	DQ, LDM   bool
	Prec      Precision
	D, BM, BN int
	SB        int // dK/dV only: queries per sub-block (S^T and dP^T take SB/2 registers each)
}

// mmaBwdCfgs lists the kernels instantiated in kernels/attention_mma_bwd.cu: the tile sizes of
// the tensor-core backward, chosen here only. For each precision and D the first dK/dV entry
// and the first dQ entry are the ones AttentionBackward runs. Registers (ptxas -v, sm_80):
// 124 to 255; no spills except the EXACT dK/dV kernel at D = 128 (112 bytes: dK and dV alone
// take 128 registers, the split operands 16 more; the variant with 32-row query tiles spills
// 20 bytes but runs one block per multiprocessor instead of two and takes 34% longer).
// Shared memory: at most 192 KiB (see smem).
var mmaBwdCfgs = []mmaBwdCfg{
	// The defaults: the fastest dK/dV and dQ kernels of each precision and D on the H100
	// (results/mma-bwd/time-mma-bwd-run{2,3}.log, 44 kernels timed after the tests checked
	// them; those that lost everywhere were dropped: 8-warp float32 tiles, other stage sizes).
	{false, true, PrecisionBF16, 64, 64, 64, 64}, {true, true, PrecisionBF16, 64, 128, 32, 0},
	{false, true, PrecisionBF16, 128, 16, 64, 16}, {true, true, PrecisionBF16, 128, 128, 16, 0},
	{false, false, PrecisionTF32, 64, 64, 64, 64}, {true, false, PrecisionTF32, 64, 64, 64, 0},
	{false, false, PrecisionTF32, 128, 32, 128, 16}, {true, false, PrecisionTF32, 128, 128, 32, 0},
	{false, false, PrecisionExact, 64, 32, 64, 16}, {true, false, PrecisionExact, 64, 64, 64, 0},
	{false, false, PrecisionExact, 128, 16, 64, 16}, {true, false, PrecisionExact, 128, 64, 16, 0},
	// Kept for comparison: BF16 on float32 tiles (the first defaults; the bfloat16-tile
	// defaults above take 22% (d = 64) and 43% (d = 128) off the backward at N = 16384).
	{false, false, PrecisionBF16, 64, 64, 64, 64}, {true, false, PrecisionBF16, 64, 64, 64, 0},
	{false, false, PrecisionBF16, 128, 32, 64, 32}, {true, false, PrecisionBF16, 128, 64, 32, 0},
}

func (c mmaBwdCfg) name() string {
	ldm := ""
	if c.LDM {
		ldm = "ldm_"
	}
	if c.DQ {
		return fmt.Sprintf("fg_attn_bwd_mma_%sdq_%s_d%d_m%d_n%d", ldm, c.Prec, c.D, c.BM, c.BN)
	}
	return fmt.Sprintf("fg_attn_bwd_mma_%sdkdv_%s_d%d_n%d_m%d_s%d", ldm, c.Prec, c.D, c.BN, c.BM, c.SB)
}

// threads is the block size: two threads per tile row of the block's own operand.
func (c mmaBwdCfg) threads() int {
	if c.DQ {
		return 2 * c.BM
	}
	return 2 * c.BN
}

// smem is the kernel's shared memory (its SMEM constant). Float32 tiles: dK/dV K, V [BN][D]
// and two stages of Q, dO [BM][D] with (L2, delta) [BM]; dQ Q, dO [BM][D] and two stages of
// K, V [BN][D]. bfloat16 tiles: the float32 stages of the streamed tiles, and every tile in
// bfloat16 with rows of D + 8.
func (c mmaBwdCfg) smem() int {
	h := (2*c.BM + 2*c.BN) * (c.D + 8) * 2
	switch {
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
// of every (b, h).
func (c mmaBwdCfg) grid(kp *attnParams) [3]int {
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
// mmaBwdCfgs when those are not negative (the tests' way to run every kernel).
func pickMMABwd(kp *attnParams, dt dtype, dkdv, dq int) (kv, q mmaBwdCfg, ok bool) {
	if dt != f32 || Precision(kp.precision) == PrecisionFMA {
		return kv, q, false
	}
	for _, s := range []int64{kp.qRow, kp.qHead, kp.qBatch, kp.kRow, kp.kHead, kp.kBatch,
		kp.vRow, kp.vHead, kp.vBatch, kp.oRow, kp.oHead, kp.oBatch} {
		if s%4 != 0 {
			return kv, q, false
		}
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
