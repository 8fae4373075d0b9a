package queries

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/state"
)

// stateKeys counts a query's keys in the versioned store.
func stateKeys(t *testing.T, e *Engine, qid uint64) int {
	t.Helper()
	n := 0
	err := e.store.Scan(runtime.QueryPrefix(qid), ^uint64(0), func(_, _ []byte) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRemoveOrphans: what a drop interrupted by a crash left (its catalog
// entry deleted, its state or log not yet: a tombstone says so) is
// removed at the next start; a tombstone of a query or table the catalog
// still names only goes; a log no catalog entry and no tombstone names is
// kept (its catalog entry may have been lost), and ids never repeat.
func TestRemoveOrphans(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, NoSampler: true}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http;
		CREATE TABLE u (k BIGINT NOT NULL) ENGINE=http;
		CREATE TABLE w (k BIGINT NOT NULL) ENGINE=http;
		CREATE VIEW gone AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;
		CREATE VIEW kept AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	for _, tab := range []string{"t", "u", "w"} {
		ingest(t, e, tab, strings.Repeat(`{"k": 1}`+"\n", 10))
	}
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	e.mu.RLock()
	gone, kept := e.views["gone"].Record.ID, e.views["kept"].Record.ID
	u, w := e.tables["u"].ID, e.tables["w"].ID
	e.mu.RUnlock()
	if stateKeys(t, e, gone) == 0 {
		t.Fatal("view gone has no state to lose")
	}
	// A crash right after the catalog deletes of DROP VIEW gone and DROP
	// TABLE u (both tombstoned first); a tombstone of view kept whose drop
	// was refused; table w's catalog entry lost without any drop.
	for _, ts := range []state.Tombstone{{Kind: state.DroppedQuery, ID: gone}, {Kind: state.DroppedTable, ID: u}, {Kind: state.DroppedQuery, ID: kept}} {
		if err := e.meta.MarkDropped(ts.Kind, ts.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.meta.DeleteCatalogKeys([]string{viewPrefix + "gone", tablePrefix + "u", tablePrefix + "w"}); err != nil {
		t.Fatal(err)
	}
	e.Close(ctx)

	e, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if n := stateKeys(t, e, gone); n != 0 {
		t.Errorf("%d state keys of the dropped view left", n)
	}
	if stateKeys(t, e, kept) == 0 {
		t.Error("the state of view kept, whose tombstone was stale, was removed")
	}
	ids, err := e.meta.LogIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if id == u {
			t.Errorf("the log of dropped table u (id %d) is still there: %v", u, ids)
		}
	}
	found := false
	for _, id := range ids {
		found = found || id == w
	}
	if !found {
		t.Errorf("the log of table w, whose catalog entry went without a drop, was removed: %v", ids)
	}
	if ts, _ := e.meta.Dropped(); len(ts) != 0 {
		t.Errorf("tombstones left: %v", ts)
	}
	if got := count(t, e, "kept"); got != 10 {
		t.Errorf("view kept counts %d, want 10", got)
	}
	// Ids go on above every one handed out.
	exec(t, e, `CREATE TABLE x (k BIGINT NOT NULL) ENGINE=http`)
	if id := e.tableDef("x").ID; id <= w {
		t.Errorf("new table id %d, not above %d", id, w)
	}
}
