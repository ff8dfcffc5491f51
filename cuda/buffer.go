package cuda

import (
	"fmt"
	"unsafe"
)

// Device-resident values: a Buffer is device memory that outlives the call that made it, so
// that a training step can keep every parameter, activation, gradient and optimizer moment on
// the device and let the host see a value only when it asks (Download). A graph machine plans
// its buffers once (Alloc), then runs every step on them with the launchers of nn.go and
// blas.go, which allocate nothing and do not wait for the device: the kernels of one step run
// in order on the worker's stream, and Download or Synchronize waits for them.

// DType is the element type of a Buffer.
type DType int32

// The element types a Buffer holds.
const (
	Float32 DType = iota
	Float64
	Int32
)

func (t DType) String() string {
	switch t {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int32:
		return "int32"
	}
	return fmt.Sprintf("DType(%d)", int32(t))
}

// Size returns the bytes of one element.
func (t DType) Size() int {
	if t == Float64 {
		return 8
	}
	return 4
}

func (t DType) valid() bool { return t >= Float32 && t <= Int32 }

// float reports whether t is a floating-point type, and the kernels' element type for it.
func (t DType) float() (dtype, bool) {
	switch t {
	case Float32:
		return f32, true
	case Float64:
		return f64, true
	}
	return 0, false
}

// Buffer is n elements of one DType in device memory. Alloc makes one (from the package's
// caching allocator) and Free gives it back; View makes a Buffer that shares part of another's
// memory. A Buffer belongs to the CUDA context it was allocated in: after a kernel fault made
// the package reset the context, every older Buffer is invalid and each use returns an error
// (its memory went with the context). The methods may be called from any goroutine; the
// memory operations are ordered with the kernels on the device's one stream.
type Buffer struct {
	ptr   devptr
	n     int
	dt    DType
	gen   uint64 // the context generation it belongs to (state.gen)
	owner *buf   // the pool allocation; nil for a view or an empty buffer
	freed bool
	view  bool
}

// Len returns the number of elements.
func (b *Buffer) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// DType returns the element type.
func (b *Buffer) DType() DType { return b.dt }

// Bytes returns the size in bytes.
func (b *Buffer) Bytes() int64 {
	if b == nil {
		return 0
	}
	return int64(b.n) * int64(b.dt.Size())
}

func (b *Buffer) String() string {
	if b == nil {
		return "<nil buffer>"
	}
	return fmt.Sprintf("%s[%d]", b.dt, b.n)
}

