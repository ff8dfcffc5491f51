package cuda

// The CUDA driver API, opened at run time without cgo. The binary does not link libcuda:
// openDriver (dlopen.go, through github.com/ebitengine/purego) loads libcuda.so.1, the
// driver's library, at first use and binds each entry point below to a Go function value of
// the C signature, so that a binary built with CGO_ENABLED=0 starts on a machine without a
// driver and runs its ops on the CPU there. gorgonia.org/cu is not used because its package
// initializer calls cuInit and exits the process when that fails (no device).
//
// The Go signatures follow cuda.h's C ABI exactly: CUresult, CUdevice and the enums are C int
// (int32), unsigned int is uint32, size_t is uintptr, CUdeviceptr is unsigned long long
// (uint64), and handles (CUcontext, CUmodule, CUfunction, CUevent, CUstream) are pointers the
// package only passes back, held as uintptr. Pointer arguments are Go pointers to memory the
// call fills or reads; purego keeps them alive for the call. cuLaunchKernel's parameter array,
// which holds a Go pointer, and the struct it points to are pinned with runtime.Pinner, and so
// is the JIT log buffer whose address cuModuleLoadDataEx's option values carry.
//
// Versioned symbols (_v2) are the ones the CUDA 11.8 header maps the plain names to; every
// later driver keeps exporting them.

import (
	"fmt"
	"runtime"
	"unsafe"
)

// driverLibrary is the file name of the CUDA driver's library.
const driverLibrary = "libcuda.so.1"

type (
	cuDevice    = int32
	cuContext   = uintptr
	cuModule    = uintptr
	cuFunction  = uintptr
	cuEvent     = uintptr
	cuStream    = uintptr
	cuGraph     = uintptr
	cuGraphExec = uintptr
	devptr      = uint64
)

// The driver's entry points, nil until openDriver binds them.
var (
	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(version *int32) int32
	cuDeviceGetCount          func(count *int32) int32
	cuDeviceGet               func(dev *cuDevice, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev cuDevice) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev cuDevice) int32
	cuDevicePrimaryCtxRetain  func(ctx *cuContext, dev cuDevice) int32
	cuDevicePrimaryCtxRelease func(dev cuDevice) int32
	cuDevicePrimaryCtxReset   func(dev cuDevice) int32
	cuCtxSetCurrent           func(ctx cuContext) int32
	cuCtxSynchronize          func() int32
	cuModuleLoadDataEx        func(m *cuModule, image *byte, nopts uint32, opts *int32, vals *uintptr) int32
	cuModuleGetFunction       func(f *cuFunction, m cuModule, name *byte) int32
	cuFuncSetAttribute        func(f cuFunction, attr int32, v int32) int32
	cuMemAlloc                func(p *devptr, n uintptr) int32
	cuMemFree                 func(p devptr) int32
	cuMemcpyHtoD              func(dst devptr, src unsafe.Pointer, n uintptr) int32
	cuMemcpyDtoH              func(dst unsafe.Pointer, src devptr, n uintptr) int32
	cuMemcpyDtoD              func(dst, src devptr, n uintptr) int32
	cuLaunchKernel            func(f cuFunction, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) int32
	cuEventCreate             func(e *cuEvent, flags uint32) int32
	cuEventDestroy            func(e cuEvent) int32
	cuEventRecord             func(e cuEvent, stream uintptr) int32
	cuEventSynchronize        func(e cuEvent) int32
	cuEventElapsedTime        func(ms *float32, start, end cuEvent) int32
	cuGetErrorName            func(code int32, name **byte) int32
	cuGetErrorString          func(code int32, msg **byte) int32
	cuCtxCreate               func(ctx *cuContext, flags uint32, dev cuDevice) int32 // optional
	cuCtxDestroy              func(ctx cuContext) int32                              // optional
	cuMemsetD8Async           func(dst devptr, v uint8, n uintptr, stream cuStream) int32
	cuMemGetInfo              func(free, total *uintptr) int32

	// Streams and graphs (graph.go), optional: without them a step is not recorded.
	cuStreamCreate              func(s *cuStream, flags uint32) int32
	cuStreamDestroy             func(s cuStream) int32
	cuStreamBeginCapture        func(s cuStream, mode int32) int32
	cuStreamEndCapture          func(s cuStream, g *cuGraph) int32
	cuGraphInstantiateWithFlags func(e *cuGraphExec, g cuGraph, flags uint64) int32
	cuGraphLaunch               func(e cuGraphExec, s cuStream) int32
	cuGraphExecDestroy          func(e cuGraphExec) int32
	cuGraphDestroy              func(g cuGraph) int32
)

