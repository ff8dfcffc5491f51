//go:build unix

package benchkit

import "syscall"

// CPUSeconds returns the CPU time this process has used (user + system),
// summed over its threads: the denominator of a benchmark's rate per
// CPU-second, which on a machine shared with other processes counts only
// the time the benchmark ran (and its workers' spinning), not the time it
// waited for a core.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}
