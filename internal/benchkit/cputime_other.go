//go:build !unix

package benchkit

// CPUSeconds is not measured here: it returns 0, and rates per CPU-second
// are then not reported.
func CPUSeconds() float64 { return 0 }
