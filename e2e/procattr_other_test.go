//go:build !linux

package e2e

import (
	"os"
	"os/exec"
)

// orphanProof does nothing here: only Linux has a parent-death signal.
func orphanProof(cmd *exec.Cmd) {}

// killedBySIGKILL reports whether a process ended from SIGKILL (as the
// process state describes it on Unix).
func killedBySIGKILL(ps *os.ProcessState) bool { return ps.String() == "signal: killed" }
