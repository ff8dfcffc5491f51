package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoDevice checks the path of a process without a device (no driver, no GPU, or
// FLASHGORGON_DEVICE=cpu): no device, no memory, and launchers that validate their arguments
// and then refuse with ErrNoDevice, so that the ops run on the CPU.
func TestNoDevice(t *testing.T) {
	if Enabled() {
		t.Skipf("a CUDA device is in use (%s): the device tests cover this process", Device())
	}
	if !strings.HasPrefix(Device(), "cpu") || MemoryInUse() != 0 {
		t.Fatalf("no device: Device %q, MemoryInUse %d", Device(), MemoryInUse())
	}
	p := attnOK(false)
	if err := AttentionForward(p); !errors.Is(err, ErrNoDevice) {
		t.Errorf("AttentionForward: %v, want ErrNoDevice", err)
	}
	if err := AttentionBackward(p); !errors.Is(err, ErrNoDevice) {
		t.Errorf("AttentionBackward: %v, want ErrNoDevice", err)
	}
	s := SoftmaxParams{Kind: Softmax, Outer: 1, N: 2, Inner: 1, X: make([]float32, 2), Y: make([]float32, 2), DY: make([]float32, 2), DX: make([]float32, 2)}
	if err := SoftmaxForward(s); !errors.Is(err, ErrNoDevice) {
		t.Errorf("SoftmaxForward: %v, want ErrNoDevice", err)
	}
	if err := SoftmaxBackward(s); !errors.Is(err, ErrNoDevice) {
		t.Errorf("SoftmaxBackward: %v, want ErrNoDevice", err)
	}
	if _, err := NewTimer(2); !errors.Is(err, ErrNoDevice) {
		t.Errorf("NewTimer: %v, want ErrNoDevice", err)
	}
	p.Q = nil
	if err := AttentionForward(p); err == nil || errors.Is(err, ErrNoDevice) {
		t.Errorf("AttentionForward with nil Q: %v, want a validation error", err)
	}
}

// TestNoDeviceLog runs this test binary again, with the environment of this process, in a
// process without a device, and checks the one line the package logs when it finds no device:
// "no CUDA device (why): ops run on the CPU", and that the process then runs on the CPU. On a
// machine without libcuda.so.1 the reason must name the library. It skips where a device is
// in use (TestDeviceSelection covers the choice there).
func TestNoDeviceLog(t *testing.T) {
	if os.Getenv("FG_NODEVICE_CHILD") == "1" {
		fmt.Printf("device=%s enabled=%v\n", Device(), Enabled())
		return
	}
	if Enabled() {
		t.Skipf("a CUDA device is in use (%s)", Device())
	}
	if os.Getenv("FLASHGORGON_DEVICE") == "cpu" {
		t.Skip("FLASHGORGON_DEVICE=cpu: the package looks for no device")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoDeviceLog$", "-test.v")
	cmd.Env = append(os.Environ(), "FG_NODEVICE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var logged []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "flashgorgon:") {
			logged = append(logged, l)
		}
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "flashgorgon: no CUDA device (") || !strings.HasSuffix(logged[0], "): ops run on the CPU") {
		t.Errorf("want one line \"flashgorgon: no CUDA device (…): ops run on the CPU\"; the child logged %q", logged)
	}
	if !strings.Contains(string(out), "device=cpu enabled=false") {
		t.Errorf("child output:\n%s", out)
	}
	if !libraryPresent() && len(logged) == 1 && !strings.Contains(logged[0], driverLibrary) {
		t.Errorf("%s is absent but the log line does not name it: %s", driverLibrary, logged[0])
	}
	t.Logf("child: %s", strings.Join(logged, "; "))
}

// libraryPresent reports whether the dynamic loader's cache or a usual directory holds the
// driver's library (a rough look, only to sharpen TestNoDeviceLog's message check).
func libraryPresent() bool {
	if out, err := exec.Command("ldconfig", "-p").Output(); err == nil && strings.Contains(string(out), driverLibrary) {
		return true
	}
	for _, d := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64"} {
		if _, err := os.Stat(d + "/" + driverLibrary); err == nil {
			return true
		}
	}
	return os.Getenv("LD_LIBRARY_PATH") != "" // unknown: it may be on the path
}
