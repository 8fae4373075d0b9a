package state

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenAfterTornMemtable: a crash can leave an empty memtable file
// (Badger creates it empty, and truncates a flushed one before removing
// it); both stores still open, with their data.
func TestOpenAfterTornMemtable(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenVersioned(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CommitMarker([]byte("m"), 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	v.Close()
	m, err := OpenMeta(filepath.Join(dir, "meta"), MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NextSeq("s"); err != nil {
		t.Fatal(err)
	}
	m.Close()
	for _, sub := range []string{"state", "meta"} {
		if err := os.WriteFile(filepath.Join(dir, sub, "00009.mem"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err = OpenVersioned(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatalf("state store with an empty memtable file: %v", err)
	}
	defer v.Close()
	if id, _, ok, err := v.LastMarker([]byte("m")); err != nil || !ok || id != 1 {
		t.Fatalf("marker after reopen: %d %v %v", id, ok, err)
	}
	m, err = OpenMeta(filepath.Join(dir, "meta"), MetaOptions{})
	if err != nil {
		t.Fatalf("meta store with an empty memtable file: %v", err)
	}
	defer m.Close()
	if n, err := m.NextSeq("s"); err != nil || n != 2 {
		t.Fatalf("sequence after reopen: %d %v", n, err)
	}
}
