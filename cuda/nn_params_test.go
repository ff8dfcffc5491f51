package cuda

import (
	"errors"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNNParamsHeader checks kernels/nn_params.h against the Go structs of nn_params.go, as
// TestParamsHeader does for params.h, and its FG_EW_* constants against the Go ones.
func TestNNParamsHeader(t *testing.T) {
	b, err := os.ReadFile("kernels/nn_params.h")
	if err != nil {
		t.Fatal(err)
	}
	fields, sizes, err := parseStructs(string(b))
	if err != nil {
		t.Fatal(err)
	}
	structs := []struct {
		c string
		g reflect.Type
	}{
		{"fg_ew_params", reflect.TypeFor[ewParams]()},
		{"fg_embed_params", reflect.TypeFor[embedParams]()},
		{"fg_norm_params", reflect.TypeFor[normParams]()},
		{"fg_colsum_params", reflect.TypeFor[colsumParams]()},
		{"fg_heads_params", reflect.TypeFor[headsParams]()},
		{"fg_ce_params", reflect.TypeFor[ceParams]()},
		{"fg_adamw_params", reflect.TypeFor[adamwParams]()},
		{"fg_sumsq_params", reflect.TypeFor[sumsqParams]()},
		{"fg_tensor_desc", reflect.TypeFor[tensorDesc]()},
		{"fg_group_params", reflect.TypeFor[groupParams]()},
	}
	if len(fields) != len(structs) {
		t.Errorf("nn_params.h declares %d structs, the Go side %d", len(fields), len(structs))
	}
	for _, s := range structs {
		for _, d := range compareStruct(fields, sizes, s.c, s.g) {
			t.Error(d)
		}
	}
	defines := map[string]int{}
	for _, m := range defineRE.FindAllStringSubmatch(string(b), -1) {
		defines[m[1]], _ = strconv.Atoi(m[2])
	}
	for name, v := range map[string]int32{"FG_EW_ADD": ewAdd, "FG_EW_MUL": ewMul} {
		if got, ok := defines[name]; !ok || got != int(v) {
			t.Errorf("nn_params.h: %s = %d (defined %v), want %d", name, got, ok, v)
		}
	}
}

// TestPhilox checks Philox4x32 against the known-answer vectors of Random123
// (kat_vectors: philox4x32 10 rounds, counter, key, result).
func TestPhilox(t *testing.T) {
	for _, c := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, [2]uint32{^uint32(0), ^uint32(0)}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		if got := Philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
	// Element i draws word i mod 4 of counter offset + i/4: a mask drawn from offset + 1 is
	// the one from offset shifted by four elements.
	for i := 0; i < 64; i++ {
		if DropoutWord(7, 100, i+4) != DropoutWord(7, 101, i) {
			t.Fatalf("DropoutWord(7, 100, %d) != DropoutWord(7, 101, %d)", i+4, i)
		}
	}
	// The keep fraction of p = 0.3 over 200000 draws is 0.7 within 5 standard deviations.
	const n = 200000
	kept := 0
	for i := 0; i < n; i++ {
		if DropoutKeep(12345, 0, i, 0.3) {
			kept++
		}
	}
	if f, sd := float64(kept)/n, 0.0010247; f < 0.7-5*sd || f > 0.7+5*sd {
		t.Errorf("keep fraction %.5f over %d draws, want 0.7 ± %.4f", f, n, 5*sd)
	}
}

// TestBufferChecks checks, without a device, the argument checks that run before any CUDA
// call: each bad call gets an error naming the sizes or types involved, and no panic.
func TestBufferChecks(t *testing.T) {
	f32buf := func(n int) *Buffer { return &Buffer{n: n, dt: Float32} }
	f64buf := func(n int) *Buffer { return &Buffer{n: n, dt: Float64} }
	i32buf := func(n int) *Buffer { return &Buffer{n: n, dt: Int32} }
	v, _ := f32buf(10).View(2, 3)
	cases := []struct {
		name string
		err  error
		want string // a piece of the message
	}{
		{"upload length", f32buf(4).Upload(make([]float32, 5)), "5 elements, buffer float32[4] has 4"},
		{"upload type", f32buf(4).Upload(make([]float64, 4)), "[]float64, buffer is float32[4]"},
		{"upload non-slice", f32buf(4).Upload(3), "int, want []float32"},
		{"download length", i32buf(4).Download(make([]int32, 3)), "3 elements"},
		{"alloc negative", func() error { _, err := Alloc(Float32, -1); return err }(), "-1 elements"},
		{"alloc type", func() error { _, err := Alloc(DType(9), 1); return err }(), "DType(9)"},
		{"view range", func() error { _, err := f32buf(10).View(8, 3); return err }(), "View(8, 3) of float32[10]"},
		{"free view", v.Free(), "is a view"},
		{"copy mismatch", Copy(f32buf(3), f64buf(3)), "differ in type or length"},
		{"gemm short A", Gemm(GemmParams{M: 4, N: 5, K: 6, A: f32buf(23), B: f32buf(30), C: f32buf(20)}), "A float32[23] is too short"},
		{"gemm ld", Gemm(GemmParams{M: 4, N: 5, K: 6, A: f32buf(24), B: f32buf(30), C: f32buf(20), LdB: 4}), "LdB=4"},
		{"gemm types", Gemm(GemmParams{M: 1, N: 1, K: 1, A: f32buf(1), B: f64buf(1), C: f32buf(1)}), "one element type"},
		{"gemm batch stride", Gemm(GemmParams{M: 2, N: 2, K: 2, A: f32buf(8), B: f32buf(8), C: f32buf(7), Batch: 2, StrideA: 4, StrideB: 4, StrideC: 4}), "C float32[7] is too short"},
		{"gemm tf32 f64", Gemm(GemmParams{M: 1, N: 1, K: 1, A: f64buf(1), B: f64buf(1), C: f64buf(1), TF32: true}), "TF32"},
		{"add length", Add(f32buf(3), f32buf(3), f32buf(4)), "b is float32[4], want float32[3]"},
		{"gelu int", GELU(i32buf(3), i32buf(3)), "want float32 or float64"},
		{"affine no params", Affine(f32buf(6), f32buf(6), nil, nil), "gamma and/or beta"},
		{"affine rows", Affine(f32buf(7), f32buf(7), f32buf(3), nil), "x [rows, d]"},
		{"gather idx type", Gather(f32buf(6), f32buf(12), f32buf(2), 3), "idx is float32[2], want int32[2]"},
		{"gather y", Gather(f32buf(5), f32buf(12), i32buf(2), 3), "y is float32[5], want float32[6]"},
		{"scatter table", ScatterAdd(f32buf(7), i32buf(2), f32buf(6), 3, false), "dtable float32[7] is not [V, 3]"},
		{"norm eps", NormForward(NormParams{Rows: 2, D: 3, X: f32buf(6), Mean: f64buf(2), Rstd: f64buf(2)}), "Eps=0"},
		{"norm mean type", NormForward(NormParams{Rows: 2, D: 3, Eps: 1e-5, X: f32buf(6), Mean: f32buf(2), Rstd: f64buf(2)}), "Mean is float32[2], want float64[2]"},
		{"norm work", NormBackward(NormParams{Rows: 2, D: 3, Eps: 1e-5, X: f32buf(6), Mean: f64buf(2), Rstd: f64buf(2), DY: f32buf(6), DGamma: f32buf(3), Work: f64buf(1)}), "Work is float64[1], want at least 6"},
		{"colsum out", ColSum(ColSumParams{Rows: 4, D: 3, G: f64buf(12), Out: f64buf(4), Work: f64buf(3)}), "Out is float64[4], want float64[3]"},
		{"ce targets", CrossEntropyForward(CrossEntropyParams{M: 3, V: 5, Logits: f32buf(15), Targets: i32buf(2), Loss: f32buf(1), Work: f64buf(3)}), "Targets is int32[2], want int32[3]"},
		{"ce dloss", CrossEntropyBackward(CrossEntropyParams{M: 3, V: 5, Logits: f32buf(15), Targets: i32buf(3), DLogits: f32buf(15), Work: f64buf(3)}), "DLoss is nil"},
		{"adamw step", AdamW(AdamWParams{Param: f32buf(3), Grad: f32buf(3), M: f32buf(3), V: f32buf(3), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}), "Step=0"},
		{"adamw beta", AdamW(AdamWParams{Param: f32buf(3), Grad: f32buf(3), M: f32buf(3), V: f32buf(3), Beta1: 1, Beta2: 0.999, Eps: 1e-8, Step: 1}), "Beta1=1"},
		{"adamw moment", AdamW(AdamWParams{Param: f32buf(3), Grad: f32buf(3), M: f64buf(3), V: f32buf(3), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}), "M is float64[3], want float32[3]"},
		{"grad norm work", GradNorm(f64buf(1), f64buf(1), f32buf(3000), f64buf(10)), "work is float64[1], want at least 3"},
		{"grad norm out", GradNorm(f32buf(1), f64buf(3), f32buf(3)), "norm is float32[1], want float64[1]"},
		{"clip nan", ClipByNorm(f64buf(1), nanValue(), f32buf(3)), "maxNorm is NaN"},
		{"group lengths", func() error {
			_, err := NewParamGroup([]*Buffer{f32buf(3)}, []*Buffer{f32buf(3)}, nil, []*Buffer{f32buf(3)}, []bool{true})
			return err
		}(), "1 params, 1 grads, 0 m, 1 v"},
		{"group grad length", func() error {
			_, err := NewParamGroup([]*Buffer{f32buf(3), f32buf(4)}, []*Buffer{f32buf(3), f32buf(5)}, nil, nil, []bool{true, false})
			return err
		}(), "grads[1] is float32[5], want float32[4]"},
		{"group types", func() error {
			_, err := NewParamGroup([]*Buffer{f32buf(3), f64buf(4)}, []*Buffer{f32buf(3), f64buf(4)}, nil, nil, []bool{true, false})
			return err
		}(), "params[1] is float64[4], want float32[4]"},
		{"dropout p", Dropout(DropoutParams{P: 1, Y: f32buf(3)}), "P=1 is outside [0, 1)"},
		{"dropout x", Dropout(DropoutParams{P: 0.5, X: f32buf(4), Y: f32buf(3)}), "X is float32[4], want float32[3]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil || errors.Is(c.err, ErrNoDevice) {
				t.Fatalf("got %v, want an error containing %q", c.err, c.want)
			}
			if !strings.Contains(c.err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", c.err, c.want)
			}
		})
	}
}

