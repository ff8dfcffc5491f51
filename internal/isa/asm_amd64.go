//go:build amd64 && !purego

package isa

const haveAsm = true
