package machine

import (
	"fmt"
	"unsafe"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// elem is the set of element types the machine holds in its buffers.
type elem interface {
	~float32 | ~float64 | ~int | ~int64 | ~int32
}

// supported reports whether the machine can hold values of dtype dt.
func supported(dt tensor.Dtype) bool {
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int, tensor.Int64, tensor.Int32:
		return true
	}
	return false
}

// cpuBackend is the host: buffers are Go slices, Host views them without
// copying, and every op runs as its Gorgonia op (DoInto or UsePreallocDo
// into the planned buffer) except the Gorgonia ops of its registry
// (cpuKernels), which read and write the buffers directly.
type cpuBackend struct{}

// CPU returns the host backend.
func CPU() Backend { return cpuBackend{} }

// hostBuffer is a CPU buffer: data is a []T of the dtype's element type.
type hostBuffer struct {
	dt   tensor.Dtype
	data any
	n    int
}

func (b *hostBuffer) Dtype() tensor.Dtype { return b.dt }
func (b *hostBuffer) Len() int            { return b.n }

func (cpuBackend) Name() string      { return "cpu" }
func (cpuBackend) Kernels() Registry { return cpuKernels() }
func (cpuBackend) Close() error      { return nil }

func (cpuBackend) Alloc(dt tensor.Dtype, n int) (Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("machine: cpu: a buffer of %d elements of %v", n, dt)
	}
	var data any
	switch dt {
	case tensor.Float32:
		data = make([]float32, n)
	case tensor.Float64:
		data = make([]float64, n)
	case tensor.Int:
		data = make([]int, n)
	case tensor.Int64:
		data = make([]int64, n)
	case tensor.Int32:
		data = make([]int32, n)
	default:
		return nil, fmt.Errorf("machine: cpu: dtype %v is not supported", dt)
	}
	return &hostBuffer{dt: dt, data: data, n: n}, nil
}

func (cpuBackend) Host(o Operand) gorgonia.Value {
	b, ok := o.Buf.(*hostBuffer)
	if !ok {
		return nil
	}
	switch d := b.data.(type) {
	case []float32:
		return hostValue[float32, gorgonia.F32](d, o)
	case []float64:
		return hostValue[float64, gorgonia.F64](d, o)
	case []int:
		return hostValue[int, gorgonia.I](d, o)
	case []int64:
		return hostValue[int64, gorgonia.I64](d, o)
	case []int32:
		return hostValue[int32, gorgonia.I32](d, o)
	}
	return nil
}

// hostValue views elements [o.Off, o.Off+size) of d as a tensor of o's
// shape, or as the Gorgonia scalar S (a named type of T) at d[o.Off].
func hostValue[T elem, S elem](d []T, o Operand) gorgonia.Value {
	if o.Shape.IsScalar() {
		// S is a defined type over T (gorgonia.F32 over float32, …): the same
		// memory layout, so the scalar aliases the buffer element.
		return any((*S)(unsafe.Pointer(&d[o.Off]))).(gorgonia.Value)
	}
	n := o.Size()
	return tensor.New(tensor.WithShape(o.Shape.Clone()...), tensor.WithBacking(d[o.Off:o.Off+n:o.Off+n]))
}

func (c cpuBackend) Upload(dst Operand, src gorgonia.Value) error {
	v := c.Host(dst)
	if v == nil {
		return fmt.Errorf("machine: cpu: upload into a %T", dst.Buf)
	}
	return copyValue(v, src)
}

func (c cpuBackend) Download(dst gorgonia.Value, src Operand) error {
	v := c.Host(src)
	if v == nil {
		return fmt.Errorf("machine: cpu: download from a %T", src.Buf)
	}
	return copyValue(dst, v)
}

// copyValue copies the elements of src into dst, row-major; both hold the
// same number of elements of one dtype. dst is a contiguous *tensor.Dense
// or a Gorgonia scalar; src any tensor (views included) or scalar.
func copyValue(dst, src gorgonia.Value) error {
	if dst.Dtype() != src.Dtype() || size(dst.Shape()) != size(src.Shape()) {
		return fmt.Errorf("cannot copy a %v value of shape %v into a %v value of shape %v",
			src.Dtype(), src.Shape(), dst.Dtype(), dst.Shape())
	}
	switch dst.Dtype() {
	case tensor.Float32:
		return copyAs[float32](dst, src)
	case tensor.Float64:
		return copyAs[float64](dst, src)
	case tensor.Int:
		return copyAs[int](dst, src)
	case tensor.Int64:
		return copyAs[int64](dst, src)
	case tensor.Int32:
		return copyAs[int32](dst, src)
	}
	return fmt.Errorf("cannot copy values of dtype %v", dst.Dtype())
}

// size is the number of elements of a value of shape s (1 for a scalar).
func size(s tensor.Shape) int {
	if s.IsScalar() {
		return 1
	}
	return s.TotalSize()
}

func copyAs[T elem](dst, src gorgonia.Value) error {
	s, err := elements[T](src)
	if err != nil {
		return err
	}
	switch d := dst.(type) {
	case *tensor.Dense:
		if d.IsMaterializable() || d.IsScalar() {
			return fmt.Errorf("cannot copy into a view or scalar tensor of shape %v", d.Shape())
		}
		copy(d.Data().([]T), s)
		return nil
	case *gorgonia.F32:
		*d = gorgonia.F32(s[0])
	case *gorgonia.F64:
		*d = gorgonia.F64(s[0])
	case *gorgonia.I:
		*d = gorgonia.I(s[0])
	case *gorgonia.I64:
		*d = gorgonia.I64(s[0])
	case *gorgonia.I32:
		*d = gorgonia.I32(s[0])
	default:
		return fmt.Errorf("cannot copy into a %T", dst)
	}
	return nil
}

// elements returns the elements of v of type T in row-major order: a
// tensor's backing slice (a copy for a view or a scalar tensor), or a
// scalar as one element.
func elements[T elem](v gorgonia.Value) ([]T, error) {
	switch x := v.(type) {
	case *tensor.Dense:
		if x.IsMaterializable() {
			x = x.Materialize().(*tensor.Dense)
		}
		switch d := x.Data().(type) {
		case []T:
			return d, nil
		case T:
			return []T{d}, nil
		}
	case *gorgonia.F32:
		return []T{T(*x)}, nil
	case *gorgonia.F64:
		return []T{T(*x)}, nil
	case *gorgonia.I:
		return []T{T(*x)}, nil
	case *gorgonia.I64:
		return []T{T(*x)}, nil
	case *gorgonia.I32:
		return []T{T(*x)}, nil
	}
	return nil, fmt.Errorf("cannot read a %T of dtype %v", v, v.Dtype())
}
