// Command genptx compiles the CUDA kernels of cuda/kernels to PTX with nvcc and writes
// cuda/ptx/<name>.ptx for every kernels/<name>.cu. It is run by go generate in cuda/:
//
//	go generate ./cuda/...
//
// The PTX targets compute_80, which the driver JIT-compiles for Ampere, Hopper and every later
// GPU; CUDA 11.8's nvcc (Debian's non-free nvidia-cuda-toolkit, see scripts/cuda-setup.sh
// --toolkit) makes PTX that drivers from 11.8 on load. The Hopper kernels
// (kernels/attention_hopper.cu, ptxhdr.TargetOf) are compiled for compute_90 and their PTX is
// marked .target sm_90a, PTX ISA 8.0: their wgmma and async-proxy instructions are inline PTX,
// which nvcc passes through unchecked, so nvcc 11.8 builds them too; the driver's JIT (or
// nvcc >= 12.0's ptxas -arch=sm_90a, as cuda/scripts/ptxas-hopper.sh runs on the GPU machine)
// assembles and checks them. Each file starts with a header saying DO NOT EDIT and recording
// the nvcc version, the flags and a SHA-256 of the kernel sources, which TestPTXUpToDate
// compares with the sources in the tree.
//
// Environment: NVCC names the compiler (default nvcc on PATH).
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flashgorgon/flashgorgon/cuda/internal/ptxhdr"
)

// flags are nvcc's flags but the architecture (ptxhdr.TargetOf): PTX, full optimization, line
// info (compute-sanitizer reports then name source lines).
var flags = []string{"-ptx", "-O3", "-std=c++17", "-lineinfo"}

func main() {
	log.SetFlags(0)
	log.SetPrefix("genptx: ")
	nvcc := os.Getenv("NVCC")
	if nvcc == "" {
		nvcc = "nvcc"
	}
	out, err := exec.Command(nvcc, "--version").Output()
	if err != nil {
		log.Fatalf("%s --version: %v (install CUDA's nvcc, e.g. scripts/cuda-setup.sh --toolkit)", nvcc, err)
	}
	version := lastLines(string(out), 2)

	const kernels = "kernels"
	absKernels, err := filepath.Abs(kernels)
	if err != nil {
		log.Fatal(err)
	}
	hash, err := ptxhdr.SourceHash(kernels)
	if err != nil {
		log.Fatal(err)
	}
	sources, err := filepath.Glob(filepath.Join(kernels, "*.cu"))
	if err != nil || len(sources) == 0 {
		log.Fatalf("no kernels/*.cu under %s (run from cuda/)", mustGetwd())
	}
	if err := os.MkdirAll("ptx", 0o755); err != nil {
		log.Fatal(err)
	}
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".cu")
		tmp, err := os.CreateTemp("", name+"-*.ptx")
		if err != nil {
			log.Fatal(err)
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		target := ptxhdr.TargetOf(name)
		args := append(append([]string{}, flags...), "-arch="+target.Arch, "-o", tmp.Name(), filepath.Base(src))
		cmd := exec.Command(nvcc, args...)
		cmd.Dir = kernels // relative names in the PTX's .file lines
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("nvcc %s: %v (%s needs an nvcc that knows -arch=%s: CUDA 11.8 or newer; this is %s)",
				strings.Join(args, " "), err, filepath.Base(src), target.Arch, version)
		}
		body, err := os.ReadFile(tmp.Name())
		if err != nil {
			log.Fatal(err)
		}
		if body, err = target.Retarget(body); err != nil {
			log.Fatalf("%s: %v", src, err)
		}
		// nvcc writes absolute paths in the .file lines; keep them relative to the module so the
		// output does not depend on where the tree is checked out.
		body = bytes.ReplaceAll(body, []byte(`"`+absKernels+string(filepath.Separator)), []byte(`"cuda/kernels/`))
		var b bytes.Buffer
		b.WriteString(ptxhdr.Header{
			Source: "kernels/" + filepath.Base(src),
			NVCC:   version,
			Flags:  target.Flags(flags),
			Hash:   hash,
		}.String())
		b.Write(body)
		dst := filepath.Join("ptx", name+".ptx")
		if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("genptx: %s (%d bytes)\n", dst, b.Len())
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}
