package machine

import (
	"fmt"
	"log"
	"os"
	"strings"
	"sync"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Buffer is memory on a backend's device holding Len elements of Dtype. A
// machine allocates every buffer it uses when it is made (Backend.Alloc) and
// gives them back when it is closed; a run allocates none.
type Buffer interface {
	Dtype() tensor.Dtype
	Len() int
}

// Operand is one node's value on the device: elements [Off, Off+size(Shape))
// of Buf, row-major and contiguous. A view (a reshape, a piece of a packed
// tensor) is an Operand over its input's buffer at an offset.
type Operand struct {
	Buf   Buffer
	Off   int
	Shape tensor.Shape
}

// Size is the number of elements of o (1 for a scalar).
func (o Operand) Size() int { return o.Shape.TotalSize() }

// Kernel runs one node's op on the device, reading its inputs' operands
// and writing its output's, all fixed when the kernel was bound.
type Kernel func() error

// KernelMaker binds a device implementation of an op kind to one node's
// operands, once, when the machine plans the graph (the place to check
// shapes and dtypes and precompute launch parameters). It returns a nil
// Kernel and no error when it does not implement this instance of the kind;
// the node then runs on the host.
type KernelMaker func(op gorgonia.Op, out Operand, in []Operand) (Kernel, error)

// Registry maps op kinds (OpKind) to a device's implementations.
type Registry map[string]KernelMaker

// Kinder is implemented by ops that name their kind themselves (nn's ops,
// which share one Go type, name their kernel).
type Kinder interface{ OpKind() string }

// OpKind is the kind of op that Registry keys on: op.OpKind() for a
// Kinder, otherwise the op's Go type as fmt's %T prints it without a
// pointer star ("gorgonia.elemBinOp", "softmax.fwdOp").
func OpKind(op gorgonia.Op) string {
	if k, ok := op.(Kinder); ok {
		return k.OpKind()
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", op), "*")
}

// Backend is a device that holds a machine's values and runs its ops.
//
// The machine needs four things from it: buffers (Alloc), host access to
// them (Host, or Upload and Download), and device implementations of op
// kinds (Kernels). A node whose op has a kernel runs on the device; any other
// runs its Gorgonia op on the host. On a backend whose memory is host memory
// (Host returns values) that costs nothing; on another the machine downloads
// the inputs into host copies planned once, runs the op there and uploads its
// result, and lists the node in Report.HostOps.
type Backend interface {
	// Name names the device in errors and reports ("cpu", "cuda:0").
	Name() string
	// Alloc returns a buffer of n elements of dt (contents unspecified).
	Alloc(dt tensor.Dtype, n int) (Buffer, error)
	// Host returns a host value of o's shape (a *tensor.Dense, or a
	// Gorgonia scalar for a scalar shape) sharing o's memory, or nil when
	// the device's memory is not host memory.
	Host(o Operand) gorgonia.Value
	// Upload copies the host value src into dst; Download copies src into
	// the host value dst. Sizes and dtypes match.
	Upload(dst Operand, src gorgonia.Value) error
	Download(dst gorgonia.Value, src Operand) error
	// Kernels returns the device's implementations by op kind (nil: none).
	Kernels() Registry
	// Close releases the device's resources; buffers are invalid after it.
	Close() error
}

// DeviceEnv is the environment variable that overrides the choice of
// device: "cpu", "cuda" or "cuda:N".
const DeviceEnv = "FLASHGORGON_DEVICE"

// Open returns the backend for device, one of "" (the default), "cpu",
// "cuda" and "cuda:N". When device is "" the environment variable
// FLASHGORGON_DEVICE, when set, names it: this is the one place where the
// machine reads it.
//
// The default is the GPU that package cuda uses (cuda.Enabled, with cuBLAS
// loaded: CUDA), else the CPU. "cpu" is the CPU. "cuda" or "cuda:N" (package
// cuda picks the device N from the same variable) is the GPU, an error when
// there is none if asked for by name, the CPU with a log line when it comes
// from the environment.
func Open(device string) (Backend, error) {
	fromEnv := device == ""
	if fromEnv {
		device = strings.TrimSpace(os.Getenv(DeviceEnv))
	}
	switch {
	case device == "cpu":
		return CPU(), nil
	case device == "":
		if b, err := CUDA(); err == nil {
			return b, nil
		}
		return CPU(), nil
	case device == "cuda" || strings.HasPrefix(device, "cuda:"):
		b, err := CUDA()
		if err == nil {
			return b, nil
		}
		if fromEnv {
			logNoCUDA(err)
			return CPU(), nil
		}
		return nil, err
	}
	if fromEnv {
		return nil, fmt.Errorf("machine: %s=%q is not cpu, cuda or cuda:N", DeviceEnv, device)
	}
	return nil, fmt.Errorf("machine: device %q is not cpu, cuda or cuda:N", device)
}

var noCUDAOnce sync.Once

// logNoCUDA says once per process why FLASHGORGON_DEVICE=cuda runs on the CPU.
func logNoCUDA(err error) {
	noCUDAOnce.Do(func() {
		log.Printf("flashgorgon: %s=%s: %v; the machine runs on the CPU", DeviceEnv, os.Getenv(DeviceEnv), err)
	})
}
