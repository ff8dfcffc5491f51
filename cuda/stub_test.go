//go:build !gpu

package cuda

import (
	"errors"
	"testing"
)

// TestStub checks the CPU-only build: no device, and launchers that refuse with ErrNoDevice
// after validating their arguments.
func TestStub(t *testing.T) {
	if Enabled() || Device() != "cpu" || MemoryInUse() != 0 {
		t.Fatalf("stub: Enabled %v, Device %q, MemoryInUse %d", Enabled(), Device(), MemoryInUse())
	}
	p := attnOK(false)
	if err := AttentionForward(p); !errors.Is(err, ErrNoDevice) {
		t.Errorf("AttentionForward: %v, want ErrNoDevice", err)
	}
	if err := AttentionBackward(p); !errors.Is(err, ErrNoDevice) {
		t.Errorf("AttentionBackward: %v, want ErrNoDevice", err)
	}
	s := SoftmaxParams{Kind: Softmax, Outer: 1, N: 2, Inner: 1, X: make([]float32, 2), Y: make([]float32, 2), DY: make([]float32, 2), DX: make([]float32, 2)}
	if err := SoftmaxForward(s); !errors.Is(err, ErrNoDevice) {
		t.Errorf("SoftmaxForward: %v, want ErrNoDevice", err)
	}
	if err := SoftmaxBackward(s); !errors.Is(err, ErrNoDevice) {
		t.Errorf("SoftmaxBackward: %v, want ErrNoDevice", err)
	}
	p.Q = nil
	if err := AttentionForward(p); err == nil || errors.Is(err, ErrNoDevice) {
		t.Errorf("AttentionForward with nil Q: %v, want a validation error", err)
	}
}
