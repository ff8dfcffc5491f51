package cuda

import (
	"errors"
	"os"
	"sync/atomic"
	"unsafe"
)

// pool is a caching allocator of device buffers. A call takes its buffers from the pool and
// gives them all back when it returns; a buffer given back is kept, under its size class, for
// the next request of that class. A training loop asks for the same sizes every step, so after
// the first step every request is served from the cache and device memory stops growing.
// When the driver runs out of memory the pool frees every cached buffer and tries once more.
type pool struct {
	free map[int64][]devptr // size class -> cached buffers
	held int64              // bytes allocated from the driver: in use plus cached
}

// poolBytes mirrors pool.held for MemoryInUse, which may run on any goroutine.
var poolBytes atomic.Int64

// poolOff (FLASHGORGON_CUDA_POOL=off) turns the cache off: every buffer is allocated at its
// exact size and freed when its call ends, so that compute-sanitizer's memcheck sees every
// access past the end of a buffer (a cached buffer of a larger size class would hide it).
var poolOff = os.Getenv("FLASHGORGON_CUDA_POOL") == "off"

// poison, set by tests, fills every output buffer with 0xFF bytes (NaN in float32 and float64)
// before the kernels run, so an element a kernel fails to write shows up as NaN.
var poison bool

// sizeClass rounds n up to a class: powers of two up to 1 MiB, then multiples of 1 MiB, so at
// most 1 MiB or half the request is wasted per buffer.
func sizeClass(n int64) int64 {
	if n <= 0 {
		n = 1
	}
	if n >= 1<<20 {
		return (n + 1<<20 - 1) &^ (1<<20 - 1)
	}
	c := int64(256)
	for c < n {
		c <<= 1
	}
	return c
}

// buf is a device buffer taken from the pool.
type buf struct {
	ptr  devptr
	size int64 // the size class
}

// get returns a buffer of at least n bytes.
func (p *pool) get(n int64) (buf, error) {
	c := sizeClass(n)
	if poolOff {
		c = max(n, 8)
	}
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		return buf{b, c}, nil
	}
	ptr, err := memAlloc(c)
	var de *drvError
	if errors.As(err, &de) && de.code == cuErrOutOfMemory && p.cached() > 0 {
		p.release()
		ptr, err = memAlloc(c)
	}
	if err != nil {
		return buf{}, err
	}
	p.held += c
	poolBytes.Store(p.held)
	return buf{ptr, c}, nil
}

// put gives b back to the cache.
func (p *pool) put(b buf) {
	if b.ptr == 0 {
		return
	}
	if poolOff {
		if memFree(b.ptr) == nil {
			p.held -= b.size
			poolBytes.Store(p.held)
		}
		return
	}
	if p.free == nil {
		p.free = map[int64][]devptr{}
	}
	p.free[b.size] = append(p.free[b.size], b.ptr)
}

func (p *pool) cached() int64 {
	var n int64
	for c, l := range p.free {
		n += c * int64(len(l))
	}
	return n
}

// release frees every cached buffer.
func (p *pool) release() {
	for c, l := range p.free {
		for _, b := range l {
			if memFree(b) == nil {
				p.held -= c
			}
		}
	}
	p.free = nil
	poolBytes.Store(p.held)
}

// MemoryInUse returns the bytes of device memory the package holds: the caching allocator's
// buffers (in use by a running call or a live Buffer, or cached for the next). It stays constant over the steps of a training loop once the first step ran.
func MemoryInUse() int64 { return poolBytes.Load() }

// scope collects the buffers of one call and gives them back when the call ends.
type scope struct {
	s    *state
	bufs []buf
}

func (sc *scope) alloc(n int64) (devptr, error) {
	b, err := sc.s.pool.get(n)
	if err != nil {
		return 0, err
	}
	sc.bufs = append(sc.bufs, b)
	return b.ptr, nil
}

// output allocates a buffer for a kernel's output (poisoned in tests).
func (sc *scope) output(n int64) (devptr, error) {
	d, err := sc.alloc(n)
	if err == nil && poison {
		err = memset8(d, 0xff, n)
	}
	return d, err
}

func (sc *scope) done() {
	for _, b := range sc.bufs {
		sc.s.pool.put(b)
	}
	sc.bufs = nil
}

// hostBytes returns the address and byte length of a []float32, []float64 or []int32.
func hostBytes(x any) (unsafe.Pointer, int64) {
	switch s := x.(type) {
	case []float32:
		return unsafe.Pointer(unsafe.SliceData(s)), int64(len(s)) * 4
	case []float64:
		return unsafe.Pointer(unsafe.SliceData(s)), int64(len(s)) * 8
	case []int32:
		return unsafe.Pointer(unsafe.SliceData(s)), int64(len(s)) * 4
	}
	panic("cuda: hostBytes: unexpected type") // unreachable: callers check the types first
}

// upload allocates a device buffer and copies the host slice x into it.
func (sc *scope) upload(x any, what string) (devptr, error) {
	p, n := hostBytes(x)
	d, err := sc.alloc(n)
	if err != nil || n == 0 {
		return d, err
	}
	return d, htod(d, p, n, what)
}

// download copies the device buffer d into the host slice x.
func download(x any, d devptr, what string) error {
	p, n := hostBytes(x)
	if n == 0 {
		return nil
	}
	return dtoh(p, d, n, what)
}
