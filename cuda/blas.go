package cuda

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// cuBLAS, opened at run time like the driver (no cgo, no headers): the first product loads
// libcublas.so.13, .12 or .11 (FLASHGORGON_CUBLAS names another file), whichever the machine
// has, binds the entry points below and makes a handle in the worker's context, bound to the
// stream the kernels run on (the default stream; the recording stream during Capture) and to a
// workspace of 32 MiB of our own, with the default math mode: float32
// products are computed in float32 (no TF32 unless GemmParams.TF32 asks for it).

type blasHandle = uintptr

// cuBLAS entry points (cublas_api.h: cublasStatus_t and the enums are C int, int is int32,
// long long is int64, handles and streams are pointers), nil until loaded.
var (
	cublasCreate              func(h *blasHandle) int32
	cublasDestroy             func(h blasHandle) int32
	cublasSetStream           func(h blasHandle, stream uintptr) int32
	cublasSetWorkspace        func(h blasHandle, work devptr, bytes uintptr) int32 // optional (cuBLAS 11.4 on)
	cublasSetMathMode         func(h blasHandle, mode int32) int32
	cublasGetVersion          func(h blasHandle, v *int32) int32
	cublasSgemm               func(h blasHandle, ta, tb int32, m, n, k int32, alpha *float32, a devptr, lda int32, b devptr, ldb int32, beta *float32, c devptr, ldc int32) int32
	cublasDgemm               func(h blasHandle, ta, tb int32, m, n, k int32, alpha *float64, a devptr, lda int32, b devptr, ldb int32, beta *float64, c devptr, ldc int32) int32
	cublasSgemmStridedBatched func(h blasHandle, ta, tb int32, m, n, k int32, alpha *float32, a devptr, lda int32, sa int64, b devptr, ldb int32, sb int64, beta *float32, c devptr, ldc int32, sc int64, batch int32) int32
	cublasDgemmStridedBatched func(h blasHandle, ta, tb int32, m, n, k int32, alpha *float64, a devptr, lda int32, sa int64, b devptr, ldb int32, sb int64, beta *float64, c devptr, ldc int32, sc int64, batch int32) int32
)

var blasSymbols = []driverSymbol{
	{&cublasCreate, "cublasCreate_v2", false},
	{&cublasDestroy, "cublasDestroy_v2", false},
	{&cublasSetStream, "cublasSetStream_v2", false},
	{&cublasSetWorkspace, "cublasSetWorkspace_v2", true},
	{&cublasSetMathMode, "cublasSetMathMode", false},
	{&cublasGetVersion, "cublasGetVersion_v2", false},
	{&cublasSgemm, "cublasSgemm_v2", false},
	{&cublasDgemm, "cublasDgemm_v2", false},
	{&cublasSgemmStridedBatched, "cublasSgemmStridedBatched", false},
	{&cublasDgemmStridedBatched, "cublasDgemmStridedBatched", false},
}

// cublas_api.h values.
const (
	blasOpN             = 0 // CUBLAS_OP_N
	blasOpT             = 1 // CUBLAS_OP_T
	blasDefaultMath     = 0 // CUBLAS_DEFAULT_MATH: float32 stays float32
	blasTF32TensorOp    = 3 // CUBLAS_TF32_TENSOR_OP_MATH
	blasStatusSuccess   = 0
	blasMaxDim          = 1<<31 - 1
	blasWorkspace       = 32 << 20 // cuBLAS's advice for Hopper; a product never allocates beyond it
	blasLibraryVariable = "FLASHGORGON_CUBLAS"
)

// blasLibraries are the files tried, newest CUDA first: by name (the loader's search path),
// then in the toolkit's default location.
var blasLibraries = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
	"/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.11"}

var (
	blasOnce    sync.Once
	blasLib     string // the library loaded
	blasLoadErr error
)

// loadBLAS opens cuBLAS once per process.
func loadBLAS() error {
	blasOnce.Do(func() {
		names := blasLibraries
		if f := strings.TrimSpace(os.Getenv(blasLibraryVariable)); f != "" {
			names = []string{f}
		}
		var why []string
		for _, name := range names {
			err := openDriver(name, blasSymbols)
			if err == nil {
				blasLib = name
				return
			}
			why = append(why, err.Error())
		}
		blasLoadErr = fmt.Errorf("cuda: no cuBLAS (%s): matrix products run on the CPU", strings.Join(why, "; "))
	})
	return blasLoadErr
}

// blasStatus names a cublasStatus_t.
func blasStatus(r int32) string {
	switch r {
	case 1:
		return "CUBLAS_STATUS_NOT_INITIALIZED"
	case 3:
		return "CUBLAS_STATUS_ALLOC_FAILED"
	case 7:
		return "CUBLAS_STATUS_INVALID_VALUE"
	case 8:
		return "CUBLAS_STATUS_ARCH_MISMATCH"
	case 11:
		return "CUBLAS_STATUS_MAPPING_ERROR"
	case 13:
		return "CUBLAS_STATUS_EXECUTION_FAILED"
	case 14:
		return "CUBLAS_STATUS_INTERNAL_ERROR"
	case 15:
		return "CUBLAS_STATUS_NOT_SUPPORTED"
	case 16:
		return "CUBLAS_STATUS_LICENSE_ERROR"
	}
	return fmt.Sprintf("cublasStatus_t(%d)", r)
}

