package cuda

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestPointwiseCodes checks kernels/pointwise.cu's FG_PW_* enum and its params struct against
// pointwise.go: the same functions, in the same order, with the same values.
func TestPointwiseCodes(t *testing.T) {
	b, err := os.ReadFile("kernels/pointwise.cu")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	m := regexp.MustCompile(`(?s)enum \{(.*?)\};`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("kernels/pointwise.cu: no enum of FG_PW_* codes")
	}
	code, n := map[string]int{}, 0
	for _, item := range strings.Split(m[1], ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if ok {
			if _, err := fmt.Sscan(strings.TrimSpace(val), &n); err != nil {
				t.Fatalf("pointwise.cu: %s = %q", name, val)
			}
		}
		code[name] = n
		n++
	}
	if len(code) != len(pointwiseNames) {
		t.Errorf("pointwise.cu has %d codes, pointwise.go %d", len(code), len(pointwiseNames))
	}
	for f, name := range pointwiseNames {
		c := "FG_PW_" + strings.ToUpper(map[string]string{"+": "add", "-": "sub", "⊙": "mul", "÷": "div", "^": "pow"}[name]+strings.Trim(name, "+-⊙÷^"))
		if got, ok := code[c]; !ok || got != int(f) {
			t.Errorf("pointwise.cu: %s = %d (declared %v), want %d (%v)", c, got, ok, int(f), name)
		}
	}
	fields, sizes, err := parseStructs(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range compareStruct(fields, sizes, "fg_pointwise_params", reflect.TypeFor[pointwiseParams]()) {
		t.Error(d)
	}
}

// pointwiseRef is each function's float64 definition, written from Gorgonia's operator names,
// and the domain its test inputs are drawn from.
var pointwiseRef = map[Pointwise]struct {
	f      func(a, b float64) float64
	domain func(x float64) float64
}{
	PwAbs:      {func(x, _ float64) float64 { return math.Abs(x) }, nil},
	PwSign:     {func(x, _ float64) float64 { return float64(sign(x)) }, nil},
	PwCeil:     {func(x, _ float64) float64 { return math.Ceil(x) }, nil},
	PwFloor:    {func(x, _ float64) float64 { return math.Floor(x) }, nil},
	PwSin:      {func(x, _ float64) float64 { return math.Sin(x) }, nil},
	PwCos:      {func(x, _ float64) float64 { return math.Cos(x) }, nil},
	PwExp:      {func(x, _ float64) float64 { return math.Exp(x) }, nil},
	PwLn:       {func(x, _ float64) float64 { return math.Log(x) }, positive},
	PwLog2:     {func(x, _ float64) float64 { return math.Log2(x) }, positive},
	PwNeg:      {func(x, _ float64) float64 { return -x }, nil},
	PwSquare:   {func(x, _ float64) float64 { return x * x }, nil},
	PwSqrt:     {func(x, _ float64) float64 { return math.Sqrt(x) }, positive},
	PwInv:      {func(x, _ float64) float64 { return 1 / x }, positive},
	PwInvSqrt:  {func(x, _ float64) float64 { return 1 / math.Sqrt(x) }, positive},
	PwCube:     {func(x, _ float64) float64 { return x * x * x }, nil},
	PwTanh:     {func(x, _ float64) float64 { return math.Tanh(x) }, nil},
	PwSigmoid:  {func(x, _ float64) float64 { return 1 / (1 + math.Exp(-x)) }, nil},
	PwLog1p:    {func(x, _ float64) float64 { return math.Log1p(x) }, positive},
	PwExpm1:    {func(x, _ float64) float64 { return math.Expm1(x) }, nil},
	PwSoftplus: {func(x, _ float64) float64 { return math.Log1p(math.Exp(x)) }, nil},
	PwAdd:      {func(a, b float64) float64 { return a + b }, nil},
	PwSub:      {func(a, b float64) float64 { return a - b }, nil},
	PwMul:      {func(a, b float64) float64 { return a * b }, nil},
	PwDiv:      {func(a, b float64) float64 { return a / b }, positive},
	PwPow:      {func(a, b float64) float64 { return math.Pow(a, b) }, positive},
}

func positive(x float64) float64 { return math.Abs(x) + 0.125 }

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// TestPointwiseDevice runs every function on the device against its float64 definition, at
// float32 and float64, on the test lengths and with a scalar operand on either side: each
// element within a few units in the last place of the element type, relative to
// max(|want|, 1).
func TestPointwiseDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(3))
	for _, dt := range dtypes {
		ulps := map[DType]float64{Float32: 4 * 0x1p-23, Float64: 4 * 0x1p-52}[dt]
		for f, ref := range pointwiseRef {
			for _, n := range []int{1, 17, 1025, 100003} {
				t.Run(fmt.Sprintf("%v/%v/n=%d", dt, f, n), func(t *testing.T) {
					draw := func(m int) []float64 {
						x := randn(rng, m, 3)
						if ref.domain != nil {
							for i := range x {
								x[i] = ref.domain(x[i])
							}
						}
						return rounded(x, dt)
					}
					a, b := draw(n), draw(n)
					tol := ulps
					if f == PwPow && dt == Float64 {
						// The float64 reference is not within an ulp here: Go's math.Pow multiplies
						// in x^⌊y⌋ by repeated squaring (a rounding per step), and CUDA's pow is
						// within 2 ulps; a device result 5 ulps from math.Pow's was seen at
						// 37009.0059 (eighth session). 16 ulps still catch any wrong formula.
						tol = 4 * ulps
					}
					check := func(what string, err error, y *Buffer, want func(i int) float64) {
						t.Helper()
						if err != nil {
							t.Fatal(err)
						}
						got := host(t, y)
						for i := range got {
							w := want(i)
							if d := math.Abs(got[i] - w); !(d <= tol*math.Max(math.Abs(w), 1)) {
								t.Fatalf("%s: y[%d] = %v, want %v (error %.3g)", what, i, got[i], w, d)
							}
						}
					}
					Y := devOut(t, dt, n)
					if !f.Binary() {
						check("y", Unary(f, Y, devBuf(t, dt, a)), Y, func(i int) float64 { return ref.f(a[i], 0) })
						return
					}
					A, B := devBuf(t, dt, a), devBuf(t, dt, b)
					check("a∘b", Binary(f, Y, A, B), Y, func(i int) float64 { return ref.f(a[i], b[i]) })
					check("a[0]∘b", Binary(f, Y, devBuf(t, dt, a[:1]), B), Y, func(i int) float64 { return ref.f(a[0], b[i]) })
					check("a∘b[0]", Binary(f, Y, A, devBuf(t, dt, b[:1])), Y, func(i int) float64 { return ref.f(a[i], b[0]) })
				})
			}
		}
		t.Run(dt.String()+"/extremes", func(t *testing.T) {
			x := []float64{-1000, -100, -30, 0, 30, 100, 1000}
			X, Y := devBuf(t, dt, x), devOut(t, dt, len(x))
			for _, f := range []Pointwise{PwSigmoid, PwSoftplus, PwTanh} {
				if err := Unary(f, Y, X); err != nil {
					t.Fatal(err)
				}
				for i, v := range host(t, Y) {
					if math.IsNaN(v) || math.IsInf(v, 0) && f != PwSoftplus {
						t.Errorf("%v(%g) = %v, want a finite value", f, x[i], v)
					}
				}
			}
		})
	}
}

// TestPointwiseErrors: bad functions and lengths are errors naming them (no device needed for
// the function checks).
func TestPointwiseErrors(t *testing.T) {
	if err := Unary(PwAdd, nil, nil); err == nil || !strings.Contains(err.Error(), "+") {
		t.Errorf("Unary(+): %v, want an error naming +", err)
	}
	if err := Binary(PwTanh, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "tanh") {
		t.Errorf("Binary(tanh): %v, want an error naming tanh", err)
	}
	for _, name := range []string{"tanh", "÷", "invSqrt"} {
		if f, ok := PointwiseByName(name); !ok || f.String() != name {
			t.Errorf("PointwiseByName(%q) = %v, %v", name, f, ok)
		}
	}
}
