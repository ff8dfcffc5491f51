// Package cuda runs flashgorgon's softmax-family and attention ops on NVIDIA GPUs.
//
// Every build holds the CUDA backend, and none needs cgo, CUDA headers or a build tag: the
// default build (CGO_ENABLED=0 included) opens the driver at run time and runs the ops on the
// CPU where there is none. Without a device Enabled reports false, Device reports "cpu" and
// every launcher returns ErrNoDevice. The build tag nocuda leaves the driver loader out (the
// package then never finds a device and the binary does not import purego; never use the tag
// cuda: it switches on Gorgonia's cuDNN engine).
//
//   - Kernels: CUDA C++ under kernels/ (softmax.cu, attention_fwd.cu,
//     attention_bwd_preprocess.cu, attention_bwd.cu), compiled to PTX for compute_80 by
//     go generate (see internal/genptx) and embedded in the binary, so users need no nvcc; the
//     driver compiles the PTX for the GPU at first use (Ampere, Hopper and newer).
//   - Driver: libcuda.so.1 is opened at run time with dlopen, through
//     github.com/ebitengine/purego, which calls C functions without cgo (driver.go binds
//     each entry point to a Go function of its C signature). A binary therefore starts, and
//     runs on the CPU, on a machine without a driver or a GPU. On linux/amd64 and linux/arm64
//     only; other platforms build the package without the loader. A CGO_ENABLED=0 binary that
//     imports purego is dynamically linked against the C library (glibc's libc and libdl),
//     which dlopen needs; build with -tags nocuda for a fully static binary.
//   - Selection: at first use the package looks for a CUDA device. Found, Enabled reports true
//     and the ops run their kernels; not found, or FLASHGORGON_DEVICE=cpu set, Enabled reports
//     false and the ops run their CPU path. FLASHGORGON_DEVICE=cuda:N picks device N. Device
//     names the active device and one log line at first use says which path was chosen.
//   - Threads: every CUDA call runs on one goroutine locked to one OS thread (CUDA contexts
//     belong to a thread); launchers called from many goroutines queue there.
//   - Memory: device buffers come from a caching allocator and go back to it after each call,
//     so a training loop does not grow device memory from step to step. The log-sum-exp
//     written by AttentionForward stays on the device and AttentionBackward reuses it when the
//     host copy it is given is unchanged (compared bit for bit).
//   - Errors: CUDA failures (out of memory, launch failure, a kernel fault) come back as *Error
//     values naming the op, the call and the CUDA error; after a fault the context is reset and
//     later calls work again.
//
// The softmax and attention launchers take host slices ([]float32 or []float64, one type per
// call), copy them to the device, run the kernels and copy the results back. For training
// with every value on the device, Buffer holds device memory (Alloc, Upload, Download), Gemm
// multiplies matrices in Buffers with cuBLAS (opened at run time like the driver), and the
// launchers of nn.go and group.go run nn's layers, loss and optimizer on Buffers without
// copies or waits (see README.md).
package cuda

//go:generate go run ./internal/genptx
