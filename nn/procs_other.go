//go:build !unix

package nn

// processGone cannot tell on this platform: every process counts as alive,
// so no temporary file is ever removed as stale.
func processGone(pid int) bool { return false }

// isSyncUnsupported: directories cannot be synced on this platform.
func isSyncUnsupported(err error) bool { return true }
