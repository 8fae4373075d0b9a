//go:build !linux

package pgtest

import "syscall"

func (s *Server) procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Credential: s.cred} }
