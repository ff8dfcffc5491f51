//go:build !linux

package cuda

// threadID returns 0: thread ids are not read on this platform, where the package has no
// driver loader, so no call ever runs on a worker (onWorker is false).
func threadID() int { return 0 }
