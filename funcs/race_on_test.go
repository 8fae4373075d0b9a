//go:build race

package funcs

// raceEnabled: the race detector is on; its sync.Pool drops items at
// random, so code drawing on a pool (Go's regexp) allocates now and then.
const raceEnabled = true
