//go:build !linux

package e2e

import "os/exec"

// orphanProof does nothing here: only Linux has a parent-death signal.
func orphanProof(cmd *exec.Cmd) {}
