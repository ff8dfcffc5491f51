//go:build !gpu

// Command attnbench times flashgorgon's CUDA attention kernels; it needs the gpu build tag
// (see main.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "attnbench: built without the gpu tag; build with: go build -tags gpu ./cuda/cmd/attnbench")
	os.Exit(2)
}
