// Package storetest counts keys in a stopped server's meta store for
// end-to-end tests, which import only the standard library: it builds
// and runs the keycount command (which imports Badger) in a process of
// its own.
package storetest

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/internal/gobin"
)

// keycount is the keycount command, built on first use.
var keycount = &gobin.Binary{Pkg: "github.com/streamsql/streamsql/internal/storetest/keycount"}

// Cleanup removes the keycount binary, if it was built.
func Cleanup() { keycount.Cleanup() }

// CountKeys returns, per prefix, the number of live keys under it in the
// Badger DB at dir (its server must be stopped).
func CountKeys(dir string, prefixes ...[]byte) ([]int, error) {
	bin, err := keycount.Path()
	if err != nil {
		return nil, err
	}
	args := []string{dir}
	for _, p := range prefixes {
		args = append(args, hex.EncodeToString(p))
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("keycount %s: %v: %s", dir, err, ee.Stderr)
		}
		return nil, fmt.Errorf("keycount %s: %w", dir, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(prefixes) {
		return nil, fmt.Errorf("keycount %s: %d lines for %d prefixes: %q", dir, len(lines), len(prefixes), out)
	}
	counts := make([]int, len(lines))
	for i, l := range lines {
		_, n, _ := strings.Cut(l, " ")
		if counts[i], err = strconv.Atoi(n); err != nil {
			return nil, fmt.Errorf("keycount %s: %q", dir, l)
		}
	}
	return counts, nil
}
