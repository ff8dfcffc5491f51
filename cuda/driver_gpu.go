//go:build gpu

package cuda

// The CUDA driver API, opened at run time. The binary does not link libcuda: dlopen finds
// libcuda.so.1 (the driver's library) at first use, so a gpu build starts on a machine without
// a driver and runs its ops on the CPU there. gorgonia.org/cu is not used because its package
// initializer calls cuInit and exits the process when that fails (no device), and linking it
// makes libcuda.so.1 a load-time dependency.
//
// Versioned symbols (_v2) are the ones the CUDA 11.8 header maps the plain names to; every
// later driver keeps exporting them.

/*
#cgo LDFLAGS: -ldl
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static struct {
	CUresult (*Init)(unsigned int);
	CUresult (*DriverGetVersion)(int*);
	CUresult (*DeviceGetCount)(int*);
	CUresult (*DeviceGet)(CUdevice*, int);
	CUresult (*DeviceGetName)(char*, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*DevicePrimaryCtxReset)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*ModuleLoadDataEx)(CUmodule*, const void*, unsigned int, CUjit_option*, void**);
	CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*MemAlloc)(CUdeviceptr*, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
	CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
	                         unsigned int, unsigned int, CUstream, void**, void**);
	CUresult (*EventCreate)(CUevent*, unsigned int);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
	CUresult (*GetErrorName)(CUresult, const char**);
	CUresult (*GetErrorString)(CUresult, const char**);
	CUresult (*CtxCreate)(CUcontext*, unsigned int, CUdevice); // optional
	CUresult (*CtxDestroy)(CUcontext);                         // optional
} fg_drv;

static char fg_open_err[512];

// fg_open loads libcuda.so.1 and resolves every entry point; it returns NULL or a message.
static const char* fg_open(void) {
	void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		snprintf(fg_open_err, sizeof fg_open_err, "%s", e ? e : "dlopen(libcuda.so.1) failed");
		return fg_open_err;
	}
#define FG_SYM(field, name)                                                               \
	if (!(*(void**)&fg_drv.field = dlsym(h, name))) {                                       \
		snprintf(fg_open_err, sizeof fg_open_err, "libcuda.so.1 has no symbol %s", name); \
		return fg_open_err;                                                               \
	}
	FG_SYM(Init, "cuInit")
	FG_SYM(DriverGetVersion, "cuDriverGetVersion")
	FG_SYM(DeviceGetCount, "cuDeviceGetCount")
	FG_SYM(DeviceGet, "cuDeviceGet")
	FG_SYM(DeviceGetName, "cuDeviceGetName")
	FG_SYM(DeviceGetAttribute, "cuDeviceGetAttribute")
	FG_SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	FG_SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
	FG_SYM(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2")
	FG_SYM(CtxSetCurrent, "cuCtxSetCurrent")
	FG_SYM(CtxSynchronize, "cuCtxSynchronize")
	FG_SYM(ModuleLoadDataEx, "cuModuleLoadDataEx")
	FG_SYM(ModuleGetFunction, "cuModuleGetFunction")
	FG_SYM(FuncSetAttribute, "cuFuncSetAttribute")
	FG_SYM(MemAlloc, "cuMemAlloc_v2")
	FG_SYM(MemFree, "cuMemFree_v2")
	FG_SYM(MemcpyHtoD, "cuMemcpyHtoD_v2")
	FG_SYM(MemcpyDtoH, "cuMemcpyDtoH_v2")
	FG_SYM(MemsetD8, "cuMemsetD8_v2")
	FG_SYM(LaunchKernel, "cuLaunchKernel")
	FG_SYM(EventCreate, "cuEventCreate")
	FG_SYM(EventDestroy, "cuEventDestroy_v2")
	FG_SYM(EventRecord, "cuEventRecord")
	FG_SYM(EventSynchronize, "cuEventSynchronize")
	FG_SYM(EventElapsedTime, "cuEventElapsedTime")
	FG_SYM(GetErrorName, "cuGetErrorName")
	FG_SYM(GetErrorString, "cuGetErrorString")
#undef FG_SYM
	// Optional: a context of our own, the fallback when the primary context cannot be used
	// again after a kernel fault.
	*(void**)&fg_drv.CtxCreate = dlsym(h, "cuCtxCreate_v2");
	*(void**)&fg_drv.CtxDestroy = dlsym(h, "cuCtxDestroy_v2");
	return NULL;
}

static CUresult fg_init(void) { return fg_drv.Init(0); }
static CUresult fg_driver_version(int* v) { return fg_drv.DriverGetVersion(v); }
static CUresult fg_device_count(int* n) { return fg_drv.DeviceGetCount(n); }
static CUresult fg_device_get(CUdevice* d, int i) { return fg_drv.DeviceGet(d, i); }
static CUresult fg_device_name(char* s, int n, CUdevice d) { return fg_drv.DeviceGetName(s, n, d); }
static CUresult fg_device_attr(int* v, int a, CUdevice d) { return fg_drv.DeviceGetAttribute(v, (CUdevice_attribute)a, d); }
static CUresult fg_ctx_retain(CUcontext* c, CUdevice d) { return fg_drv.DevicePrimaryCtxRetain(c, d); }
static CUresult fg_ctx_release(CUdevice d) { return fg_drv.DevicePrimaryCtxRelease(d); }
static CUresult fg_ctx_reset(CUdevice d) { return fg_drv.DevicePrimaryCtxReset(d); }
static CUresult fg_ctx_set_current(CUcontext c) { return fg_drv.CtxSetCurrent(c); }
static CUresult fg_ctx_create(CUcontext* c, CUdevice d) {
	return fg_drv.CtxCreate ? fg_drv.CtxCreate(c, 0, d) : CUDA_ERROR_NOT_SUPPORTED;
}
static CUresult fg_ctx_destroy(CUcontext c) { return fg_drv.CtxDestroy ? fg_drv.CtxDestroy(c) : CUDA_ERROR_NOT_SUPPORTED; }
static CUresult fg_ctx_synchronize(void) { return fg_drv.CtxSynchronize(); }
static CUresult fg_func_get(CUfunction* f, CUmodule m, const char* name) { return fg_drv.ModuleGetFunction(f, m, name); }
static CUresult fg_func_set_max_dynamic_smem(CUfunction f, int bytes) {
	return fg_drv.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}
static CUresult fg_mem_alloc(CUdeviceptr* p, size_t n) { return fg_drv.MemAlloc(p, n); }
static CUresult fg_mem_free(CUdeviceptr p) { return fg_drv.MemFree(p); }
static CUresult fg_htod(CUdeviceptr d, const void* h, size_t n) { return fg_drv.MemcpyHtoD(d, h, n); }
static CUresult fg_dtoh(void* h, CUdeviceptr d, size_t n) { return fg_drv.MemcpyDtoH(h, d, n); }
static CUresult fg_memset8(CUdeviceptr d, unsigned char v, size_t n) { return fg_drv.MemsetD8(d, v, n); }
static CUresult fg_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned smem, void* params) {
	// One kernel parameter: the params struct, which the driver copies by value at launch.
	void* args[1] = {params};
	return fg_drv.LaunchKernel(f, gx, gy, gz, bx, 1, 1, smem, 0, args, NULL);
}
static CUresult fg_event_create(CUevent* e) { return fg_drv.EventCreate(e, CU_EVENT_DEFAULT); }
static CUresult fg_event_destroy(CUevent e) { return fg_drv.EventDestroy(e); }
static CUresult fg_event_record(CUevent e) { return fg_drv.EventRecord(e, 0); }
static CUresult fg_event_sync(CUevent e) { return fg_drv.EventSynchronize(e); }
static CUresult fg_event_elapsed(float* ms, CUevent a, CUevent b) { return fg_drv.EventElapsedTime(ms, a, b); }

// fg_module_load JIT-compiles a PTX image; on failure the JIT's error log is copied to log.
static CUresult fg_module_load(CUmodule* m, const char* ptx, char* log, unsigned int logSize) {
	CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void* vals[2] = {log, (void*)(size_t)logSize};
	return fg_drv.ModuleLoadDataEx(m, ptx, 2, opts, vals);
}

static void fg_error_name(CUresult r, const char** name, const char** msg) {
	*name = NULL;
	*msg = NULL;
	if (fg_drv.GetErrorName) fg_drv.GetErrorName(r, name);
	if (fg_drv.GetErrorString) fg_drv.GetErrorString(r, msg);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// drvError is a failed driver call: the CUresult and the call's description. The op that was
// running is added when the error leaves the package (see worker.run).
type drvError struct {
	code int
	call string
}

func (e *drvError) Error() string { return e.call + ": " + errorName(e.code) }

// check turns a CUresult into nil or a *drvError for call.
func check(r C.CUresult, call string, args ...any) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	if len(args) > 0 {
		call = fmt.Sprintf(call, args...)
	}
	return &drvError{code: int(r), call: call}
}

// errorName returns the CUresult's name, e.g. CUDA_ERROR_OUT_OF_MEMORY.
func errorName(code int) string {
	var name, msg *C.char
	C.fg_error_name(C.CUresult(code), &name, &msg)
	if name == nil {
		return fmt.Sprintf("CUresult(%d)", code)
	}
	return C.GoString(name)
}

// errorString returns the driver's description of a CUresult.
func errorString(code int) string {
	var name, msg *C.char
	C.fg_error_name(C.CUresult(code), &name, &msg)
	if msg == nil {
		return "unknown error"
	}
	return C.GoString(msg)
}

// Codes the launcher acts on.
const (
	cuErrOutOfMemory = int(C.CUDA_ERROR_OUT_OF_MEMORY)
)

// sticky reports whether code leaves the context unusable, so that it must be reset before
// the next call (the kernel-fault errors of the driver API documentation).
func sticky(code int) bool {
	switch C.CUresult(code) {
	case C.CUDA_ERROR_ILLEGAL_ADDRESS, C.CUDA_ERROR_LAUNCH_FAILED, C.CUDA_ERROR_ASSERT,
		C.CUDA_ERROR_HARDWARE_STACK_ERROR, C.CUDA_ERROR_ILLEGAL_INSTRUCTION,
		C.CUDA_ERROR_MISALIGNED_ADDRESS, C.CUDA_ERROR_INVALID_ADDRESS_SPACE,
		C.CUDA_ERROR_INVALID_PC, C.CUDA_ERROR_LAUNCH_TIMEOUT, C.CUDA_ERROR_ECC_UNCORRECTABLE:
		return true
	}
	return false
}

// Device attributes the package reads.
const (
	attrComputeMajor    = int(C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
	attrComputeMinor    = int(C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
	attrSharedOptin     = int(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
	attrMultiprocessors = int(C.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
)

type (
	cuDevice   = C.CUdevice
	cuContext  = C.CUcontext
	cuModule   = C.CUmodule
	cuFunction = C.CUfunction
	cuEvent    = C.CUevent
	devptr     = uint64
)

func drvOpen() error {
	if msg := C.fg_open(); msg != nil {
		return fmt.Errorf("%s", C.GoString(msg))
	}
	return nil
}

func drvInit() error { return check(C.fg_init(), "cuInit") }

func drvVersion() (int, error) {
	var v C.int
	err := check(C.fg_driver_version(&v), "cuDriverGetVersion")
	return int(v), err
}

func deviceCount() (int, error) {
	var n C.int
	err := check(C.fg_device_count(&n), "cuDeviceGetCount")
	return int(n), err
}

func deviceGet(i int) (cuDevice, error) {
	var d C.CUdevice
	err := check(C.fg_device_get(&d, C.int(i)), "cuDeviceGet(%d)", i)
	return d, err
}

func deviceName(d cuDevice) (string, error) {
	var buf [256]C.char
	if err := check(C.fg_device_name(&buf[0], C.int(len(buf)), d), "cuDeviceGetName"); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func deviceAttr(d cuDevice, attr int) (int, error) {
	var v C.int
	err := check(C.fg_device_attr(&v, C.int(attr), d), "cuDeviceGetAttribute(%d)", attr)
	return int(v), err
}

func ctxRetain(d cuDevice) (cuContext, error) {
	var c C.CUcontext
	err := check(C.fg_ctx_retain(&c, d), "cuDevicePrimaryCtxRetain")
	return c, err
}

func ctxRelease(d cuDevice) error { return check(C.fg_ctx_release(d), "cuDevicePrimaryCtxRelease") }
func ctxReset(d cuDevice) error   { return check(C.fg_ctx_reset(d), "cuDevicePrimaryCtxReset") }
func ctxCreate(d cuDevice) (cuContext, error) {
	var c C.CUcontext
	err := check(C.fg_ctx_create(&c, d), "cuCtxCreate")
	return c, err
}
func ctxDestroy(c cuContext) error { return check(C.fg_ctx_destroy(c), "cuCtxDestroy") }
func ctxSetCurrent(c cuContext) error {
	return check(C.fg_ctx_set_current(c), "cuCtxSetCurrent")
}
func ctxSynchronize(what string) error {
	return check(C.fg_ctx_synchronize(), "cuCtxSynchronize after %s", what)
}

// moduleLoad JIT-compiles a NUL-free PTX image; a JIT failure carries the compiler's log.
func moduleLoad(name, ptx string) (cuModule, error) {
	var m C.CUmodule
	cptx := C.CString(ptx)
	defer C.free(unsafe.Pointer(cptx))
	const logSize = 1 << 14
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	if r := C.fg_module_load(&m, cptx, log, logSize); r != C.CUDA_SUCCESS {
		return m, &drvError{code: int(r), call: fmt.Sprintf("cuModuleLoadDataEx(%s): JIT log: %q", name, C.GoString(log))}
	}
	return m, nil
}

func moduleFunction(m cuModule, name string) (cuFunction, error) {
	var f C.CUfunction
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	err := check(C.fg_func_get(&f, m, cname), "cuModuleGetFunction(%s)", name)
	return f, err
}

func funcSetMaxDynamicSmem(f cuFunction, bytes int, name string) error {
	return check(C.fg_func_set_max_dynamic_smem(f, C.int(bytes)), "cuFuncSetAttribute(%s, max dynamic shared memory %d bytes)", name, bytes)
}

func memAlloc(n int64) (devptr, error) {
	var p C.CUdeviceptr
	err := check(C.fg_mem_alloc(&p, C.size_t(n)), "cuMemAlloc(%d bytes)", n)
	return devptr(p), err
}

func memFree(p devptr) error { return check(C.fg_mem_free(C.CUdeviceptr(p)), "cuMemFree") }

// htod copies n bytes from host memory at src (Go memory holding no pointers) to dst.
func htod(dst devptr, src unsafe.Pointer, n int64, what string) error {
	return check(C.fg_htod(C.CUdeviceptr(dst), src, C.size_t(n)), "cuMemcpyHtoD(%s, %d bytes)", what, n)
}

// dtoh copies n bytes from src to host memory at dst (Go memory holding no pointers).
func dtoh(dst unsafe.Pointer, src devptr, n int64, what string) error {
	return check(C.fg_dtoh(dst, C.CUdeviceptr(src), C.size_t(n)), "cuMemcpyDtoH(%s, %d bytes)", what, n)
}

func memset8(dst devptr, v byte, n int64) error {
	return check(C.fg_memset8(C.CUdeviceptr(dst), C.uchar(v), C.size_t(n)), "cuMemsetD8(%d bytes)", n)
}

// launch starts kernel f on the default stream with a 1-D block, a 3-D grid, dynamic shared
// memory smem and one by-value parameter: the struct at params (Go memory holding no
// pointers; the driver copies it before launch returns).
func launch(f cuFunction, name string, grid [3]int, block, smem int, params unsafe.Pointer) error {
	r := C.fg_launch(f, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]), C.uint(block), C.uint(smem), params)
	return check(r, "cuLaunchKernel(%s, grid %v, block %d, shared %d bytes)", name, grid, block, smem)
}

func eventCreate() (cuEvent, error) {
	var e C.CUevent
	err := check(C.fg_event_create(&e), "cuEventCreate")
	return e, err
}

func eventDestroy(e cuEvent) error { return check(C.fg_event_destroy(e), "cuEventDestroy") }
func eventRecord(e cuEvent) error  { return check(C.fg_event_record(e), "cuEventRecord") }
func eventSync(e cuEvent) error    { return check(C.fg_event_sync(e), "cuEventSynchronize") }

func eventElapsed(a, b cuEvent) (float64, error) {
	var ms C.float
	err := check(C.fg_event_elapsed(&ms, a, b), "cuEventElapsedTime")
	return float64(ms), err
}
