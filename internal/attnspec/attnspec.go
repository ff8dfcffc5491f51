// Package attnspec defines the attention problem once: its sizes and options (Problem) and
// which keys each query sees (the visibility rule). ops/attention (the fused CPU kernels and
// Reference), the cuda launchers and the tests' float64 oracles all take them from here.
//
// The CUDA kernels cannot import Go: cuda/kernels/common.cuh's fg_key_limit is the device's
// copy of KeyLimit, fed by cuda's launcher with the fields of Problem (key lengths, causal and
// causal offset Nk − Nq); the device tests of package cuda and of ops/attention check every
// kernel's results against float64 oracles that use this package's rule.
package attnspec

import (
	"fmt"
	"math"
)

// Problem describes one attention problem (DESIGN.md's vocabulary):
//
//	q, o   [B, H, Nq, D]     element (b,h,i,c) at ((b·H+h)·Nq+i)·D+c
//	k, v   [B, Hkv, Nk, D]   element (b,g,j,c) at ((b·Hkv+g)·Nk+j)·D+c
//	L      [B, H, Nq]        element (b,h,i)   at (b·H+h)·Nq+i
//
// with query head h reading key/value head h/(H/Hkv), and
//
//	s_ij = Scale·Σ_c q[b,h,i,c]·k[b,h/G,j,c]      over the keys j that query i sees (Visible)
//	L[b,h,i] = log Σ_j exp(s_ij)                   (−Inf for a row that sees no key)
//	o[b,h,i,:] = Σ_j exp(s_ij − L[b,h,i])·v[b,h/G,j,:]   (0 for a row that sees no key)
type Problem struct {
	B, H, Hkv, Nq, Nk, D int
	// Scale multiplies q·k; resolved (the ops turn the user's 0 into 1/√D).
	Scale float64
	// Causal: query i sees keys j ≤ i + Nk − Nq (the mask aligned to the bottom-right corner,
	// as FlashAttention-2 does when Nq ≠ Nk).
	Causal bool
	// KeyLengths is nil or holds B values in [0, Nk]: batch b sees keys j < KeyLengths[b].
	KeyLengths []int
	// Precision is the arithmetic of the CUDA kernels for float32 problems (see Precision);
	// it does not change the function computed, and the CPU kernels ignore it.
	Precision Precision
}

// Precision selects the arithmetic of the float32 attention kernels on a CUDA device, forward
// and backward (cuda.AttentionParams.Precision, ops/attention's Options.Precision). float64
// problems, and the CPU kernels in both types, always compute exactly in their element type
// (float32 products, float64 sums on the CPU), whatever is asked for.
type Precision int32

// The precisions, with the values of cuda/kernels/params.h's FG_PREC_*.
const (
	// PrecisionDefault (the zero value) is PrecisionExact (Resolved): float32 accuracy on
	// the tensor cores wherever their kernels cover the problem (head dimensions 64 and 128;
	// 2-3x the FMA kernels' speed on the H100), the FMA kernels elsewhere.
	PrecisionDefault Precision = iota
	// PrecisionFMA runs the FMA kernels: float32 products and sums on the CUDA cores, every
	// head dimension.
	PrecisionFMA
	// PrecisionExact runs the tensor cores at float32 accuracy by splitting each operand x of
	// the products (S = QKᵀ, O = PV; in the backward also dP = dO·Vᵀ, dV = Pᵀ·dO, dK = dSᵀ·Q,
	// dQ = dS·K) into a high and a low part and summing three products,
	// a·b = a_lo·b_hi + a_hi·b_lo + a_hi·b_hi, with float32 accumulation: on Hopper with a
	// scratch buffer in IEEE half (3xF16: x scaled by a power of two into half's range, hi =
	// half(x), lo = half(x − hi)), elsewhere in TF32 (3xTF32: hi = tf32(x), lo = tf32(x − hi)).
	// Both keep 22 bits of each operand.
	PrecisionExact
	// PrecisionTF32 rounds the operands to TF32 (10 mantissa bits, to nearest, ties away from
	// zero) and accumulates in float32.
	PrecisionTF32
	// PrecisionBF16 rounds the operands (q, k, v, dO and the probabilities P and dS) to
	// bfloat16 (8 mantissa bits, to nearest even) and accumulates in float32; the softmax,
	// its row sums, L and the backward's row terms stay float32 (sums double).
	PrecisionBF16
)