func nanValue() float64 { var z float64; return z / z }

// TestLoadBLAS loads cuBLAS where the machine has it (no device needed) and checks that a
// failure names every library tried.
func TestLoadBLAS(t *testing.T) {
	if err := loadBLAS(); err != nil {
		for _, lib := range blasLibraries {
			if !strings.Contains(err.Error(), lib) {
				t.Errorf("error %q does not name %s", err, lib)
			}
		}
		t.Logf("no cuBLAS here: %v", err)
		return
	}
	t.Logf("cuBLAS loaded from %s", blasLib)
}

// TestBuffersNoDevice checks that without a device the Buffer API refuses with ErrNoDevice
// after its argument checks pass.
func TestBuffersNoDevice(t *testing.T) {
	if Enabled() {
		t.Skipf("a CUDA device is in use (%s)", Device())
	}
	b := &Buffer{n: 4, dt: Float32}
	for name, err := range map[string]error{
		"Alloc":       func() error { _, err := Alloc(Float32, 4); return err }(),
		"BLAS":        BLAS(),
		"Upload":      b.Upload(make([]float32, 4)),
		"Synchronize": Synchronize(),
		"Gemm":        Gemm(GemmParams{M: 2, N: 2, K: 1, A: b, B: b, C: b}),
		"GELU":        GELU(b, b),
	} {
		if !errors.Is(err, ErrNoDevice) {
			t.Errorf("%s: %v, want ErrNoDevice", name, err)
		}
	}
}

