package kafkatest

import "syscall"

// procAttr has the kernel kill a child process if the test process dies.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
