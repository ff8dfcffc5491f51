//go:build !linux

package parallel

import "runtime"

// yield lets other goroutines run (sched_yield on Linux).
func yield() { runtime.Gosched() }