func blasCheck(r int32, call string, args ...any) error {
	if r == blasStatusSuccess {
		return nil
	}
	return fmt.Errorf("%s: %s", fmt.Sprintf(call, args...), blasStatus(r))
}

// handle returns the context's cuBLAS handle, loading the library and making the handle at
// the first use in this context.
func (s *state) handle() (blasHandle, error) {
	if s.blas != 0 {
		return s.blas, nil
	}
	if err := loadBLAS(); err != nil {
		return 0, err
	}
	var h blasHandle
	if err := blasCheck(cublasCreate(&h), "cublasCreate (%s)", blasLib); err != nil {
		return 0, err
	}
	if err := blasCheck(cublasSetMathMode(h, blasDefaultMath), "cublasSetMathMode(CUBLAS_DEFAULT_MATH)"); err != nil {
		cublasDestroy(h)
		return 0, err
	}
	if cublasSetWorkspace != nil {
		w, err := memAlloc(blasWorkspace)
		if err != nil {
			cublasDestroy(h)
			return 0, err
		}
		s.blasWork = w
	}
	s.blas = h
	if err := s.blasStream(s.stream); err != nil {
		cublasDestroy(h)
		s.blas = 0
		if s.blasWork != 0 {
			memFree(s.blasWork)
			s.blasWork = 0
		}
		return 0, err
	}
	return h, nil
}

// blasStream makes the handle's products go to stream st, with the workspace of our own (which
// cublasSetStream forgets): cuBLAS then allocates nothing during a product, as recording a
// step (Capture) requires.
func (s *state) blasStream(st cuStream) error {
	if err := blasCheck(cublasSetStream(s.blas, st), "cublasSetStream"); err != nil {
		return err
	}
	if s.blasWork == 0 {
		return nil
	}
	return blasCheck(cublasSetWorkspace(s.blas, s.blasWork, blasWorkspace), "cublasSetWorkspace(%d bytes)", blasWorkspace)
}

// BLAS reports whether matrix products can run on the device: nil, or why not (no device,
// or no cuBLAS library). It loads cuBLAS at its first call.
func BLAS() error {
	if !Enabled() {
		return ErrNoDevice
	}
	return run("cuBLAS", func(s *state) error {
		_, err := s.handle()
		return err
	})
}

// BLASVersion returns the loaded cuBLAS library's file name and version (e.g. 130000), after
// BLAS returned nil.
func BLASVersion() (string, int, error) {
	if err := BLAS(); err != nil {
		return "", 0, err
	}
	var v int32
	err := run("cuBLAS", func(s *state) error {
		return blasCheck(cublasGetVersion(s.blas, &v), "cublasGetVersion")
	})
	return blasLib, int(v), err
}

// GemmParams describes C = Alpha·op(A)·op(B) + Beta·C on row-major matrices in Buffers:
//
//	op(A) [M, K]: A is [M, K] with row stride LdA ≥ K, or with TransA [K, M] with LdA ≥ M
//	op(B) [K, N]: B is [K, N] with row stride LdB ≥ N, or with TransB [N, K] with LdB ≥ K
//	C     [M, N] with row stride LdC ≥ N
//
// A zero leading dimension means the packed one (the row length). With Batch > 1 the product
// is done Batch times, matrix i of each operand starting StrideX elements after matrix i−1
// (strided-batched; StrideC ≥ M·LdC unless the batches are meant to write disjoint parts).
// A, B and C are all Float32 or all Float64; Beta = 0 ignores C's contents (NaN included).
// TF32 lets a float32 product use TF32 tensor cores (10-bit mantissa inputs); by default
// float32 products are computed in float32.
type GemmParams struct {
	TransA, TransB            bool
	M, N, K                   int
	Alpha, Beta               float64
	A, B, C                   *Buffer
	LdA, LdB, LdC             int
	Batch                     int
	StrideA, StrideB, StrideC int
	TF32                      bool
}

// rows and cols of a stored operand.
func storedShape(trans bool, r, c int) (int, int) {
	if trans {
		return c, r
	}
	return r, c
}

