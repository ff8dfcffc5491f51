package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// ErrNoDevice is returned by every launcher when no CUDA device is in use: when no driver or
// no device was found, when FLASHGORGON_DEVICE=cpu is set, in a build with the nocuda tag, or
// after a fault lost the device.
var ErrNoDevice = errors.New("cuda: no CUDA device in use")

// ErrUnsupported wraps the errors of problems the kernels do not cover (a head dimension over
// 256, more than 65535 heads or batches); callers fall back to the CPU on it.
var ErrUnsupported = errors.New("cuda: unsupported problem")

// Offloaded is the one device-failure policy of the ops (DESIGN.md): given what a launcher
// returned, it reports whether the result is there (true) and the error to return with it,
// or that the CPU must compute the result (false, nil):
//
//	nil                                       true, nil: the device computed it
//	an error wrapping ErrNoDevice             false: no device in use (or it was lost): the CPU
//	an error wrapping ErrUnsupported          false: the kernels do not cover it: the CPU
//	any other error (*Error, bad arguments)   true, err: the op fails with the device's error
//
// A device failure is never retried on the CPU behind the caller's back: the op returns it,
// and after a fault that lost the device the next calls run on the CPU (Enabled is false).
func Offloaded(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNoDevice), errors.Is(err, ErrUnsupported):
		return false, nil
	}
	return true, err
}

// Error is a failure reported by the CUDA driver while running an op.
type Error struct {
	Op   string // the op that was running, e.g. "attention forward"
	Call string // the driver call that failed, e.g. "cuMemAlloc(33554432 bytes)"
	Code int    // the CUresult value
	Name string // the CUresult name, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // the driver's description
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s: %s (%s)", e.Op, e.Call, e.Name, e.Msg)
}

// SoftmaxKind names a member of the softmax family.
type SoftmaxKind int32

// The softmax family, with the values of params.h's FG_SOFTMAX, FG_LOG_SOFTMAX and
// FG_LOG_SUM_EXP.
const (
	Softmax SoftmaxKind = iota
	LogSoftmax
	LogSumExp
)

func (k SoftmaxKind) String() string {
	switch k {
	case Softmax:
		return "softmax"
	case LogSoftmax:
		return "log-softmax"
	case LogSumExp:
		return "log-sum-exp"
	}
	return fmt.Sprintf("SoftmaxKind(%d)", int32(k))
}

// SoftmaxParams describes one softmax-family op on host slices, with x viewed as
// [Outer, N, Inner] and reduced over N (element (o, i, j) at o·N·Inner + i·Inner + j).
//
// The forward reads X and writes Y:
//
//	Softmax     Y[o,i,j] = exp(X[o,i,j]) / Σ_i' exp(X[o,i',j])   len(Y) = Outer·N·Inner
//	LogSoftmax  Y[o,i,j] = X[o,i,j] − log Σ_i' exp(X[o,i',j])    len(Y) = Outer·N·Inner
//	LogSumExp   Y[o,j]   = log Σ_i exp(X[o,i,j])                 len(Y) = Outer·Inner
//
// The backward reads Y (and X for LogSumExp) and DY, with DY shaped like Y, and writes DX,
// shaped like X:
//
//	Softmax     DX = Y∘(DY − Σ_i DY∘Y)
//	LogSoftmax  DX = DY − exp(Y)∘Σ_i DY
//	LogSumExp   DX = softmax(X)∘DY   (DY broadcast along i)
//
// All slices are []float32 or all []float64. The edge cases are those of ops/softmax: a row
// of only −Inf gives softmax 0, log-softmax and log-sum-exp −Inf and a zero gradient; +Inf or
// NaN makes its row NaN. Statistics are accumulated in float64 for both element types.
type SoftmaxParams struct {
	Kind            SoftmaxKind
	Outer, N, Inner int
	X, Y            any
	DY, DX          any // backward only
}

