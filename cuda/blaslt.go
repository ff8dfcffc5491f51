package cuda

import (
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// cuBLASLt, opened at run time like cuBLAS (libcublasLt.so.13, .12 or .11, or the file
// FLASHGORGON_CUBLASLT names), for the one product cuBLAS's classic API cannot fuse: a linear
// layer's bias added in the product's epilogue (CUBLASLT_EPILOGUE_BIAS), so that the bias costs
// no pass of its own over the output. Float32 products are computed in float32
// (CUBLAS_COMPUTE_32F, never TF32), float64 in float64.

type (
	ltHandle uintptr
	ltDesc   uintptr
	ltLayout uintptr
)

// cuBLASLt entry points (cublasLt.h), nil until loaded.
var (
	cublasLtCreate                 func(h *ltHandle) int32
	cublasLtMatmulDescCreate       func(d *ltDesc, compute int32, scale int32) int32
	cublasLtMatmulDescDestroy      func(d ltDesc) int32
	cublasLtMatmulDescSetAttribute func(d ltDesc, attr int32, buf unsafe.Pointer, size uintptr) int32
	cublasLtMatrixLayoutCreate     func(l *ltLayout, dt int32, rows, cols uint64, ld int64) int32
	cublasLtMatrixLayoutDestroy    func(l ltLayout) int32
	cublasLtMatmul                 func(h ltHandle, d ltDesc, alpha unsafe.Pointer, a devptr, la ltLayout, b devptr, lb ltLayout,
		beta unsafe.Pointer, c devptr, lc ltLayout, dd devptr, ld ltLayout, algo unsafe.Pointer, work devptr, workBytes uintptr, stream cuStream) int32
)

var ltSymbols = []driverSymbol{
	{&cublasLtCreate, "cublasLtCreate", false},
	{&cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate", false},
	{&cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy", false},
	{&cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute", false},
	{&cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate", false},
	{&cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy", false},
	{&cublasLtMatmul, "cublasLtMatmul", false},
}

// cublasLt.h and library_types.h values.
const (
	cudaR32F                 = 0  // CUDA_R_32F
	cudaR64F                 = 1  // CUDA_R_64F
	cublasCompute32F         = 68 // CUBLAS_COMPUTE_32F: float32 in float32, no TF32
	cublasCompute64F         = 70 // CUBLAS_COMPUTE_64F
	ltDescTransA             = 3  // CUBLASLT_MATMUL_DESC_TRANSA (int32)
	ltDescTransB             = 4  // CUBLASLT_MATMUL_DESC_TRANSB (int32)
	ltDescEpilogue           = 7  // CUBLASLT_MATMUL_DESC_EPILOGUE (uint32)
	ltDescBiasPointer        = 8  // CUBLASLT_MATMUL_DESC_BIAS_POINTER (void*)
	ltEpilogueBias    uint32 = 4  // CUBLASLT_EPILOGUE_BIAS
	ltLibraryVariable        = "FLASHGORGON_CUBLASLT"
)

var ltLibraries = []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11",
	"/usr/local/cuda/lib64/libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.11"}

var (
	ltOnce    sync.Once
	ltLib     string
	ltLoadErr error
	// lt is the cuBLASLt handle and the context generation it was made in, and off once a
	// call failed; the worker thread alone reads and writes it (a handle of a lost context is
	// not used again).
	lt struct {
		h   ltHandle
		gen uint64
		off bool
	}
)

// loadLt opens cuBLASLt once per process.
func loadLt() error {
	ltOnce.Do(func() {
		names := ltLibraries
		if f := strings.TrimSpace(os.Getenv(ltLibraryVariable)); f != "" {
			names = []string{f}
		}
		var why []string
		for _, name := range names {
			if err := openDriver(name, ltSymbols); err == nil {
				ltLib = name
				return
			} else {
				why = append(why, err.Error())
			}
		}
		ltLoadErr = fmt.Errorf("cuda: no cuBLASLt (%s)", strings.Join(why, "; "))
	})
	return ltLoadErr
}

// ltHandleOf returns the cuBLASLt handle of the current context, made at its first use.
func (s *state) ltHandleOf() (ltHandle, error) {
	if lt.h != 0 && lt.gen == s.gen {
		return lt.h, nil
	}
	if err := loadLt(); err != nil {
		return 0, err
	}
	var h ltHandle
	if err := blasCheck(cublasLtCreate(&h), "cublasLtCreate (%s)", ltLib); err != nil {
		return 0, err
	}
	lt.h, lt.gen = h, s.gen
	return h, nil
}

// GemmBiasParams describes C = op(A)·op(B) + 1·biasᵀ on row-major matrices (a linear layer
// with its bias, nn's linearOp):
//
//	C[m, n] = Σ_k op(A)[m, k]·op(B)[k, n] + Bias[n]      op(A) [M, K], op(B) [K, N], Bias [N], C [M, N]
//
// packed (leading dimensions the row lengths), with A, B, Bias and C all Float32 or all
// Float64; float32 is computed in float32.
type GemmBiasParams struct {
	TransA, TransB bool
	M, N, K        int
	A, B, Bias, C  *Buffer
}

// GemmBias computes the product p describes: on cuBLASLt with the bias added in the product's
// epilogue, or, where cuBLASLt is absent or refuses the problem, as a cuBLAS product followed
// by Affine (the same sums; one more pass over C). A cuBLASLt call failing otherwise (a status
// that is not CUBLAS_STATUS_NOT_SUPPORTED: cuBLASLt is given what cuBLAS would accept, so
// that is a fault of this binding or of the library) is logged once and cuBLASLt is not used
// again in this process: the products stay on the device, through cuBLAS. It waits for
// nothing.
func GemmBias(p GemmBiasParams) error {
	g := GemmParams{TransA: p.TransA, TransB: p.TransB, M: p.M, N: p.N, K: p.K, Alpha: 1, A: p.A, B: p.B, C: p.C}
	dt, err := g.check()
	if err != nil {
		return fmt.Errorf("%w (gemm with bias)", err)
	}
	if p.Bias == nil || p.Bias.dt != p.C.dt || p.Bias.n != p.N {
		return fmt.Errorf("cuda: gemm with bias: Bias %v, want %v[%d]", p.Bias, p.C.dt, p.N)
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("gemm with bias", func(s *state) error {
		for _, b := range []struct {
			n string
			b *Buffer
		}{{"A", p.A}, {"B", p.B}, {"Bias", p.Bias}, {"C", p.C}} {
			if err := b.b.usable(s, b.n); err != nil {
				return fmt.Errorf("cuda: gemm with bias: %w", err)
			}
		}
		if p.M == 0 || p.N == 0 {
			return nil
		}
		// cuBLAS's handle first: its workspace, which cuBLASLt shares, exists from the first
		// call on, so that every call of a problem gets the same algorithm.
		bh, err := s.handle()
		if err != nil {
			return err
		}
		if p.K > 0 && !lt.off {
			if h, err := s.ltHandleOf(); err == nil {
				r := ltGemmBias(s, h, dt, &g, p.Bias)
				if r == blasStatusSuccess {
					return nil
				}
				if r != blasStatusNotSupported {
					lt.off = true
					log.Printf("flashgorgon: cublasLtMatmul (%s, M=%d N=%d K=%d, bias epilogue): %s: products with a bias run as a cuBLAS product and a bias kernel from now on",
						ltLib, p.M, p.N, p.K, blasStatus(r))
				}
			}
		}
		// No cuBLASLt, or no kernel of it for this problem (or K = 0: C = bias).
		if err := blasGemm(bh, dt, &g); err != nil {
			return err
		}
		kp := ewParams{a: p.C.ptr, c: p.Bias.ptr, y: p.C.ptr, n: int64(p.M * p.N), d: int64(p.N)}
		return s.startNN("fg_affine", dt, ewGrid(p.M*p.N), ewThreads, unsafe.Pointer(&kp))
	})
}

const blasStatusNotSupported = 15 // CUBLAS_STATUS_NOT_SUPPORTED

// ltGemmBias runs g (packed, Alpha 1, Beta 0) with bias in the epilogue on the stream the
// kernels go to, and returns cuBLASLt's status. As blasGemm, the row-major C = op(A)·op(B) is
// the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ; the bias, one entry per row of the column-major Cᵀ, is
// one per column of C. The descriptors are made and destroyed here: the host's cost, which a
// recorded step does not pay again. With no algorithm given, cuBLASLt picks one by its
// heuristics, the same for the same problem, within the workspace of the cuBLAS handle.
func ltGemmBias(s *state, h ltHandle, dt dtype, g *GemmParams, bias *Buffer) int32 {
	dtype, compute := int32(cudaR32F), int32(cublasCompute32F)
	if dt == f64 {
		dtype, compute = cudaR64F, cublasCompute64F
	}
	var desc ltDesc
	if r := cublasLtMatmulDescCreate(&desc, compute, dtype); r != blasStatusSuccess {
		return r
	}
	defer cublasLtMatmulDescDestroy(desc)
	op := func(t bool) int32 {
		if t {
			return blasOpT
		}
		return blasOpN
	}
	ta, tb := op(g.TransB), op(g.TransA)
	epi, bp := ltEpilogueBias, bias.ptr
	for _, a := range []struct {
		attr int32
		p    unsafe.Pointer
		n    uintptr
	}{{ltDescTransA, unsafe.Pointer(&ta), 4}, {ltDescTransB, unsafe.Pointer(&tb), 4},
		{ltDescEpilogue, unsafe.Pointer(&epi), 4}, {ltDescBiasPointer, unsafe.Pointer(&bp), 8}} {
		if r := cublasLtMatmulDescSetAttribute(desc, a.attr, a.p, a.n); r != blasStatusSuccess {
			return r
		}
	}
	// Column-major: m = N, n = M, k = K; "A" is our B, "B" is our A, each stored as the
	// transpose of its row-major self.
	m, n, k := uint64(g.N), uint64(g.M), uint64(g.K)
	layouts := [3]struct {
		rows, cols uint64
		ld         int
	}{{m, k, g.LdB}, {k, n, g.LdA}, {m, n, g.LdC}}
	if g.TransB {
		layouts[0].rows, layouts[0].cols = k, m
	}
	if g.TransA {
		layouts[1].rows, layouts[1].cols = n, k
	}
	var l [3]ltLayout
	for i, x := range layouts {
		if r := cublasLtMatrixLayoutCreate(&l[i], dtype, x.rows, x.cols, int64(x.ld)); r != blasStatusSuccess {
			for _, y := range l[:i] {
				cublasLtMatrixLayoutDestroy(y)
			}
			return r
		}
	}
	defer func() {
		for _, y := range l {
			cublasLtMatrixLayoutDestroy(y)
		}
	}()
	var alpha, beta unsafe.Pointer
	a32, b32, a64, b64 := float32(1), float32(0), 1.0, 0.0
	if dt == f64 {
		alpha, beta = unsafe.Pointer(&a64), unsafe.Pointer(&b64)
	} else {
		alpha, beta = unsafe.Pointer(&a32), unsafe.Pointer(&b32)
	}
	work, bytes := s.blasWork, uintptr(0)
	if work != 0 {
		bytes = blasWorkspace
	}
	return cublasLtMatmul(h, desc, alpha, g.B.ptr, l[0], g.A.ptr, l[1], beta, g.C.ptr, l[2], g.C.ptr, l[2], nil, work, bytes, s.stream)
}
