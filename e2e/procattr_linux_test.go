package e2e

import (
	"os"
	"os/exec"
	"syscall"
)

// orphanProof makes the kernel SIGKILL the server if the test process dies
// without cleaning up (a -timeout panic, a signal), so no server outlives it.
func orphanProof(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// killedBySIGKILL reports whether a process ended from SIGKILL.
func killedBySIGKILL(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
