// Package cuda runs flashgorgon's softmax-family and attention ops on NVIDIA GPUs.
//
// The package is importable in every build. Without the build tag gpu it is a CPU-only stub:
// Enabled reports false, Device reports "cpu" and every launcher returns ErrNoDevice, and it
// needs neither cgo nor CUDA. With the tag gpu (never cuda: that tag switches on Gorgonia's
// cuDNN engine) it holds the CUDA backend:
//
//   - Kernels: CUDA C++ under kernels/ (softmax.cu, attention_fwd.cu,
//     attention_bwd_preprocess.cu, attention_bwd.cu), compiled to PTX for compute_80 by
//     go generate (see internal/genptx) and embedded in the binary, so users need no nvcc; the
//     driver compiles the PTX for the GPU at first use (Ampere, Hopper and newer).
//   - Driver: libcuda.so.1 is opened at run time (dlopen), so a gpu binary starts, and runs on
//     the CPU, on a machine without a driver or a GPU.
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
// The launchers take host slices ([]float32 or []float64, one type per call), copy them to the
// device, run the kernels and copy the results back.
package cuda

//go:generate go run ./internal/genptx
