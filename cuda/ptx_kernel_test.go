package cuda

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// entryBlock matches one top-level kernel definition of nvcc's PTX, from its .entry line to
// the first closing brace at the start of a line: a second reading of the rule ptxKernel
// implements line by line.
var entryBlock = regexp.MustCompile(`(?ms)^(?:\.visible |\.weak )?\.entry ([A-Za-z_$][\w$]*)\(.*?^\}\n`)

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
			blocks := entryBlock.FindAllStringSubmatchIndex(src, -1)
			if len(blocks) == 0 {
				t.Fatal("no .entry found")
			}
			if n := strings.Count(src, ".entry "); n != len(blocks) {
				t.Fatalf("%d .entry directives, %d entry blocks", n, len(blocks))
			}
			for i, bi := range blocks {
				name := src[bi[2]:bi[3]]
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
		{"k", ".version 7.8\n.visible .entry k(\n)\n{\n\tret;\n", "no closing brace"},
		{"k", ".entry k()\n{\n}\n.entry k()\n{\n}\n", "defined twice"},
	} {
		if _, err := ptxKernel(tc.src, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ptxKernel(%s): error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
