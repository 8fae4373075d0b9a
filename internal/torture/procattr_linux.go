package torture

import "syscall"

// procAttr has the kernel kill a child process if the harness dies.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