// TestDispatchReentrant checks the worker's hand-over without a device: a job runs on the
// worker (onWorker is true there and false here), and a call made from the worker (as the
// launchers inside Do make) runs directly instead of queueing behind the job that makes it,
// which would never return.
func TestDispatchReentrant(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread ids are read on linux only")
	}
	if onWorker() {
		t.Fatal("the test goroutine is taken for the worker")
	}
	var outer, inner, ran bool
	done := make(chan struct{})
	go func() {
		dispatch(func() {
			outer = onWorker()
			dispatch(func() { inner, ran = onWorker(), true })
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a dispatch from the worker did not return: it queued behind its own caller")
	}
	if !outer || !inner || !ran {
		t.Errorf("on the worker: outer job %t, nested job %t (ran %t); want both on the worker", outer, inner, ran)
	}
}

// TestBufferUsable checks, without a device, which Buffers a call refuses: freed ones, views of
// freed ones, and those of an older context.
func TestBufferUsable(t *testing.T) {
	s := &state{gen: 2}
	b := &Buffer{n: 8, dt: Float32, gen: 2}
	v, err := b.View(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	vv, err := v.View(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Buffer{b, v, vv} {
		if err := x.usable(s, "x"); err != nil {
			t.Errorf("%v: %v", x, err)
		}
	}
	if err := (&Buffer{n: 1, dt: Float32, gen: 1}).usable(s, "old"); err == nil || !strings.Contains(err.Error(), "reset after a fault") {
		t.Errorf("a buffer of an older context: %v", err)
	}
	b.freed = true
	for _, x := range []*Buffer{b, v, vv} {
		if err := x.usable(s, "x"); err == nil || !strings.Contains(err.Error(), "freed") {
			t.Errorf("%v after its memory was freed: %v, want an error", x, err)
		}
	}
}
