//go:build !linux || !(amd64 || arm64) || nocuda

package cuda

import (
	"fmt"
	"runtime"
)

// openDriver fails: this build has no loader for the CUDA driver (built with the nocuda tag,
// or for a platform other than linux/amd64 and linux/arm64), so the ops run on the CPU.
func openDriver(lib string, _ []driverSymbol) error {
	return fmt.Errorf("%s not loaded: this %s/%s build has no CUDA driver loader (nocuda tag, or a platform other than linux/amd64 and linux/arm64)",
		lib, runtime.GOOS, runtime.GOARCH)
}
