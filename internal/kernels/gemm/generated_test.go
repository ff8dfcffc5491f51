package gemm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedUpToDate runs gen_micro.go in a scratch directory and checks
// that the committed micro512_amd64.s and micro512_amd64.go are what it
// writes: an edit to the generator must come with `go generate`.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator with the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on this machine")
	}
	src, err := os.ReadFile("gen_micro.go")
	if err != nil {
		t.Skipf("generator source not found (a test binary run outside the tree): %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gen_micro.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCmd, "run", "gen_micro.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_micro.go: %v\n%s", err, out)
	}
	for _, name := range []string{"micro512_amd64.s", "micro512_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what gen_micro.go writes: run `go generate ./internal/kernels/gemm`", name)
		}
	}
}
