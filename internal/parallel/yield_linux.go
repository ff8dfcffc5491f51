package parallel

import "syscall"

// yield gives the processor to another thread that is ready to run, if
// any (sched_yield): a polling worker then takes no time from the other
// work of a machine with more threads than cores.
func yield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
