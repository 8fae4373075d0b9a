//go:build linux

package state

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable without its metadata (a high-water
// file never changes size, so its data is all that changes).
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
