//go:build !race

package funcs

// raceEnabled: the race detector is on (race_on_test.go).
const raceEnabled = false
