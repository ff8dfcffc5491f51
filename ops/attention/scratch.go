package attention

import (
	"sync"
	"unsafe"
	"weak"
)

// The kernels' memory between calls. A call needs large temporaries (the
// backward's transposed Q and dO, its D and L·log₂e per row and its dQ
// partials: several times q's size) and a scratch per worker (tiles, row
// state, the forward's block of Kᵀ, gemm workspaces). Allocated per call, the
// temporaries are zeroed by the allocator on the calling goroutine while
// the other cores wait (1–2 ms a call at N = 1024, H = 8). They are kept
// here instead: memory, never results; every buffer is fully written, or
// cleared by the unit that owns it, before it is read.

// bufSlot holds the large temporary buffer of one element type between
// calls. A sync.Pool alone missed most calls with 16 cores: the caller's
// goroutine moves between Ps from call to call, and a pool only finds what
// was put back on its own P. So the slot points to the buffer weakly, for
// any P to find, and a pool of holders keeps it alive: like a pool's
// contents, a buffer that no call gave back for two garbage collections is
// freed, and the weak pointer then reads nil.
type bufSlot struct {
	mu   sync.Mutex
	ptr  any       // weak.Pointer[T] to element 0 of the buffer, or nil
	n    int       // the buffer's capacity
	keep sync.Pool // *holder[T] values that keep the buffer alive
}

// holder keeps a buffer reachable while a bufSlot's pool holds it.
type holder[T Float] struct{ b []T }

var bufSlots [2]bufSlot // float32, float64

// fwdPools and bwdPools hold the workers' scratch, each worker taking and
// giving back its own on the P it runs on.
var fwdPools, bwdPools [2]sync.Pool

// poolIndex is the index of T's slot and pools: 0 for float32, 1 for float64.
func poolIndex[T Float]() int {
	var z T
	return int(sizeOf(z) / 8)
}

// getBuf returns a slice of n elements of unspecified content: the kept
// buffer when it is alive and large enough, else a new one.
func getBuf[T Float](n int) []T { return slotGet[T](&bufSlots[poolIndex[T]()], n) }

// putBuf gives b back; the caller must not use it afterwards.
func putBuf[T Float](b []T) { slotPut(&bufSlots[poolIndex[T]()], b) }

func slotGet[T Float](s *bufSlot, n int) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wp, ok := s.ptr.(weak.Pointer[T]); ok && s.n >= n {
		if p := wp.Value(); p != nil {
			s.ptr = nil // taken: no other call may use it until it is back
			return unsafe.Slice(p, s.n)[:n]
		}
	}
	return make([]T, n)
}

// slotPut keeps b for the next call unless the slot holds a larger live
// buffer.
func slotPut[T Float](s *bufSlot, b []T) {
	b = b[:cap(b)]
	if len(b) == 0 {
		return
	}
	s.mu.Lock()
	if wp, ok := s.ptr.(weak.Pointer[T]); ok && s.n >= len(b) && wp.Value() != nil {
		s.mu.Unlock()
		return
	}
	s.ptr, s.n = weak.Make(&b[0]), len(b)
	s.mu.Unlock()
	h, _ := s.keep.Get().(*holder[T])
	if h == nil {
		h = new(holder[T])
	}
	h.b = b
	s.keep.Put(h)
}
