package cuda

import "fmt"

// Timer records marks on the stream the kernels run on (CUDA events) and measures the device
// time between them, without the host's launch overhead and without waiting for anything but
// the mark read. It is the one timing hook the package exports, for benchmarks outside it
// (cuda/cmd/attnbench): the events live in the worker's context, which only the package can
// reach. A Timer made before a kernel fault reset the context is refused, never used.
type Timer struct {
	ev  []cuEvent
	gen uint64 // the context generation the events belong to
}

// NewTimer returns a Timer with n marks, numbered 0 to n−1.
func NewTimer(n int) (*Timer, error) {
	if n < 1 {
		return nil, fmt.Errorf("cuda: NewTimer: %d marks, want at least 1", n)
	}
	if !Enabled() {
		return nil, ErrNoDevice
	}
	t := &Timer{}
	err := run("timer", func(s *state) error {
		t.gen = s.gen
		for range n {
			e, err := eventCreate()
			if err != nil {
				for _, e := range t.ev {
					eventDestroy(e)
				}
				return err
			}
			t.ev = append(t.ev, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// on runs f on the worker after checking that mark i exists and the context is t's.
func (t *Timer) on(op string, i int, f func() error) error {
	if i < 0 || i >= len(t.ev) {
		return fmt.Errorf("cuda: timer %s: mark %d of %d", op, i, len(t.ev))
	}
	return run("timer", func(s *state) error {
		if s.gen != t.gen {
			return fmt.Errorf("cuda: timer %s: made in a context lost since", op)
		}
		return f()
	})
}

// Mark records mark i after the work launched so far.
func (t *Timer) Mark(i int) error {
	return t.on("mark", i, func() error { return eventRecord(t.ev[i]) })
}

// Elapsed waits for mark j and returns the device time from mark i to mark j in milliseconds.
func (t *Timer) Elapsed(i, j int) (float64, error) {
	if i < 0 || i >= len(t.ev) {
		return 0, fmt.Errorf("cuda: timer elapsed: mark %d of %d", i, len(t.ev))
	}
	var ms float64
	err := t.on("elapsed", j, func() error {
		if err := eventSync(t.ev[j]); err != nil {
			return err
		}
		var err error
		ms, err = eventElapsed(t.ev[i], t.ev[j])
		return err
	})
	return ms, err
}

// Close destroys the events.
func (t *Timer) Close() error {
	if len(t.ev) == 0 {
		return nil
	}
	err := run("timer", func(s *state) error {
		if s.gen != t.gen {
			return nil // the context and its events are gone
		}
		for _, e := range t.ev {
			eventDestroy(e)
		}
		return nil
	})
	t.ev = nil
	return err
}
