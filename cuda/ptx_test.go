package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda/internal/ptxhdr"
)

// TestPTXUpToDate checks that every kernels/*.cu has a generated ptx/<name>.ptx whose header
// records the current kernel sources (a SHA-256 over kernels/), compute_80 and CUDA 11.8's
// nvcc. It fails when a kernel was edited and go generate ./cuda/... was not run.
func TestPTXUpToDate(t *testing.T) {
	want, err := ptxhdr.SourceHash("kernels")
	if err != nil {
		t.Fatal(err)
	}
	sources, err := filepath.Glob("kernels/*.cu")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no kernels/*.cu: %v", err)
	}
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".cu")
		h, err := ptxhdr.Read(filepath.Join("ptx", name+".ptx"))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./cuda/...)", src, err)
			continue
		}
		if h.Hash != want {
			t.Errorf("ptx/%s.ptx was generated from other kernel sources (sha256 %s, now %s): run go generate ./cuda/...", name, h.Hash, want)
		}
		if !strings.Contains(h.Flags, "-arch=compute_80") {
			t.Errorf("ptx/%s.ptx flags %q: want -arch=compute_80", name, h.Flags)
		}
		if !strings.Contains(h.NVCC, "release 11.8") {
			t.Errorf("ptx/%s.ptx made by %q: want CUDA 11.8's nvcc (widest driver range)", name, h.NVCC)
		}
	}
	// No stale PTX of a removed kernel file.
	ptx, _ := filepath.Glob("ptx/*.ptx")
	for _, p := range ptx {
		src := filepath.Join("kernels", strings.TrimSuffix(filepath.Base(p), ".ptx")+".cu")
		if _, err := os.Stat(src); err != nil {
			t.Errorf("%s has no source %s", p, src)
		}
	}
}