// Alloc returns a Buffer of n ≥ 0 elements of type dt, taken from the caching allocator
// (uninitialized; n = 0 allocates nothing). It returns ErrNoDevice without a device.
func Alloc(dt DType, n int) (*Buffer, error) {
	if !dt.valid() {
		return nil, fmt.Errorf("cuda: Alloc: element type %v is not Float32, Float64 or Int32", dt)
	}
	if n < 0 || n > 1<<40 {
		return nil, fmt.Errorf("cuda: Alloc: %d elements of %v (want 0 ≤ n ≤ 2^40)", n, dt)
	}
	if !Enabled() {
		return nil, ErrNoDevice
	}
	b := &Buffer{n: n, dt: dt}
	err := run("alloc", func(s *state) error {
		b.gen = s.gen
		if n == 0 {
			return nil
		}
		nb := b.Bytes()
		a, err := s.pool.get(nb)
		if err != nil {
			return err
		}
		if poison {
			if err := memset8(a.ptr, 0xff, nb); err != nil {
				s.pool.put(a)
				return err
			}
		}
		b.ptr, b.owner = a.ptr, &a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: Alloc(%v, %d): %w", dt, n, err)
	}
	return b, nil
}

// Free gives the memory back to the caching allocator. Freeing a view, or a Buffer twice, is
// an error; freeing a Buffer whose context was reset after a fault does nothing (the memory
// went with the context).
func (b *Buffer) Free() error {
	if b == nil {
		return fmt.Errorf("cuda: Free: nil buffer")
	}
	if b.view {
		return fmt.Errorf("cuda: Free: %v is a view; free the buffer it views", b)
	}
	if b.freed {
		return fmt.Errorf("cuda: Free: %v was freed already", b)
	}
	b.freed = true
	if b.owner == nil || !Enabled() {
		return nil
	}
	return run("free", func(s *state) error {
		if b.gen == s.gen {
			s.pool.put(*b.owner)
		}
		b.owner = nil
		return nil
	})
}

// View returns the n elements of b from element off on, as a Buffer sharing b's memory (valid
// while b is). A view cannot be freed.
func (b *Buffer) View(off, n int) (*Buffer, error) {
	if b == nil {
		return nil, fmt.Errorf("cuda: View: nil buffer")
	}
	if off < 0 || n < 0 || off > b.n-n {
		return nil, fmt.Errorf("cuda: View(%d, %d) of %v: outside [0, %d)", off, n, b, b.n)
	}
	return &Buffer{ptr: b.ptr + devptr(off*b.dt.Size()), n: n, dt: b.dt, gen: b.gen, view: true}, nil
}

// usable returns an error unless b can be used in context s (named what in the error).
func (b *Buffer) usable(s *state, what string) error {
	switch {
	case b == nil:
		return fmt.Errorf("%s is a nil buffer", what)
	case b.freed:
		return fmt.Errorf("%s (%v) was freed", what, b)
	case b.gen != s.gen:
		return fmt.Errorf("%s (%v) belongs to a CUDA context that was reset after a fault", what, b)
	}
	return nil
}

// hostSlice returns the element type, length and address of a []float32, []float64 or []int32.
func hostSlice(x any) (DType, int, unsafe.Pointer, bool) {
	switch s := x.(type) {
	case []float32:
		return Float32, len(s), unsafe.Pointer(unsafe.SliceData(s)), true
	case []float64:
		return Float64, len(s), unsafe.Pointer(unsafe.SliceData(s)), true
	case []int32:
		return Int32, len(s), unsafe.Pointer(unsafe.SliceData(s)), true
	}
	return 0, 0, nil, false
}

// checkHost checks that host slice x matches b in element type and length.
func (b *Buffer) checkHost(op string, x any) (unsafe.Pointer, error) {
	if b == nil {
		return nil, fmt.Errorf("cuda: %s: nil buffer", op)
	}
	dt, n, p, ok := hostSlice(x)
	switch {
	case !ok:
		return nil, fmt.Errorf("cuda: %s: host value is %T, want []%v for buffer %v", op, x, b.dt, b)
	case dt != b.dt:
		return nil, fmt.Errorf("cuda: %s: host slice is []%v, buffer is %v", op, dt, b)
	case n != b.n:
		return nil, fmt.Errorf("cuda: %s: host slice has %d elements, buffer %v has %d", op, n, b, b.n)
	}
	return p, nil
}

// Upload copies the host slice x ([]float32, []float64 or []int32 of b's type and length)
// into b. It returns when x may be reused.
func (b *Buffer) Upload(x any) error {
	p, err := b.checkHost("Upload", x)
	if err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("upload", func(s *state) error {
		if err := b.usable(s, "the destination"); err != nil {
			return fmt.Errorf("cuda: Upload: %w", err)
		}
		if b.n == 0 {
			return nil
		}
		return htod(b.ptr, p, b.Bytes(), b.String())
	})
}

// Download copies b into the host slice x (of b's type and length), after every kernel
// launched before it has finished.
func (b *Buffer) Download(x any) error {
	p, err := b.checkHost("Download", x)
	if err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("download", func(s *state) error {
		if err := b.usable(s, "the source"); err != nil {
			return fmt.Errorf("cuda: Download: %w", err)
		}
		if b.n == 0 {
			return nil
		}
		return dtoh(p, b.ptr, b.Bytes(), b.String())
	})
}

// Zero sets every element of b to zero (all bits clear: 0 in every type).
func (b *Buffer) Zero() error {
	if b == nil {
		return fmt.Errorf("cuda: Zero: nil buffer")
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("zero", func(s *state) error {
		if err := b.usable(s, "the buffer"); err != nil {
			return fmt.Errorf("cuda: Zero: %w", err)
		}
		if b.n == 0 {
			return nil
		}
		return memset8(b.ptr, 0, b.Bytes())
	})
}

// Copy copies src into dst, which must have src's element type and length (views of larger
// buffers copy parts). Overlapping views are not allowed.
func Copy(dst, src *Buffer) error {
	if dst == nil || src == nil {
		return fmt.Errorf("cuda: Copy: dst %v or src %v is nil", dst, src)
	}
	if dst.dt != src.dt || dst.n != src.n {
		return fmt.Errorf("cuda: Copy: dst %v and src %v differ in type or length", dst, src)
	}
	if dst.n > 0 && dst.ptr < src.ptr+devptr(src.Bytes()) && src.ptr < dst.ptr+devptr(dst.Bytes()) && dst.ptr != 0 {
		return fmt.Errorf("cuda: Copy: dst %v and src %v overlap", dst, src)
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("copy", func(s *state) error {
		if err := dst.usable(s, "dst"); err != nil {
			return fmt.Errorf("cuda: Copy: %w", err)
		}
		if err := src.usable(s, "src"); err != nil {
			return fmt.Errorf("cuda: Copy: %w", err)
		}
		if dst.n == 0 {
			return nil
		}
		return dtod(dst.ptr, src.ptr, dst.Bytes(), dst.String())
	})
}

// Synchronize waits until every kernel and copy launched so far has finished and returns the
// first error the device reported (a kernel fault surfaces here or at the next Download).
func Synchronize() error {
	if !Enabled() {
		return ErrNoDevice
	}
	return run("synchronize", func(s *state) error { return ctxSynchronize("the launched kernels") })
}
