package state

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEmptyLogFilesAfterCrash: a crash while Badger makes a value log or
// memtable file leaves it empty, and Badger then refused to open the store
// ("Open existing file: ...vlog err: Create a new file": the torture
// harness's data directory could not be opened again after a SIGKILL while
// the meta store's value log rotated). Both stores open past such files,
// with everything they held.
func TestEmptyLogFilesAfterCrash(t *testing.T) {
	leaveEmpty := func(t *testing.T, dir string) {
		t.Helper()
		for _, name := range []string{"000099.vlog", "000099.mem"} {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("meta", func(t *testing.T) {
		dir := t.TempDir()
		m, err := OpenMeta(dir, MetaOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.PutCatalog("view/v", make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
		m.Close()
		leaveEmpty(t, dir)
		if m, err = OpenMeta(dir, MetaOptions{}); err != nil {
			t.Fatalf("open after a crash left empty log files: %v", err)
		}
		defer m.Close()
		kvs, err := m.ListCatalog("view/")
		if err != nil || len(kvs) != 1 || len(kvs[0].Value) != 200 {
			t.Fatalf("catalog after reopening: %v, %v", kvs, err)
		}
	})
	t.Run("state", func(t *testing.T) {
		dir := t.TempDir()
		v, err := OpenVersioned(dir)
		if err != nil {
			t.Fatal(err)
		}
		id := v.NextID()
		if err := v.Write(id, []KV{{Key: []byte("k"), Value: make([]byte, 200)}}); err != nil {
			t.Fatal(err)
		}
		if err := v.CommitMarker([]byte("m"), id, []byte("x")); err != nil {
			t.Fatal(err)
		}
		v.Close()
		leaveEmpty(t, dir)
		if v, err = OpenVersioned(dir); err != nil {
			t.Fatalf("open after a crash left empty log files: %v", err)
		}
		defer v.Close()
		if got, _, ok, err := v.LastMarker([]byte("m")); err != nil || !ok || got != id {
			t.Fatalf("marker after reopening: %d %v %v", got, ok, err)
		}
		if val, err := v.Get([]byte("k"), id); err != nil || len(val) != 200 {
			t.Fatalf("state after reopening: %d bytes, %v", len(val), err)
		}
	})
}
