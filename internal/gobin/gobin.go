// Package gobin builds a command of this module once per process, for
// tests that run it as a process of its own (a Kafka broker, a key
// counter that imports Badger), so that they themselves import only the
// standard library. Standard library only.
//
// Threading: a Binary is safe for concurrent use.
package gobin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Binary is one command, built on first use into a temporary directory
// that Cleanup removes.
type Binary struct {
	// Pkg is the command's import path; Env, when set, names an
	// environment variable whose value is a binary to use instead.
	Pkg, Env string

	once sync.Once
	dir  string
	path string
	err  error
}

// Path returns the binary, building it the first time. The build runs in
// the current directory, which must be inside this module (a test's
// package directory is).
func (b *Binary) Path() (string, error) {
	b.once.Do(func() {
		if b.Env != "" {
			if p := os.Getenv(b.Env); p != "" {
				b.path, b.err = filepath.Abs(p)
				return
			}
		}
		if b.dir, b.err = os.MkdirTemp("", "gobin-"); b.err != nil {
			return
		}
		out := filepath.Join(b.dir, filepath.Base(b.Pkg))
		if msg, err := exec.Command("go", "build", "-o", out, b.Pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", b.Pkg, err, msg)
			return
		}
		b.path = out
	})
	return b.path, b.err
}

// Cleanup removes what Path built, if anything.
func (b *Binary) Cleanup() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
