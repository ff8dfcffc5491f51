package cuda

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// entryStart matches the line that starts a top-level kernel definition.
var entryStart = regexp.MustCompile(`(?m)^(?:\.visible |\.weak )?\.entry ([A-Za-z_$][\w$]*)\(`)

// nextTopLevel matches the lines that can only stand outside a kernel's body: another kernel
// or function, nvcc's "// .globl" note, a global or shared declaration, the .file table and
// the debug section.
var nextTopLevel = regexp.MustCompile(`(?m)^(?:(?:\.visible |\.weak )?\.(?:entry|func) |\t// \.globl|\.global |\.extern |\.const |\t\.file\t|\t\.section\t)`)

// entryBlocks returns each kernel's name and byte range in src, by a second rule independent
// of ptxKernel's brace counting: a kernel runs from its .entry line to the last line that is
// exactly "}" before the next line that can only stand at the top level.
func entryBlocks(t *testing.T, src string) (names []string, spans [][2]int) {
	for _, m := range entryStart.FindAllStringSubmatchIndex(src, -1) {
		end := len(src)
		if n := nextTopLevel.FindStringIndex(src[m[1]:]); n != nil {
			end = m[1] + n[0]
		}
		i := strings.LastIndex(src[m[0]:end], "\n}\n")
		if i < 0 {
			t.Fatalf("kernel %s: no closing brace before the next top-level line", src[m[2]:m[3]])
		}
		names = append(names, src[m[2]:m[3]])
		spans = append(spans, [2]int{m[0], m[0] + i + 3})
	}
	return names, spans
}

// ptxTarget is a module's .target directive.
var ptxTarget = regexp.MustCompile(`(?m)^\.target (\w+)`)

// inlinedAt is the inlining part of a .loc line (", function_name $L__info_string3, inlined_at 1 547 5").
var inlinedAt = regexp.MustCompile(`, function_name \$L__info_string\d+, inlined_at \d+ \d+ \d+`)

// TestPTXKernel checks, on every embedded module, that each kernel's PTX is the module with
// exactly the other kernels' definitions removed: nothing else lost, nothing added.
func TestPTXKernel(t *testing.T) {
	files, err := fs.Glob(ptxFiles, "ptx/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded PTX: %v", err)
	}
	for _, f := range files {
		module := strings.TrimSuffix(strings.TrimPrefix(f, "ptx/"), ".ptx")
		t.Run(module, func(t *testing.T) {
			src, err := ptxSource(module)
			if err != nil {
				t.Fatal(err)
			}
			names, blocks := entryBlocks(t, src)
			if len(blocks) == 0 {
				t.Fatal("no .entry found")
			}
			if n := strings.Count(src, ".entry "); n != len(blocks) {
				t.Fatalf("%d .entry directives, %d entry blocks", n, len(blocks))
			}
			for i, name := range names {
				var want strings.Builder
				last := 0
				for j, bj := range blocks {
					if j != i {
						want.WriteString(src[last:bj[0]])
						last = bj[1]
					}
				}
				want.WriteString(src[last:])
				got, err := ptxKernel(src, name)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got != want.String() {
					t.Fatalf("%s: ptxKernel's module (%d bytes) differs from the module without the other entries (%d bytes)", name, len(got), want.Len())
				}
			}
		})
	}
}

func TestPTXKernelErrors(t *testing.T) {
	src, err := ptxSource("softmax")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"fg_no_such_kernel", src, "no kernel fg_no_such_kernel"},
		{"k", ".version 7.8\n.visible .entry k(\n)\n{\n\tret;\n", "braces do not close"},
		{"k", ".entry k()\n{\n}\n.entry k()\n{\n}\n", "defined twice"},
		// An inline-asm block's "}" at the start of a line does not end the kernel.
		{"k", ".entry j()\n{\n\tasm {\n}\n\tret;\n}\n.entry k()\n{\n{\n}\n", "braces do not close"},
	} {
		if _, err := ptxKernel(tc.src, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ptxKernel(%s): error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestPTXKernelCompiles hands every kernel's own module (ptxKernel) to ptxas, as the driver's
// JIT does at a kernel's first use: a developer's check on a machine with CUDA's ptxas and no
// GPU. FLASHGORGON_PTXAS names the ptxas binary (the test skips without it), and
// FLASHGORGON_PTXAS_ARCH the target (default sm_80). CUDA 11.8's ptxas crashes (SIGSEGV) on
// the inlined-at line info nvcc 11.8 itself writes, whole modules included, while the driver's
// JIT takes it; the copy given to ptxas drops that part of the .loc lines (inlinedAt).
func TestPTXKernelCompiles(t *testing.T) {
	ptxas := os.Getenv("FLASHGORGON_PTXAS")
	if ptxas == "" {
		t.Skip("FLASHGORGON_PTXAS (a ptxas binary) not set")
	}
	arch := os.Getenv("FLASHGORGON_PTXAS_ARCH")
	if arch == "" {
		arch = "sm_80"
	}
	files, err := fs.Glob(ptxFiles, "ptx/*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		module := strings.TrimSuffix(strings.TrimPrefix(f, "ptx/"), ".ptx")
		src, err := ptxSource(module)
		if err != nil {
			t.Fatal(err)
		}
		// An architecture-specific module (.target sm_90a: the Hopper kernels) compiles only
		// for that target; scripts/ptxas-hopper.sh checks those with CUDA 12+'s ptxas.
		if tgt := ptxTarget.FindStringSubmatch(src); tgt != nil && strings.HasSuffix(tgt[1], "a") && tgt[1] != arch {
			t.Logf("%s: .target %s, not compiled for %s", module, tgt[1], arch)
			continue
		}
		for _, m := range entryStart.FindAllStringSubmatch(src, -1) {
			name := m[1]
			t.Run(module+"/"+name, func(t *testing.T) {
				t.Parallel()
				ptx, err := ptxKernel(src, name)
				if err != nil {
					t.Fatal(err)
				}
				in := filepath.Join(dir, name+".ptx")
				if err := os.WriteFile(in, []byte(inlinedAt.ReplaceAllString(ptx, "")), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(ptxas, "-arch="+arch, "-O3", in, "-o", filepath.Join(dir, name+".cubin")).CombinedOutput()
				if err != nil {
					t.Fatalf("ptxas -arch=%s on %s's own module: %v\n%s", arch, name, err, out)
				}
			})
		}
	}
}
