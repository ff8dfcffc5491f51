// Package tests holds cross-package tests: regressions against what
// Gorgonia v0.9.18 (with gorgonia.org/tensor v0.9.24) gets wrong.
//
// Each case runs our op and asserts it against a float64 loop written here
// (or, for inputs Gorgonia cannot run at all, such as tensors with no
// elements, asserts that our op refuses them at graph-build time); it also
// runs Gorgonia's own SoftMax on the same input and logs where that differs
// (or fails, in a child process when it panics), documenting the bug without
// making a Gorgonia fix break the build.
package tests
