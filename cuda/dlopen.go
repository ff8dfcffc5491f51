//go:build linux && (amd64 || arm64) && !nocuda

package cuda

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ebitengine/purego"
)

// openDriver opens the shared library lib with dlopen, without cgo (purego), and binds each of
// syms to its entry point. It binds nothing unless every symbol that is not optional is found.
func openDriver(lib string, syms []driverSymbol) error {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		// dlerror's message names the library and why; it is thread-local, so it is empty
		// when the goroutine moved between dlopen and dlerror (the worker's thread is locked).
		msg := err.Error()
		if !strings.Contains(msg, lib) {
			msg = fmt.Sprintf("dlopen %s failed %s", lib, msg)
		}
		return errors.New(strings.TrimSpace(msg))
	}
	addrs := make([]uintptr, len(syms))
	for i, s := range syms {
		a, err := purego.Dlsym(h, s.name)
		if err != nil || a == 0 {
			if s.optional {
				continue
			}
			purego.Dlclose(h)
			return fmt.Errorf("%s has no symbol %s", lib, s.name)
		}
		addrs[i] = a
	}
	for i, s := range syms {
		if addrs[i] != 0 {
			purego.RegisterFunc(s.fn, addrs[i])
		}
	}
	return nil
}
