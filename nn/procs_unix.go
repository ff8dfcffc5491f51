//go:build unix

package nn

import (
	"errors"
	"syscall"
)

// processGone tells whether no process of id pid exists on this machine
// (kill(pid, 0) fails with ESRCH; EPERM means it exists under another user).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// isSyncUnsupported tells whether err says that the file system cannot sync
// a directory.
func isSyncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
