//go:build linux && (amd64 || arm64) && !nocuda

package cuda

import (
	"os"
	"strings"
	"testing"
)

// TestOpenDriver checks the loader on libraries every Linux machine has or lacks: a missing
// library is an error that names it and binds nothing; a library without a required symbol is
// an error naming the symbol and binds nothing; a missing optional symbol is skipped; and a
// bound function calls the C function (libc's getpid, through purego, without cgo).
func TestOpenDriver(t *testing.T) {
	var getpid func() int32
	var missing func() int32
	err := openDriver("libflashgorgon-absent.so.1", []driverSymbol{{&getpid, "getpid", false}})
	if err == nil || !strings.Contains(err.Error(), "libflashgorgon-absent.so.1") {
		t.Errorf("absent library: %v, want an error naming it", err)
	}
	if getpid != nil {
		t.Errorf("absent library: getpid bound")
	}
	err = openDriver("libc.so.6", []driverSymbol{{&getpid, "getpid", false}, {&missing, "cuInit", false}})
	if err == nil || !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("library without cuInit: %v, want an error naming the symbol", err)
	}
	if getpid != nil || missing != nil {
		t.Errorf("library without a required symbol: something was bound")
	}
	if err := openDriver("libc.so.6", []driverSymbol{{&getpid, "getpid", false}, {&missing, "cuInit", true}}); err != nil {
		t.Fatalf("libc.so.6 with an optional missing symbol: %v", err)
	}
	if missing != nil {
		t.Errorf("a missing optional symbol was bound")
	}
	if got := getpid(); int(got) != os.Getpid() {
		t.Errorf("getpid through the loader = %d, os.Getpid() = %d", got, os.Getpid())
	}
}