// AttentionParams describes one attention problem on host slices (DESIGN.md's vocabulary):
//
//	Q, O, DO, DQ  [B, H, Nq, D]    element (b,h,i,c) at ((b·H+h)·Nq+i)·D+c
//	K, V, DK, DV  [B, Hkv, Nk, D]  element (b,g,j,c) at ((b·Hkv+g)·Nk+j)·D+c
//	L, LRes, DL   [B, H, Nq]       element (b,h,i) at (b·H+h)·Nq+i
//
// with query head h reading key/value head h/(H/Hkv). The forward computes, for every visible
// key j of query row i (j < KeyLengths[b] when KeyLengths is set, and j ≤ i + Nk − Nq when
// Causal: bottom-right alignment),
//
//	s_ij = Scale·Σ_c Q[b,h,i,c]·K[b,h/G,j,c]
//	L[b,h,i] = log Σ_j exp(s_ij)
//	O[b,h,i,c] = Σ_j exp(s_ij − L[b,h,i])·V[b,h/G,j,c]
//
// and rows with no visible key get O = 0, L = −Inf. The backward computes DQ, DK, DV, the
// gradients of a loss whose gradients with respect to O and L are DO and DL (DL may be nil),
// from Q, K, V, O, L, DO. All slices are []float32 or all []float64; D is at most 256.
//
// L is computed in float64 and rounded to the element type. LRes, when not nil, receives L's
// rounding residual (L − L rounded, 0 in float64) from the forward and gives it back to the
// backward, which then recomputes the probabilities from L as accurate as the forward had it
// (ops/attention packs the same residual beside L).
type AttentionParams struct {
	B, H, Hkv, Nq, Nk, D int
	// Scale multiplies q·k; it must be set (the ops resolve the default 1/√D).
	Scale  float64
	Causal bool
	// KeyLengths is nil or holds B values in [0, Nk].
	KeyLengths []int
	// Precision selects the arithmetic of the forward and the backward for float32 slices (see
	// Precision; the zero value runs the FMA kernels): the tensor-core kernels where they cover
	// the problem (d ∈ {64, 128}, pickMMA and pickMMABwd), the FMA kernels elsewhere. float64
	// problems always run the FMA kernels.
	Precision Precision

	Q, K, V any // inputs of both directions
	O, L    any // forward outputs, backward inputs
	LRes    any // nil, or L's rounding residual: forward output, backward input
	DO, DL  any // backward inputs; DL may be nil
	DQ      any // backward outputs
	DK, DV  any
}

// MaxHeadDim is the largest head dimension D the attention kernels take.
const MaxHeadDim = 256

// dtype is the element type of one call.
type dtype int

const (
	f32 dtype = iota
	f64
)

func (t dtype) String() string { return [...]string{"f32", "f64"}[t] }
func (t dtype) size() int      { return [...]int{4, 8}[t] }

// sliceInfo returns the element type and length of a []float32 or []float64.
func sliceInfo(x any) (dtype, int, bool) {
	switch s := x.(type) {
	case []float32:
		return f32, len(s), true
	case []float64:
		return f64, len(s), true
	}
	return 0, 0, false
}

// checkSlices checks that every named slice is a []float32 or []float64 of the same element type
// and of the wanted length, and returns that type.
func checkSlices(op string, names []string, xs []any, lens []int) (dtype, error) {
	var dt dtype
	for i, x := range xs {
		t, n, ok := sliceInfo(x)
		if !ok {
			return 0, fmt.Errorf("cuda: %s: %s is %T, want []float32 or []float64", op, names[i], x)
		}
		if i == 0 {
			dt = t
		} else if t != dt {
			return 0, fmt.Errorf("cuda: %s: %s is []%s but %s is []%s; all slices must share one element type",
				op, names[i], goType(t), names[0], goType(dt))
		}
		if n != lens[i] {
			return 0, fmt.Errorf("cuda: %s: %s has %d elements, want %d", op, names[i], n, lens[i])
		}
	}
	return dt, nil
}

func goType(t dtype) string { return [...]string{"float32", "float64"}[t] }

