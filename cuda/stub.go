//go:build !gpu

package cuda

// Enabled reports whether the ops run on a CUDA device. Without the gpu build tag it is
// always false.
func Enabled() bool { return false }

// Device names the device the ops run on: "cpu" without the gpu build tag.
func Device() string { return "cpu" }

// MemoryInUse returns the bytes of device memory the package holds (buffers in use and cached
// for reuse): 0 without the gpu build tag.
func MemoryInUse() int64 { return 0 }

// SoftmaxForward runs the forward of p.Kind on the device (see SoftmaxParams). Without the gpu
// build tag it checks p and returns ErrNoDevice.
func SoftmaxForward(p SoftmaxParams) error {
	if _, err := p.check(false); err != nil {
		return err
	}
	return ErrNoDevice
}

// SoftmaxBackward runs the backward of p.Kind on the device (see SoftmaxParams). Without the
// gpu build tag it checks p and returns ErrNoDevice.
func SoftmaxBackward(p SoftmaxParams) error {
	if _, err := p.check(true); err != nil {
		return err
	}
	return ErrNoDevice
}

// AttentionForward computes O and L from Q, K and V on the device (see AttentionParams).
// Without the gpu build tag it checks p and returns ErrNoDevice.
func AttentionForward(p AttentionParams) error {
	if _, err := p.check(false); err != nil {
		return err
	}
	return ErrNoDevice
}

// AttentionBackward computes DQ, DK and DV on the device (see AttentionParams). Without the
// gpu build tag it checks p and returns ErrNoDevice.
func AttentionBackward(p AttentionParams) error {
	if _, err := p.check(true); err != nil {
		return err
	}
	return ErrNoDevice
}