func (p Precision) String() string {
	switch p {
	case PrecisionDefault:
		return "default"
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
	for p := PrecisionDefault; p <= PrecisionBF16; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown precision %q (want default, fma, exact, tf32 or bf16)", s)
}

// Resolved returns the precision p asks for: PrecisionExact for PrecisionDefault, p itself
// otherwise. The CUDA launchers choose kernels by the resolved precision.
func (p Precision) Resolved() Precision {
	if p == PrecisionDefault {
		return PrecisionExact
	}
	return p
}

// KeyLimit is the visibility rule: query i of a problem with Nq queries and Nk keys sees
// exactly the keys j < KeyLimit(i, nq, nk, keyLen, causal), where keyLen is the batch's key
// length (Nk without padding):
//
//	j visible  ⇔  j < keyLen  and (not causal or j ≤ i + nk − nq)
//
// Both masks keep a prefix of the keys, so the visible set is always [0, KeyLimit); it is
// nondecreasing in i.
func KeyLimit(i, nq, nk, keyLen int, causal bool) int {
	lim := min(nk, keyLen)
	if causal {
		lim = min(lim, i+nk-nq+1)
	}
	return max(lim, 0)
}

// keyLen returns batch b's key length: keys j ≥ keyLen(b) are padding.
func (p *Problem) keyLen(b int) int {
	if p.KeyLengths != nil {
		return min(p.KeyLengths[b], p.Nk)
	}
	return p.Nk
}

// KeyLimit returns how many leading keys query row i of batch b sees (see KeyLimit).
func (p *Problem) KeyLimit(b, i int) int { return KeyLimit(i, p.Nq, p.Nk, p.keyLen(b), p.Causal) }

// Visible reports whether query row i of batch b sees key j.
func (p *Problem) Visible(b, i, j int) bool { return j >= 0 && j < p.KeyLimit(b, i) }

// KeyEnd returns the end of batch b's keys: keys j ≥ KeyEnd(b) are padding, seen by no
// query row.
func (p *Problem) KeyEnd(b int) int { return p.keyLen(b) }

// FirstQuery returns the first query row of batch b that sees key j, or Nq when none does.
// Every later row sees it too (KeyLimit grows with the row): query i sees key j if and only
// if i ≥ FirstQuery(b, j).
func (p *Problem) FirstQuery(b, j int) int {
	if j >= p.keyLen(b) {
		return p.Nq
	}
	if p.Causal {
		// j ≤ i + Nk − Nq  ⇔  i ≥ j − (Nk − Nq)
		return min(max(j-(p.Nk-p.Nq), 0), p.Nq)
	}
	return 0
}

// QLen, KLen and LLen are the element counts of q (and o), of k (and v), and of L.
func (p *Problem) QLen() int { return p.B * p.H * p.Nq * p.D }
func (p *Problem) KLen() int { return p.B * p.Hkv * p.Nk * p.D }
func (p *Problem) LLen() int { return p.B * p.H * p.Nq }

// Shape names the sizes, for error messages: "B=2 H=4 Hkv=2 Nq=3 Nk=5 D=8".
func (p *Problem) Shape() string {
	return fmt.Sprintf("B=%d H=%d Hkv=%d Nq=%d Nk=%d D=%d", p.B, p.H, p.Hkv, p.Nq, p.Nk, p.D)
}

// MaxElements bounds the element count of every tensor of a problem: exact in float64, and
// far beyond what a machine can allocate.
const MaxElements = 1 << 53

// Check returns an error naming what is wrong when p is not a valid problem: a size below 1,
// H not a multiple of Hkv, a Scale that is 0 or not finite, an unknown Precision, key lengths
// (CheckKeyLengths), or
// tensors of more than MaxElements elements.
func (p *Problem) Check() error {
	switch {
	case p.B < 1 || p.H < 1 || p.Hkv < 1 || p.Nq < 1 || p.Nk < 1 || p.D < 1:
		return fmt.Errorf("every size must be at least 1 (%s)", p.Shape())
	case p.H%p.Hkv != 0:
		return fmt.Errorf("H=%d is not a multiple of Hkv=%d (%s)", p.H, p.Hkv, p.Shape())
	case math.IsNaN(p.Scale) || math.IsInf(p.Scale, 0) || p.Scale == 0:
		return fmt.Errorf("Scale=%v, want a finite non-zero value (%s)", p.Scale, p.Shape())
	case p.Precision < PrecisionDefault || p.Precision > PrecisionBF16:
		return fmt.Errorf("unknown %v (%s)", p.Precision, p.Shape())
	}
	if err := p.CheckKeyLengths(); err != nil {
		return err
	}
	// The ops' packed values hold B·H·Nq·(D+2) and B·H·Nq·D + 2·B·Hkv·Nk·D elements.
	qn, ok1 := Size(p.B, p.H, p.Nq, p.D+2)
	kn, ok2 := Size(p.B, p.Hkv, p.Nk, p.D)
	if !ok1 || !ok2 || qn+2*kn > MaxElements {
		return fmt.Errorf("more than 2^53 elements (%s)", p.Shape())
	}
	return nil
}

// CheckKeyLengths returns an error naming the entry when KeyLengths is set and does not hold
// B values in [0, Nk].
func (p *Problem) CheckKeyLengths() error {
	if p.KeyLengths == nil {
		return nil
	}
	if len(p.KeyLengths) != p.B {
		return fmt.Errorf("KeyLengths has %d entries %v, want one per batch element (B=%d)", len(p.KeyLengths), p.KeyLengths, p.B)
	}
	for b, n := range p.KeyLengths {
		if n < 0 || n > p.Nk {
			return fmt.Errorf("KeyLengths[%d] = %d is outside [0, Nk=%d]", b, n, p.Nk)
		}
	}
	return nil
}

// Size returns the product of the positive sizes xs, and false when one is below 1 or the
// product exceeds MaxElements.
func Size(xs ...int) (int, bool) {
	n := 1
	for _, x := range xs {
		if x < 1 || n > MaxElements/x {
			return 0, false
		}
		n *= x
	}
	return n, true
}
