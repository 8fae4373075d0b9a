package pgtest

import "syscall"

// procAttr runs the server as s.cred (the postgres user, under root) and
// has the kernel shut it down (immediate shutdown) if the test dies.
func (s *Server) procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
}