// check validates p for the forward (backward false) or the backward and returns the element
// type of its slices.
func (p *SoftmaxParams) check(backward bool) (dtype, error) {
	op := p.Kind.String() + " forward"
	if backward {
		op = p.Kind.String() + " backward"
	}
	if p.Kind < Softmax || p.Kind > LogSumExp {
		return 0, fmt.Errorf("cuda: softmax: unknown kind %d", int32(p.Kind))
	}
	if p.Outer < 0 || p.N < 0 || p.Inner < 0 {
		return 0, fmt.Errorf("cuda: %s: negative size in [Outer, N, Inner] = [%d, %d, %d]", op, p.Outer, p.N, p.Inner)
	}
	size, err := mulSizes(p.Outer, p.N, p.Inner)
	if err != nil {
		return 0, fmt.Errorf("cuda: %s: [Outer, N, Inner] = [%d, %d, %d]: %v", op, p.Outer, p.N, p.Inner, err)
	}
	ySize := size
	if p.Kind == LogSumExp {
		ySize = p.Outer * p.Inner
	}
	if !backward {
		return checkSlices(op, []string{"X", "Y"}, []any{p.X, p.Y}, []int{size, ySize})
	}
	if p.Kind == LogSumExp {
		return checkSlices(op, []string{"X", "Y", "DY", "DX"}, []any{p.X, p.Y, p.DY, p.DX}, []int{size, ySize, ySize, size})
	}
	return checkSlices(op, []string{"Y", "DY", "DX"}, []any{p.Y, p.DY, p.DX}, []int{ySize, ySize, size})
}

// mulSizes multiplies non-negative sizes, failing past 2^53 elements.
func mulSizes(xs ...int) (int, error) {
	n := 1
	for _, x := range xs {
		if x != 0 && n > (1<<53)/x {
			return 0, fmt.Errorf("more than 2^53 elements")
		}
		n *= x
	}
	return n, nil
}

// problem returns the description of p's problem (sizes, scale, masks).
func (p *AttentionParams) problem() attnspec.Problem {
	return attnspec.Problem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		KeyLengths: p.KeyLengths, Precision: p.Precision}
}

// checkProblem validates pr for op, then the limits of the kernels: problems they do not cover
// give an error wrapping ErrUnsupported.
func checkProblem(op string, pr *attnspec.Problem) error {
	if err := pr.Check(); err != nil {
		return fmt.Errorf("cuda: %s: %w", op, err)
	}
	shape := pr.Shape()
	switch {
	case pr.D > MaxHeadDim:
		return fmt.Errorf("cuda: %s: D=%d over the kernels' limit %d (%s): %w", op, pr.D, MaxHeadDim, shape, ErrUnsupported)
	case pr.B > 65535 || pr.H > 65535:
		return fmt.Errorf("cuda: %s: B and H must be at most 65535 (%s): %w", op, shape, ErrUnsupported)
	case pr.Nq > math.MaxInt32/2 || pr.Nk > math.MaxInt32/2:
		return fmt.Errorf("cuda: %s: Nq and Nk must be under 2^30 (%s): %w", op, shape, ErrUnsupported)
	}
	return nil
}

// check validates p for the forward (backward false) or the backward and returns the element
// type of its slices. Problems the kernels do not cover give an error wrapping ErrUnsupported.
func (p *AttentionParams) check(backward bool) (dtype, error) {
	op := "attention forward"
	if backward {
		op = "attention backward"
	}
	pr := p.problem()
	if err := checkProblem(op, &pr); err != nil {
		return 0, err
	}
	qLen, kLen, lLen := pr.QLen(), pr.KLen(), pr.LLen()
	names := []string{"Q", "K", "V", "O", "L"}
	xs := []any{p.Q, p.K, p.V, p.O, p.L}
	lens := []int{qLen, kLen, kLen, qLen, lLen}
	if backward {
		names = append(names, "DO", "DQ", "DK", "DV")
		xs = append(xs, p.DO, p.DQ, p.DK, p.DV)
		lens = append(lens, qLen, qLen, kLen, kLen)
		if p.DL != nil {
			names, xs, lens = append(names, "DL"), append(xs, p.DL), append(lens, lLen)
		}
	}
	if p.LRes != nil {
		names, xs, lens = append(names, "LRes"), append(xs, p.LRes), append(lens, lLen)
	}
	return checkSlices(op, names, xs, lens)
}
