//go:build !linux

package kafkatest

import "syscall"

func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
