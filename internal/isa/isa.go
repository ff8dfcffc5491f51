// Package isa decides, once per process, which instruction set the CPU kernels use. It is the
// one place that reads the CPU's features, so every kernel package dispatches the same way and
// the tests can force each variant.
//
// The level is the best the CPU and the operating system support, lowered by:
//
//   - the build tag purego, which builds no assembly at all (Level is then always Generic);
//   - the environment variable FLASHGORGON_SIMD=generic|avx2|avx512, read at start-up, which
//     caps the level (asking for more than the machine has gives what it has).
//
// Kernel packages pick their implementation from Level() when they are initialized, and offer
// the other variants the machine can run to their tests through Supported.
package isa

import (
	"fmt"
	"log"
	"os"
	"strings"

	"golang.org/x/sys/cpu"
)

// A Level is an instruction-set level, ordered: a higher level can run every lower one.
type Level int

const (
	// Generic is portable Go, on every machine.
	Generic Level = iota
	// AVX2 is AVX2 with FMA3 (Haswell, Zen and later).
	AVX2
	// AVX512 is AVX-512 F, VL, BW and DQ (Skylake-SP, Zen 4 and later).
	AVX512
)

func (l Level) String() string {
	switch l {
	case Generic:
		return "generic"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("isa.Level(%d)", int(l))
}

// EnvVar is the environment variable that caps the level.
const EnvVar = "FLASHGORGON_SIMD"

// hardware is the best level the CPU and OS support (assembly builds only).
var hardware = detect()

// level is the level in force: hardware capped by EnvVar.
var level, envErr = capped(hardware, os.Getenv(EnvVar))

// An unusable EnvVar is said once, as the device selection says an unusable
// FLASHGORGON_DEVICE: the kernels run on at the hardware's level.
func init() {
	if envErr != nil {
		log.Printf("flashgorgon: %v; using %s", envErr, hardware)
	}
}

func detect() Level {
	if !haveAsm {
		return Generic
	}
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512VL && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX2 && x.HasFMA:
		return AVX512
	case x.HasAVX2 && x.HasFMA:
		return AVX2
	}
	return Generic
}

// capped lowers hw to what the value of EnvVar allows; an unknown value is an error and leaves hw.
func capped(hw Level, env string) (Level, error) {
	env = strings.ToLower(strings.TrimSpace(env))
	var want Level
	switch env {
	case "":
		return hw, nil
	case "generic", "go", "purego":
		want = Generic
	case "avx2":
		want = AVX2
	case "avx512", "avx-512":
		want = AVX512
	default:
		return hw, fmt.Errorf("isa: %s=%q is not one of generic, avx2, avx512", EnvVar, env)
	}
	return min(hw, want), nil
}

// Get returns the level in force for this process.
func Get() Level { return level }

// Hardware returns the best level this machine supports, ignoring EnvVar.
func Hardware() Level { return hardware }

// Err reports an unusable EnvVar value (the level then stays the hardware's), so that programs
// can say so; the kernels themselves never fail over it.
func Err() error { return envErr }

// Supported lists every level this build can run on this machine, lowest first: the variants a
// test should check.
func Supported() []Level {
	var ls []Level
	for l := Generic; l <= hardware; l++ {
		ls = append(ls, l)
	}
	return ls
}

// Describe names the level in force and the machine's best, for logs and benchmark tables.
func Describe() string {
	if level == hardware {
		return level.String()
	}
	return fmt.Sprintf("%s (machine: %s, capped by %s)", level, hardware, EnvVar)
}
