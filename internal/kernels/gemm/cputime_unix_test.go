//go:build unix

package gemm

import "syscall"

// cpuSeconds returns the CPU time this process has used (user + system),
// summed over its threads.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}
