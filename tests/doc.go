// Package tests holds cross-package tests: regressions against what
// Gorgonia v0.9.18 (with gorgonia.org/tensor v0.9.24) gets wrong.
//
// Each case runs our op and asserts it against a float64 loop written here;
// it also runs Gorgonia's own SoftMax on the same input and logs where that
// differs (or fails), documenting the bug without making a Gorgonia fix
// break the build.
package tests
