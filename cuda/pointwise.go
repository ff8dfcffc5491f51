package cuda

import (
	"fmt"
	"structs"
	"unsafe"
)

// pointwiseParams is fg_pointwise_params (kernels/pointwise.cu).
type pointwiseParams struct {
	_            structs.HostLayout
	a, b, y      devptr
	n            int64
	sa, sb       int64
	fn, reserved int32
}

// Pointwise names an elementwise function of kernels/pointwise.cu. Its String is the name
// Gorgonia gives the operator (ʘUnaryOperatorType, ʘBinaryOperatorType), so the graph
// machine maps Gorgonia's ops to kernels by name.
type Pointwise int32

// The unary functions y = f(x), in the order of kernels/pointwise.cu's FG_PW_* codes
// (TestPointwiseCodes checks the two lists against each other).
const (
	PwAbs Pointwise = iota
	PwSign
	PwCeil
	PwFloor
	PwSin
	PwCos
	PwExp
	PwLn
	PwLog2
	PwNeg
	PwSquare
	PwSqrt
	PwInv
	PwInvSqrt
	PwCube
	PwTanh
	PwSigmoid
	PwLog1p
	PwExpm1
	PwSoftplus
	numUnary
)

// The binary functions y = a ∘ b.
const (
	PwAdd Pointwise = 64 + iota
	PwSub
	PwMul
	PwDiv
	PwPow
	endBinary
)

var pointwiseNames = map[Pointwise]string{
	PwAbs: "abs", PwSign: "sign", PwCeil: "ceil", PwFloor: "floor", PwSin: "sin", PwCos: "cos",
	PwExp: "exp", PwLn: "ln", PwLog2: "log2", PwNeg: "neg", PwSquare: "square", PwSqrt: "sqrt",
	PwInv: "inv", PwInvSqrt: "invSqrt", PwCube: "cube", PwTanh: "tanh", PwSigmoid: "sigmoid",
	PwLog1p: "log1p", PwExpm1: "expm1", PwSoftplus: "softplus",
	PwAdd: "+", PwSub: "-", PwMul: "⊙", PwDiv: "÷", PwPow: "^",
}

func (f Pointwise) String() string {
	if s, ok := pointwiseNames[f]; ok {
		return s
	}
	return fmt.Sprintf("Pointwise(%d)", int32(f))
}

// Binary reports whether f takes two operands.
func (f Pointwise) Binary() bool { return f >= PwAdd && f < endBinary }

// PointwiseByName returns the function Gorgonia calls name ("tanh", "÷").
func PointwiseByName(name string) (Pointwise, bool) {
	for f, s := range pointwiseNames {
		if s == name {
			return f, true
		}
	}
	return 0, false
}

// Unary computes y[i] = f(x[i]) over the elements of x, without waiting; y may be x. f is a
// unary function (not Binary), with the math library's full-precision functions in the
// element type (σ and softplus in forms that do not overflow).
func Unary(f Pointwise, y, x *Buffer) error {
	if f < 0 || f >= numUnary {
		return fmt.Errorf("cuda: pointwise: %v is not a unary function", f)
	}
	return pointwise(f, y, x, nil)
}

// Binary computes y[i] = a[i] ∘ b[i] without waiting, ∘ a binary function f; an operand of
// one element is broadcast (a scalar operand: y[i] = a[0] ∘ b[i]). y has the length of the
// longer operand and may be one of them.
func Binary(f Pointwise, y, a, b *Buffer) error {
	if !f.Binary() {
		return fmt.Errorf("cuda: pointwise: %v is not a binary function", f)
	}
	if b == nil {
		return fmt.Errorf("cuda: pointwise %v: b is nil", f)
	}
	return pointwise(f, y, a, b)
}

func pointwise(f Pointwise, y, a, b *Buffer) error {
	op := "pointwise " + f.String()
	DT, dt, err := floatOf(op, "a", a)
	if err != nil {
		return err
	}
	n, sa, sb := a.n, int64(1), int64(0)
	ops := []operand{{name: "a", b: a, dt: DT, n: a.n}}
	if b != nil {
		sb = 1
		switch {
		case a.n == b.n:
		case a.n == 1:
			n, sa = b.n, 0
		case b.n == 1:
			sb = 0
		default:
			return fmt.Errorf("cuda: %s: a has %d elements, b %d: want equal lengths or a scalar", op, a.n, b.n)
		}
		ops = append(ops, operand{name: "b", b: b, dt: DT, n: b.n})
	}
	ops = append(ops, operand{name: "y", b: y, dt: DT, n: n})
	return launchOn(op, ops, func(s *state) error {
		if n == 0 {
			return nil
		}
		kp := pointwiseParams{a: a.ptr, b: ptrOf(b), y: y.ptr, n: int64(n), sa: sa, sb: sb, fn: int32(f)}
		return s.start("pointwise", "fg_pointwise_"+dt.String(), ewGrid(n), ewThreads, 0, unsafe.Pointer(&kp))
	})
}
