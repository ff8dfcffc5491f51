package attention

import (
	"runtime"
	"sync"
)

// The kernels' memory between calls. A call needs large temporaries (K in
// transposed blocks; the backward's transposed Q and dO, its D and L·log₂e
// per row and its dQ partials: several times q's size) and a scratch per
// worker (tiles, row state, gemm workspaces). Allocated per call, the
// temporaries are zeroed by the allocator on the calling goroutine while
// the other cores wait (1–2 ms a call at N = 1024, H = 8). They are kept
// here instead: memory, never results; every buffer is fully written, or
// cleared by the unit that owns it, before it is read.

// bufSlot holds the large temporary buffer of one element type between
// calls. It is one slot, not a sync.Pool: the pool's per-P caches missed
// most of the time with 16 cores (the caller's goroutine moves between Ps
// from call to call and a pool only finds what was put back on its own P).
// Like a pool's contents, a buffer nobody took or gave back between two
// garbage collections is dropped (dropIdleBuffers).
type bufSlot struct {
	mu   sync.Mutex
	buf  any  // a []T, or nil
	used bool // taken or given back since the last collection
}

var bufSlots [2]bufSlot // float32, float64

// fwdPools and bwdPools hold the workers' scratch, each worker taking and
// giving back its own on the P it runs on.
var fwdPools, bwdPools [2]sync.Pool

// poolIndex is the index of T's slot and pools: 0 for float32, 1 for float64.
func poolIndex[T Float]() int {
	var z T
	return int(sizeOf(z) / 8)
}

// getBuf returns a slice of n elements of unspecified content: the slot's
// buffer when it is large enough, else a new one.
func getBuf[T Float](n int) []T {
	s := &bufSlots[poolIndex[T]()]
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buf.([]T); ok && cap(b) >= n {
		s.buf, s.used = nil, true
		return b[:n]
	}
	return make([]T, n)
}

// putBuf gives b back; the slot keeps the larger of b and what it holds.
// The caller must not use b afterwards.
func putBuf[T Float](b []T) {
	s := &bufSlots[poolIndex[T]()]
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.buf.([]T); !ok || cap(old) < cap(b) {
		s.buf = b[:cap(b)]
	}
	s.used = true
}

// dropIdleBuffers empties the slots that were not used since the previous
// collection; it runs after every collection (watchCollections).
func dropIdleBuffers() {
	for i := range bufSlots {
		s := &bufSlots[i]
		s.mu.Lock()
		if !s.used {
			s.buf = nil
		}
		s.used = false
		s.mu.Unlock()
	}
}

// gcSentinel is an object nothing refers to: its cleanup runs once the
// next collection has found it unreachable. It holds pointers and is
// larger than 16 bytes, so that the allocator does not batch it with other
// tiny objects (which could keep it alive).
type gcSentinel struct{ _ [4]*byte }

// watchCollections calls dropIdleBuffers after each garbage collection.
func watchCollections() {
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		dropIdleBuffers()
		watchCollections()
	}, struct{}{})
}

func init() { watchCollections() }
