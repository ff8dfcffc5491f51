//go:build race

package attention

// raceEnabled: the race detector is on; sync.Pool then drops a random share
// of what is put back, so tests of the pools' effect skip.
const raceEnabled = true
