//go:build !race

package attention

// raceEnabled: the race detector is on (see race_test.go).
const raceEnabled = false
