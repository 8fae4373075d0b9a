package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// serverIDFile is the name of the server id's file in a data directory.
const serverIDFile = "server-id"

// ServerID is the id of the server whose data directory is dir: the one
// stored there, else a new random one (32 hex digits) stored first.
func ServerID(dir string) (string, error) {
	path := filepath.Join(dir, serverIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !validID(id) {
			return "", fmt.Errorf("server id in %s is %q, not 32 hex digits (the file is damaged: restore it from a backup of this data directory; a new id would make this server a stranger to its cluster)", path, clip(id))
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("server id: %w", err)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("server id: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	if err := writeSynced(dir, serverIDFile, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("server id: %w", err)
	}
	return id, nil
}

// validID reports whether id is 32 lowercase hex digits.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// writeSynced writes name in dir through a synced temporary file renamed
// over it, then syncs dir: after a crash the file is whole or absent.
func writeSynced(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