// check validates p and fills the defaults; it returns the element type.
func (p *GemmParams) check() (dtype, error) {
	shape := fmt.Sprintf("M=%d N=%d K=%d TransA=%t TransB=%t LdA=%d LdB=%d LdC=%d Batch=%d", p.M, p.N, p.K, p.TransA, p.TransB, p.LdA, p.LdB, p.LdC, p.Batch)
	if p.M < 0 || p.N < 0 || p.K < 0 || p.Batch < 0 || p.Batch > blasMaxDim || p.M > blasMaxDim || p.N > blasMaxDim || p.K > blasMaxDim {
		return 0, fmt.Errorf("cuda: gemm: sizes must be in [0, 2^31) (%s)", shape)
	}
	if p.A == nil || p.B == nil || p.C == nil {
		return 0, fmt.Errorf("cuda: gemm: A %v, B %v, C %v: every operand must be set (%s)", p.A, p.B, p.C, shape)
	}
	dt, ok := p.C.dt.float()
	if !ok || p.A.dt != p.C.dt || p.B.dt != p.C.dt {
		return 0, fmt.Errorf("cuda: gemm: A %v, B %v, C %v: want one element type, float32 or float64", p.A, p.B, p.C)
	}
	if p.TF32 && dt != f32 {
		return 0, fmt.Errorf("cuda: gemm: TF32 asked for a %v product", p.C.dt)
	}
	if p.Batch == 0 {
		p.Batch = 1
	}
	ar, ac := storedShape(p.TransA, p.M, p.K)
	br, bc := storedShape(p.TransB, p.K, p.N)
	for _, o := range []struct {
		name       string
		ld         *int
		rows, cols int
		stride     *int
		buf        *Buffer
	}{{"A", &p.LdA, ar, ac, &p.StrideA, p.A}, {"B", &p.LdB, br, bc, &p.StrideB, p.B}, {"C", &p.LdC, p.M, p.N, &p.StrideC, p.C}} {
		if *o.ld == 0 {
			*o.ld = max(o.cols, 1)
		}
		if *o.ld < max(o.cols, 1) || *o.ld > blasMaxDim {
			return 0, fmt.Errorf("cuda: gemm: Ld%s=%d for a stored %s of %d×%d (want ≥ %d) (%s)", o.name, *o.ld, o.name, o.rows, o.cols, max(o.cols, 1), shape)
		}
		if p.Batch > 1 && *o.stride < 0 {
			return 0, fmt.Errorf("cuda: gemm: Stride%s=%d is negative (%s)", o.name, *o.stride, shape)
		}
		need := 0
		if o.rows > 0 && o.cols > 0 {
			need = (o.rows-1)*(*o.ld) + o.cols + (p.Batch-1)*(*o.stride)
		}
		if o.buf.n < need {
			return 0, fmt.Errorf("cuda: gemm: %s %v is too short: a stored %d×%d with Ld%s=%d, Batch=%d, Stride%s=%d needs %d elements (%s)",
				o.name, o.buf, o.rows, o.cols, o.name, *o.ld, p.Batch, o.name, *o.stride, need, shape)
		}
	}
	return dt, nil
}

// Gemm computes the product p describes on the device. It waits for nothing: the product
// runs after the kernels launched before it, and Download or Synchronize waits for it.
func Gemm(p GemmParams) error {
	dt, err := p.check()
	if err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("gemm", func(s *state) error {
		for _, b := range []struct {
			n string
			b *Buffer
		}{{"A", p.A}, {"B", p.B}, {"C", p.C}} {
			if err := b.b.usable(s, b.n); err != nil {
				return fmt.Errorf("cuda: gemm: %w", err)
			}
		}
		if p.M == 0 || p.N == 0 {
			return nil
		}
		h, err := s.handle()
		if err != nil {
			return err
		}
		if p.TF32 {
			if err := blasCheck(cublasSetMathMode(h, blasTF32TensorOp), "cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH)"); err != nil {
				return err
			}
			defer cublasSetMathMode(h, blasDefaultMath)
		}
		return blasGemm(h, dt, &p)
	})
}

// blasGemm calls cuBLAS, which is column-major: a row-major [R, C] matrix with row stride ld
// is, read column-major, its transpose [C, R] with leading dimension ld. So the row-major
// C = op(A)·op(B) is computed as the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap
// places and keep their transpose flags, with m and n swapped.
func blasGemm(h blasHandle, dt dtype, p *GemmParams) error {
	op := func(t bool) int32 {
		if t {
			return blasOpT
		}
		return blasOpN
	}
	ta, tb := op(p.TransB), op(p.TransA)
	m, n, k := int32(p.N), int32(p.M), int32(p.K)
	a, lda, sa := p.B.ptr, int32(p.LdB), int64(p.StrideB)
	b, ldb, sb := p.A.ptr, int32(p.LdA), int64(p.StrideA)
	c, ldc, sc := p.C.ptr, int32(p.LdC), int64(p.StrideC)
	call := fmt.Sprintf("(M=%d N=%d K=%d Batch=%d)", p.M, p.N, p.K, p.Batch)
	if dt == f32 {
		alpha, beta := new(float32), new(float32)
		*alpha, *beta = float32(p.Alpha), float32(p.Beta)
		if p.Batch == 1 {
			return blasCheck(cublasSgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), "cublasSgemm_v2%s", call)
		}
		return blasCheck(cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, int32(p.Batch)), "cublasSgemmStridedBatched%s", call)
	}
	alpha, beta := new(float64), new(float64)
	*alpha, *beta = p.Alpha, p.Beta
	if p.Batch == 1 {
		return blasCheck(cublasDgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), "cublasDgemm_v2%s", call)
	}
	return blasCheck(cublasDgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, int32(p.Batch)), "cublasDgemmStridedBatched%s", call)
}
