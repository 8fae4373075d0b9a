package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// crashImage copies the meta DB directory of an open Meta: what a SIGKILL
// at this moment would leave (the files' pages, mmap'ed writes included,
// are what the page cache holds).
func crashImage(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "meta")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if d.Name() == "LOCK" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// flipAfterLastEnd flips one byte of the memtable write-ahead log just
// after the last entry holding table id's end offset: inside the last
// group commit's transaction (its keys are written in key order: end
// offset, rows, index), which Badger then drops when it opens the DB.
func flipAfterLastEnd(t *testing.T, dir string, id uint64) {
	t.Helper()
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	key := tableKey(metaEnd, id)
	for _, p := range mems {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndex(b, key); i >= 0 {
			b[i+len(key)+16] ^= 0xff
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no memtable file of %s holds table %d's end offset", dir, id)
}

// lostTailImage appends two groups of five rows to log 1 and returns a
// crash image whose write-ahead log lost the second group.
func lostTailImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	l := openLogT(t, m, 1)
	mustAppend(t, l, rowsOf("a0", "a1", "a2", "a3", "a4"), "")
	mustAppend(t, l, rowsOf("b0", "b1", "b2", "b3", "b4"), "k-b")
	img := crashImage(t, dir)
	flipAfterLastEnd(t, img, 1)
	return img
}

// TestLogLostTailNeverReused: the attack in one process. The meta
// DB's write-ahead log loses the last acknowledged group (one flipped
// byte); the log must not end below the acknowledged rows, must not hand
// their offsets out again, and must say which rows it lost.
func TestLogLostTailNeverReused(t *testing.T) {
	img := lostTailImage(t)
	m := openMeta(t, img, MetaOptions{})
	l := openLogT(t, m, 1)
	if l.End() != 10 {
		t.Fatalf("End after losing the second group = %d, want 10 (the acknowledged end)", l.End())
	}
	lost := l.Lost()
	if len(lost) != 1 || lost[0].From != 5 || lost[0].To != 10 || lost[0].Cause == "" || l.LostRows() != 5 {
		t.Fatalf("lost = %+v (%d rows), want [5, 10) with a cause", lost, l.LostRows())
	}
	// Read skips the gap, and never answers an offset inside it.
	var offs []int64
	next, err := l.Read(0, 100, func(off int64, _ []byte) error { offs = append(offs, off); return nil })
	if err != nil || next != 10 || !slices.Equal(offs, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("Read(0) = %v next %d err %v", offs, next, err)
	}
	if next, err := l.Read(7, 100, func(int64, []byte) error { return errors.New("a row in the gap") }); err != nil || next != 10 {
		t.Fatalf("Read from inside the gap: next %d, %v", next, err)
	}
	// The lost group's idempotency key went with it: its resend is appended
	// again, at new offsets.
	res := mustAppend(t, l, rowsOf("b0", "b1", "b2", "b3", "b4"), "k-b")
	if res.Duplicate || res.First != 10 || res.Last != 14 {
		t.Fatalf("append after the loss = %+v, want offsets 10-14", res)
	}
	offs = nil
	next, err = l.Read(3, 4, func(off int64, _ []byte) error { offs = append(offs, off); return nil })
	if err != nil || next != 12 || !slices.Equal(offs, []int64{3, 4, 10, 11}) {
		t.Fatalf("Read(3, 4) across the gap: %v next %d, %v", offs, next, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The loss is durable, and declared once.
	m = openMeta(t, img, MetaOptions{})
	l = openLogT(t, m, 1)
	if l.End() != 15 || len(l.Lost()) != 1 {
		t.Fatalf("after reopening: End %d, lost %+v", l.End(), l.Lost())
	}
	if got := readAll(t, l, 10); !slices.Equal(got, []string{"b0", "b1", "b2", "b3", "b4"}) {
		t.Fatalf("rows after the gap = %q", got)
	}
}

// TestLogCheckAcked: without a high-water file (a data directory from
// before them), an offset a query checkpointed proves the rows below it
// were acknowledged.
func TestLogCheckAcked(t *testing.T) {
	img := lostTailImage(t)
	if err := os.Remove(filepath.Join(img, highwaterDir, logMarkName(1))); err != nil {
		t.Fatal(err)
	}
	m := openMeta(t, img, MetaOptions{})
	l := openLogT(t, m, 1)
	if l.End() != 5 || len(l.Lost()) != 0 {
		t.Fatalf("End %d, lost %+v: want 5 and none before the check", l.End(), l.Lost())
	}
	if lost, err := l.CheckAcked(4, "below the end"); err != nil || lost {
		t.Fatalf("CheckAcked(4) = %v, %v", lost, err)
	}
	if lost, err := l.CheckAcked(10, "query v read up to 10"); err != nil || !lost {
		t.Fatalf("CheckAcked(10) = %v, %v", lost, err)
	}
	if got := l.Lost(); len(got) != 1 || got[0].From != 5 || got[0].To != 10 || got[0].Cause != "query v read up to 10" {
		t.Fatalf("lost = %+v", got)
	}
	if res := mustAppend(t, l, rowsOf("c"), ""); res.First != 10 {
		t.Fatalf("append after CheckAcked at %d, want 10", res.First)
	}
}

// TestLogUnfinishedGroupNotALoss: a crash during a group commit leaves the
// high-water file saying the group was in flight, the DB without it: that
// is no loss (nothing of it was acknowledged), and nothing is reported.
func TestLogUnfinishedGroupNotALoss(t *testing.T) {
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	mustAppend(t, openLogT(t, m, 2), rowsOf("a", "b"), "")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	mf, _, _, _, err := openMark(filepath.Join(dir, highwaterDir, logMarkName(2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := mf.write(markRecord{acked: 2, inflight: 9}, true); err != nil {
		t.Fatal(err)
	}
	mf.close()
	m = openMeta(t, dir, MetaOptions{})
	l := openLogT(t, m, 2)
	if l.End() != 2 || len(l.Lost()) != 0 {
		t.Fatalf("End %d, lost %+v", l.End(), l.Lost())
	}
	if res := mustAppend(t, l, rowsOf("c"), ""); res.First != 2 {
		t.Fatalf("append at %d, want 2", res.First)
	}
}

// TestHighWaterSlots: the newest valid slot wins; a torn (corrupt) slot
// leaves the one before; no valid slot at all is reported.
func TestHighWaterSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hw")
	mf, _, found, bad, err := openMark(path)
	if err != nil || found || bad != nil {
		t.Fatalf("new file: found %v bad %v err %v", found, bad, err)
	}
	for v := uint64(1); v <= 5; v++ {
		if err := mf.write(markRecord{v, v + 1}, v%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	mf.close()
	read := func() (markRecord, bool, error) {
		t.Helper()
		mf, rec, found, bad, err := openMark(path)
		if err != nil {
			t.Fatal(err)
		}
		mf.close()
		return rec, found, bad
	}
	if rec, found, _ := read(); !found || rec != (markRecord{5, 6}) {
		t.Fatalf("read %+v %v, want {5 6}", rec, found)
	}
	b, _ := os.ReadFile(path)
	b[(5%markSlots)*markSlotBytes+15] ^= 1 // the newest record, torn
	os.WriteFile(path, b, 0o644)
	if rec, found, _ := read(); !found || rec != (markRecord{4, 5}) {
		t.Fatalf("with the newest slot torn: %+v %v, want {4 5}", rec, found)
	}
	for i := range b {
		b[i] ^= 0x55
	}
	os.WriteFile(path, b, 0o644)
	if _, found, bad := read(); found || bad == nil {
		t.Fatalf("all slots corrupt: found %v, bad %v", found, bad)
	}
}

// TestSeqNeverRepeats: a sequence whose value in the DB went back (lost
// with the write-ahead log's tail) continues above its high-water file;
// RaiseSeq lifts it above ids found elsewhere.
func TestSeqNeverRepeats(t *testing.T) {
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	for want := uint64(1); want <= 3; want++ {
		if got, err := m.NextSeq("query"); err != nil || got != want {
			t.Fatalf("NextSeq = %d, %v, want %d", got, err, want)
		}
	}
	// The DB's value as it was after the first call.
	if err := m.db.Update(func(txn *badger.Txn) error {
		return txn.Set(append([]byte{metaSeq}, "query"...), binary.BigEndian.AppendUint64(nil, 1))
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMeta(t, dir, MetaOptions{})
	if got, err := m.NextSeq("query"); err != nil || got != 4 {
		t.Fatalf("NextSeq after the DB lost its value = %d, %v, want 4 (never 2 again)", got, err)
	}
	if raised, err := m.RaiseSeq("query", 3); err != nil || raised {
		t.Fatalf("RaiseSeq below the value = %v, %v", raised, err)
	}
	if raised, err := m.RaiseSeq("query", 10); err != nil || !raised {
		t.Fatalf("RaiseSeq(10) = %v, %v", raised, err)
	}
	if got, _ := m.NextSeq("query"); got != 11 {
		t.Fatalf("NextSeq after RaiseSeq(10) = %d", got)
	}
	if got, _ := m.NextSeq("odd name/é"); got != 1 {
		t.Fatalf("a sequence with any name: %d", got)
	}
}

// TestLogIdempotencyConflict: a key repeated with other rows is refused
// and appends nothing; the same rows get the first answer; a key stored
// without a digest (older versions) answers any repeat as before.
func TestLogIdempotencyConflict(t *testing.T) {
	m := openMeta(t, t.TempDir(), MetaOptions{})
	l := openLogT(t, m, 4)
	first := mustAppend(t, l, rowsOf("a", "b"), "k")
	_, err := l.Append(context.Background(), rowsOf("a", "c"), "k")
	var conflict *IdempotencyConflictError
	if !errors.As(err, &conflict) || conflict.Key != "k" || conflict.First.First != first.First {
		t.Fatalf("other rows with the same key: %v", err)
	}
	// Row boundaries count: "ab" is not "a","b".
	if _, err := l.Append(context.Background(), rowsOf("ab"), "k"); !errors.As(err, &conflict) {
		t.Fatalf("the same bytes in other rows: %v", err)
	}
	if res := mustAppend(t, l, rowsOf("a", "b"), "k"); !res.Duplicate || res.First != first.First {
		t.Fatalf("the same rows again: %+v", res)
	}
	if l.End() != 2 {
		t.Fatalf("End %d after refused repeats", l.End())
	}

	// Two requests with one key in one group: the second with other rows
	// is refused, one with the same rows gets the first's answer.
	rec := &SyncRecorder{}
	m2 := openMeta(t, t.TempDir(), MetaOptions{WrapSync: rec.Wrap})
	l2 := openLogT(t, m2, 1)
	started, release := rec.HoldNext()
	go l2.Append(context.Background(), rowsOf("x"), "")
	<-started
	type answer struct {
		res AppendResult
		err error
	}
	answers := make([]chan answer, 3)
	for i, rows := range [][][]byte{rowsOf("p"), rowsOf("q"), rowsOf("p")} {
		answers[i] = make(chan answer, 1)
		go func() {
			res, err := l2.Append(context.Background(), rows, "g")
			answers[i] <- answer{res, err}
		}()
		for len(l2.reqs) < i+1 { // queued in order behind the held group
			runtime.Gosched()
		}
	}
	release()
	a0, a1, a2 := <-answers[0], <-answers[1], <-answers[2]
	if a0.err != nil || a0.res.Duplicate || a0.res.First != 1 {
		t.Fatalf("first in group: %+v", a0)
	}
	if !errors.As(a1.err, &conflict) {
		t.Fatalf("other rows in the same group: %+v", a1)
	}
	if a2.err != nil || !a2.res.Duplicate || a2.res.First != 1 {
		t.Fatalf("same rows in the same group: %+v", a2)
	}

	// A key stored by an older version: 24 bytes, no digest.
	legacy := append(tableKey(metaIdem, 4), bytes.Repeat([]byte{7}, 32)...)
	v := make([]byte, 24)
	binary.BigEndian.PutUint64(v, 1)
	binary.BigEndian.PutUint64(v[8:], 0)
	binary.BigEndian.PutUint64(v[16:], 0)
	if err := m.db.Update(func(txn *badger.Txn) error { return txn.Set(legacy, v) }); err != nil {
		t.Fatal(err)
	}
	req := &appendReq{idemKey: legacy}
	txn := m.db.NewTransaction(false)
	res, digest, ok, err := lookupIdem(txn, req.idemKey)
	txn.Discard()
	if err != nil || !ok || digest != nil || res.Accepted != 1 {
		t.Fatalf("legacy record: %+v %x %v %v", res, digest, ok, err)
	}
}

// TestDropLogOrphan: DropLog removes a log that is not open (the orphan
// of an interrupted DROP TABLE): every key of the table and its
// high-water file; tombstones are listed until cleared.
func TestDropLogOrphan(t *testing.T) {
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	mustAppend(t, openLogT(t, m, 7), rowsOf("a", "b"), "key")
	mustAppend(t, openLogT(t, m, 8), rowsOf("c"), "")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMeta(t, dir, MetaOptions{})
	if ids, err := m.LogIDs(); err != nil || !slices.Equal(ids, []uint64{7, 8}) {
		t.Fatalf("LogIDs = %v, %v", ids, err)
	}
	if err := m.MarkDropped(DroppedTable, 7); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkDropped(DroppedQuery, 3); err != nil {
		t.Fatal(err)
	}
	if ts, err := m.Dropped(); err != nil || len(ts) != 2 || !slices.Contains(ts, Tombstone{DroppedTable, 7}) || !slices.Contains(ts, Tombstone{DroppedQuery, 3}) {
		t.Fatalf("Dropped = %v, %v", ts, err)
	}
	if err := m.DropLog(7); err != nil {
		t.Fatal(err)
	}
	for _, space := range []byte{metaEnd, metaStart, metaRow, metaIdem, metaTime, metaLost} {
		if keys := keysUnder(t, m, tableKey(space, 7)); len(keys) > 0 {
			t.Errorf("%d keys left under %c<7>", len(keys), space)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, highwaterDir, logMarkName(7))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("high-water file of the dropped log: %v", err)
	}
	if ids, _ := m.LogIDs(); !slices.Equal(ids, []uint64{8}) {
		t.Fatalf("LogIDs after DropLog = %v", ids)
	}
	if got := readAll(t, openLogT(t, m, 8), 0); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("the other log: %q", got)
	}
	for _, ts := range []Tombstone{{DroppedTable, 7}, {DroppedQuery, 3}} {
		if err := m.ClearDropped(ts.Kind, ts.ID); err != nil {
			t.Fatal(err)
		}
	}
	if ts, _ := m.Dropped(); len(ts) != 0 {
		t.Fatalf("tombstones after clearing: %v", ts)
	}
}
