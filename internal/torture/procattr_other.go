//go:build !linux

package torture

import "syscall"

func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
