package queries

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dirLock is the exclusive lock on a data directory: one server per
// directory (two would corrupt each other's stores).
type dirLock struct{ f *os.File }

// lockDataDir takes the lock on dir (<dir>/LOCK, flock), recording this
// process's id in it, or says which process holds it.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: lock file: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := "another process"
		if pid := strings.TrimSpace(string(b)); pid != "" {
			holder = "process " + pid
		}
		return nil, fmt.Errorf("data directory %s is in use by %s (another streamsql server?): stop it, or give this one another --data", dir, holder)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &dirLock{f: f}, nil
}

// release lets the directory go (the kernel does it too when the process
// dies).
func (l *dirLock) release() {
	if l != nil {
		l.f.Close()
	}
}