// driverSymbol names one entry point: fn points to the function value bound to it. An optional
// one may be missing from the library.
type driverSymbol struct {
	fn       any
	name     string
	optional bool
}

// driverSymbols lists every entry point openDriver binds.
var driverSymbols = []driverSymbol{
	{&cuInit, "cuInit", false},
	{&cuDriverGetVersion, "cuDriverGetVersion", false},
	{&cuDeviceGetCount, "cuDeviceGetCount", false},
	{&cuDeviceGet, "cuDeviceGet", false},
	{&cuDeviceGetName, "cuDeviceGetName", false},
	{&cuDeviceGetAttribute, "cuDeviceGetAttribute", false},
	{&cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", false},
	{&cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", false},
	{&cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2", false},
	{&cuCtxSetCurrent, "cuCtxSetCurrent", false},
	{&cuCtxSynchronize, "cuCtxSynchronize", false},
	{&cuModuleLoadDataEx, "cuModuleLoadDataEx", false},
	{&cuModuleGetFunction, "cuModuleGetFunction", false},
	{&cuFuncSetAttribute, "cuFuncSetAttribute", false},
	{&cuMemAlloc, "cuMemAlloc_v2", false},
	{&cuMemFree, "cuMemFree_v2", false},
	{&cuMemcpyHtoD, "cuMemcpyHtoD_v2", false},
	{&cuMemcpyDtoH, "cuMemcpyDtoH_v2", false},
	{&cuMemcpyDtoD, "cuMemcpyDtoD_v2", false},
	{&cuLaunchKernel, "cuLaunchKernel", false},
	{&cuEventCreate, "cuEventCreate", false},
	{&cuEventDestroy, "cuEventDestroy_v2", false},
	{&cuEventRecord, "cuEventRecord", false},
	{&cuEventSynchronize, "cuEventSynchronize", false},
	{&cuEventElapsedTime, "cuEventElapsedTime", false},
	{&cuGetErrorName, "cuGetErrorName", false},
	{&cuGetErrorString, "cuGetErrorString", false},
	// A context of our own: the fallback when the primary context cannot be used again after
	// a kernel fault.
	{&cuCtxCreate, "cuCtxCreate_v2", true},
	{&cuCtxDestroy, "cuCtxDestroy_v2", true},
	{&cuMemsetD8Async, "cuMemsetD8Async", false},
	{&cuMemGetInfo, "cuMemGetInfo_v2", false},
	// Recording a training step (CUDA 11.4 and later drivers).
	{&cuStreamCreate, "cuStreamCreate", true},
	{&cuStreamDestroy, "cuStreamDestroy_v2", true},
	{&cuStreamBeginCapture, "cuStreamBeginCapture_v2", true},
	{&cuStreamEndCapture, "cuStreamEndCapture", true},
	{&cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", true},
	{&cuGraphLaunch, "cuGraphLaunch", true},
	{&cuGraphExecDestroy, "cuGraphExecDestroy", true},
	{&cuGraphDestroy, "cuGraphDestroy", true},
}

// CUresult and enum values of cuda.h that the package uses. TestDriverConstants checks them
// against a cuda.h when one is installed.
const (
	cuSuccess                  = 0
	cuErrOutOfMemory           = 2
	cuErrEccUncorrectable      = 214
	cuErrIllegalAddress        = 700
	cuErrLaunchTimeout         = 702
	cuErrAssert                = 710
	cuErrHardwareStackError    = 714
	cuErrIllegalInstruction    = 715
	cuErrMisalignedAddress     = 716
	cuErrInvalidAddressSpace   = 717
	cuErrInvalidPC             = 718
	cuErrLaunchFailed          = 719
	cuErrNotSupported          = 801
	attrMultiprocessors        = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrComputeMajor           = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeMinor           = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	attrSharedOptin            = 97 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	funcAttrMaxDynamicShared   = 8  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	jitErrorLogBuffer          = 5  // CU_JIT_ERROR_LOG_BUFFER
	jitErrorLogBufferSizeBytes = 6  // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	eventDefault               = 0  // CU_EVENT_DEFAULT
)

// drvError is a failed driver call: the CUresult and the call's description. The op that was
// running is added when the error leaves the package (see worker.run).
type drvError struct {
	code int
	call string
}

func (e *drvError) Error() string { return e.call + ": " + errorName(e.code) }

// check turns a CUresult into nil or a *drvError for call.
func check(r int32, call string, args ...any) error {
	if r == cuSuccess {
		return nil
	}
	if len(args) > 0 {
		call = fmt.Sprintf(call, args...)
	}
	return &drvError{code: int(r), call: call}
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte string for the driver.
func cString(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// errorName returns the CUresult's name, e.g. CUDA_ERROR_OUT_OF_MEMORY.
func errorName(code int) string {
	var name *byte
	if cuGetErrorName == nil || cuGetErrorName(int32(code), &name) != cuSuccess || name == nil {
		return fmt.Sprintf("CUresult(%d)", code)
	}
	return goString(name)
}

// errorString returns the driver's description of a CUresult.
func errorString(code int) string {
	var msg *byte
	if cuGetErrorString == nil || cuGetErrorString(int32(code), &msg) != cuSuccess || msg == nil {
		return "unknown error"
	}
	return goString(msg)
}

// sticky reports whether code leaves the context unusable, so that it must be reset before
// the next call (the kernel-fault errors of the driver API documentation).
func sticky(code int) bool {
	switch code {
	case cuErrIllegalAddress, cuErrLaunchFailed, cuErrAssert, cuErrHardwareStackError,
		cuErrIllegalInstruction, cuErrMisalignedAddress, cuErrInvalidAddressSpace,
		cuErrInvalidPC, cuErrLaunchTimeout, cuErrEccUncorrectable:
		return true
	}
	return false
}

// drvOpen loads the driver's library and binds every entry point (openDriver). It fails,
// naming the library, where there is none: no NVIDIA driver, or a build without the loader
// (the nocuda tag, or a platform other than linux/amd64 and linux/arm64). It binds all of
// driverSymbols or none.
func drvOpen() error { return openDriver(driverLibrary, driverSymbols) }

func drvInit() error { return check(cuInit(0), "cuInit") }

func drvVersion() (int, error) {
	var v int32
	err := check(cuDriverGetVersion(&v), "cuDriverGetVersion")
	return int(v), err
}

func deviceCount() (int, error) {
	var n int32
	err := check(cuDeviceGetCount(&n), "cuDeviceGetCount")
	return int(n), err
}

func deviceGet(i int) (cuDevice, error) {
	var d cuDevice
	err := check(cuDeviceGet(&d, int32(i)), "cuDeviceGet(%d)", i)
	return d, err
}

func deviceName(d cuDevice) (string, error) {
	var buf [256]byte
	if err := check(cuDeviceGetName(&buf[0], int32(len(buf)), d), "cuDeviceGetName"); err != nil {
		return "", err
	}
	return goString(&buf[0]), nil
}

func deviceAttr(d cuDevice, attr int) (int, error) {
	var v int32
	err := check(cuDeviceGetAttribute(&v, int32(attr), d), "cuDeviceGetAttribute(%d)", attr)
	return int(v), err
}

func ctxRetain(d cuDevice) (cuContext, error) {
	var c cuContext
	err := check(cuDevicePrimaryCtxRetain(&c, d), "cuDevicePrimaryCtxRetain")
	return c, err
}

func ctxRelease(d cuDevice) error {
	return check(cuDevicePrimaryCtxRelease(d), "cuDevicePrimaryCtxRelease")
}
func ctxReset(d cuDevice) error { return check(cuDevicePrimaryCtxReset(d), "cuDevicePrimaryCtxReset") }

func ctxCreate(d cuDevice) (cuContext, error) {
	var c cuContext
	if cuCtxCreate == nil {
		return 0, check(cuErrNotSupported, "cuCtxCreate (not in this driver)")
	}
	err := check(cuCtxCreate(&c, 0, d), "cuCtxCreate")
	return c, err
}

func ctxDestroy(c cuContext) error {
	if cuCtxDestroy == nil {
		return check(cuErrNotSupported, "cuCtxDestroy (not in this driver)")
	}
	return check(cuCtxDestroy(c), "cuCtxDestroy")
}

func ctxSetCurrent(c cuContext) error { return check(cuCtxSetCurrent(c), "cuCtxSetCurrent") }

func ctxSynchronize(what string) error {
	return check(cuCtxSynchronize(), "cuCtxSynchronize after %s", what)
}

// moduleLoad JIT-compiles a NUL-free PTX image; a JIT failure carries the compiler's log.
func moduleLoad(name, ptx string) (cuModule, error) {
	var m cuModule
	image := cString(ptx)
	const logSize = 1 << 14
	log := make([]byte, logSize)
	opts := [2]int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	// The option values are a void* array: the log buffer's address, and its size in a
	// pointer-sized slot (which the driver overwrites with the bytes it wrote). The array is
	// written as integers, so the log is pinned: the driver writes to it through the array.
	var pin runtime.Pinner
	pin.Pin(&log[0])
	defer pin.Unpin()
	vals := [2]uintptr{uintptr(unsafe.Pointer(&log[0])), logSize}
	r := cuModuleLoadDataEx(&m, image, uint32(len(opts)), &opts[0], &vals[0])
	runtime.KeepAlive(image)
	runtime.KeepAlive(log)
	if r != cuSuccess {
		return m, &drvError{code: int(r), call: fmt.Sprintf("cuModuleLoadDataEx(%s): JIT log: %q", name, goString(&log[0]))}
	}
	return m, nil
}

func moduleFunction(m cuModule, name string) (cuFunction, error) {
	var f cuFunction
	cname := cString(name)
	err := check(cuModuleGetFunction(&f, m, cname), "cuModuleGetFunction(%s)", name)
	runtime.KeepAlive(cname)
	return f, err
}

func funcSetMaxDynamicSmem(f cuFunction, bytes int, name string) error {
	return check(cuFuncSetAttribute(f, funcAttrMaxDynamicShared, int32(bytes)),
		"cuFuncSetAttribute(%s, max dynamic shared memory %d bytes)", name, bytes)
}

func memAlloc(n int64) (devptr, error) {
	var p devptr
	err := check(cuMemAlloc(&p, uintptr(n)), "cuMemAlloc(%d bytes)", n)
	return p, err
}

func memFree(p devptr) error { return check(cuMemFree(p), "cuMemFree") }

// htod copies n bytes from host memory at src (Go memory holding no pointers) to dst.
func htod(dst devptr, src unsafe.Pointer, n int64, what string) error {
	return check(cuMemcpyHtoD(dst, src, uintptr(n)), "cuMemcpyHtoD(%s, %d bytes)", what, n)
}

// dtoh copies n bytes from src to host memory at dst (Go memory holding no pointers).
func dtoh(dst unsafe.Pointer, src devptr, n int64, what string) error {
	return check(cuMemcpyDtoH(dst, src, uintptr(n)), "cuMemcpyDtoH(%s, %d bytes)", what, n)
}

// dtod copies n bytes between device buffers (ordered on the default stream).
func dtod(dst, src devptr, n int64, what string) error {
	return check(cuMemcpyDtoD(dst, src, uintptr(n)), "cuMemcpyDtoD(%s, %d bytes)", what, n)
}

// memset8 sets n bytes at dst to v, queued on the worker's stream (so that a recorded step
// records it).
func memset8(dst devptr, v byte, n int64) error {
	return check(cuMemsetD8Async(dst, v, uintptr(n), dev.stream), "cuMemsetD8Async(%d bytes)", n)
}

// launch starts kernel f on the worker's stream (the default stream, or the recording stream
// while a step is recorded, see Capture) with a 1-D block, a 3-D grid, dynamic shared
// memory smem and one by-value parameter: the params struct at params (Go memory holding no
// pointers, laid out as its kernels/params.h twin). The driver reads the parameter through
// the kernelParams array (one void* per kernel parameter) and copies it before
// cuLaunchKernel returns; the struct and the array, which holds a Go pointer, are pinned for
// the call.
func launch(f cuFunction, name string, grid [3]int, block, smem int, params unsafe.Pointer) error {
	args := new([1]unsafe.Pointer)
	var pin runtime.Pinner
	pin.Pin(params)
	pin.Pin(args)
	defer pin.Unpin()
	args[0] = params
	r := cuLaunchKernel(f, uint32(grid[0]), uint32(grid[1]), uint32(grid[2]), uint32(block), 1, 1, uint32(smem), dev.stream, &args[0], nil)
	return check(r, "cuLaunchKernel(%s, grid %v, block %d, shared %d bytes)", name, grid, block, smem)
}

func eventCreate() (cuEvent, error) {
	var e cuEvent
	err := check(cuEventCreate(&e, eventDefault), "cuEventCreate")
	return e, err
}

func eventDestroy(e cuEvent) error { return check(cuEventDestroy(e), "cuEventDestroy") }
func eventRecord(e cuEvent) error  { return check(cuEventRecord(e, 0), "cuEventRecord") }
func eventSync(e cuEvent) error    { return check(cuEventSynchronize(e), "cuEventSynchronize") }

func eventElapsed(a, b cuEvent) (float64, error) {
	var ms float32
	err := check(cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime")
	return float64(ms), err
}
