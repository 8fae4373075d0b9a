package e2e

import (
	"os/exec"
	"syscall"
)

// orphanProof makes the kernel SIGKILL the server if the test process dies
// without cleaning up (a -timeout panic, a signal), so no server outlives it.
func orphanProof(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
