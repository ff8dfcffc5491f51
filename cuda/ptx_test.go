package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda/internal/ptxhdr"
)

// TestPTXUpToDate checks that every kernels/*.cu has a generated ptx/<name>.ptx whose header
// records the current kernel sources (a SHA-256 over kernels/), the module's target
// (ptxhdr.TargetOf: compute_80; attention_hopper compute_90 marked sm_90a, PTX ISA 8.0, and
// its PTX says so) and CUDA 11.8's nvcc. It fails when a kernel was edited and go generate
// ./cuda/... was not run.
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
		target := ptxhdr.TargetOf(name)
		if !strings.Contains(h.Flags, "-arch="+target.Arch) {
			t.Errorf("ptx/%s.ptx flags %q: want -arch=%s", name, h.Flags, target.Arch)
		}
		ptx, err := ptxSource(name)
		if err != nil {
			t.Error(err)
			continue
		}
		if target.SM != "" {
			if !regexp.MustCompile(`(?m)^\.target `+target.SM+`$`).MatchString(ptx) ||
				!regexp.MustCompile(`(?m)^\.version (8|9)\.\d+$`).MatchString(ptx) {
				t.Errorf("ptx/%s.ptx: want .target %s and .version >= %s", name, target.SM, target.Version)
			}
		} else if !regexp.MustCompile(`(?m)^\.target sm_80$`).MatchString(ptx) {
			t.Errorf("ptx/%s.ptx: want .target sm_80", name)
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
