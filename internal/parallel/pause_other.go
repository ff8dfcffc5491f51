//go:build !amd64 || purego

package parallel

// pause is the spin-wait hint between polls; this build has none (the
// polls themselves, the clock and yield pace the loop).
func pause(n int) {}
