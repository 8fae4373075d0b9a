package state

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// testClock is a synthetic clock for the append-time index, in unix ms.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// openMetaClock opens a Meta whose index clock is c; logs must be opened
// after, so that their appenders see it.
func openMetaClock(t *testing.T, dir string, c *testClock) *Meta {
	t.Helper()
	m := openMeta(t, dir, MetaOptions{})
	m.now = c.now
	return m
}

// keysUnder lists the live keys under prefix, with their BE8 values when
// they have 8 bytes (else -1).
func keysUnder(t *testing.T, m *Meta, prefix []byte) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := m.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			n := int64(-1)
			if len(v) == 8 {
				n = int64(binary.BigEndian.Uint64(v))
			}
			out[string(it.Item().Key())] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// index returns the append-time index of table id as "ms:offset" strings.
func index(t *testing.T, m *Meta, id uint64) []string {
	t.Helper()
	p := tableKey(metaTime, id)
	var out []string
	for k, v := range keysUnder(t, m, p) {
		out = append(out, fmt.Sprintf("%d:%d", binary.BigEndian.Uint64([]byte(k)[len(p):]), v))
	}
	slices.Sort(out)
	return out
}

// rowOffsets lists the offsets of the rows stored for table id: each chunk
// (key: its first offset; value: uvarint row count first) holds count rows.
func rowOffsets(t *testing.T, m *Meta, id uint64) []int64 {
	t.Helper()
	p := tableKey(metaRow, id)
	var out []int64
	err := m.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = p
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			first := int64(binary.BigEndian.Uint64(it.Item().Key()[len(p):]))
			err := it.Item().Value(func(v []byte) error {
				n, k := binary.Uvarint(v)
				if k <= 0 {
					return fmt.Errorf("chunk %d: bad count", first)
				}
				for i := range int64(n) {
					out = append(out, first+i)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func mustTruncate(t *testing.T, l *Log, below int64) {
	t.Helper()
	if err := l.Truncate(below); err != nil {
		t.Fatal(err)
	}
}

func offsets(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func TestLogTruncate(t *testing.T) {
	dir := t.TempDir()
	clk := &testClock{}
	clk.ms.Store(1000)
	m := openMetaClock(t, dir, clk)
	l := openLogT(t, m, 3)
	for i := range 10 {
		clk.ms.Add(10)
		mustAppend(t, l, rowsOf(fmt.Sprint(i)), "")
	}
	if l.Start() != 0 {
		t.Fatalf("Start = %d before any truncation", l.Start())
	}
	mustTruncate(t, l, 4)
	if l.Start() != 4 || l.End() != 10 {
		t.Fatalf("Start %d, End %d after Truncate(4)", l.Start(), l.End())
	}
	if got := rowOffsets(t, m, 3); !slices.Equal(got, offsets(4, 10)) {
		t.Fatalf("rows stored after Truncate(4): %v", got)
	}
	// Entry i (at 1010+10i) covers row i only: the entries of rows 0-3 go.
	if got := index(t, m, 3); len(got) != 6 || got[0] != "1050:4" {
		t.Fatalf("index after Truncate(4): %v", got)
	}
	for _, from := range []int64{0, 3} {
		if _, err := l.Read(from, 10, func(int64, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
			t.Fatalf("Read(%d) below Start: %v", from, err)
		}
	}
	if got := readAll(t, l, 4); !slices.Equal(got, []string{"4", "5", "6", "7", "8", "9"}) {
		t.Fatalf("rows from Start: %q", got)
	}

	// Idempotent; never backwards.
	mustTruncate(t, l, 4)
	mustTruncate(t, l, 2)
	mustTruncate(t, l, -5)
	if l.Start() != 4 {
		t.Fatalf("Start moved to %d", l.Start())
	}
	// Never past End.
	mustTruncate(t, l, 100)
	if l.Start() != 10 || l.End() != 10 {
		t.Fatalf("Start %d, End %d after Truncate(100)", l.Start(), l.End())
	}
	if got := rowOffsets(t, m, 3); len(got) != 0 {
		t.Fatalf("rows stored after truncating everything: %v", got)
	}
	if got := index(t, m, 3); !slices.Equal(got, []string{"1100:9"}) {
		t.Fatalf("index after truncating everything: %v (the newest entry stays)", got)
	}
	if got := readAll(t, l, 10); len(got) != 0 {
		t.Fatalf("rows at End: %q", got)
	}
	if _, err := l.Read(9, 10, func(int64, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read(9) with Start 10: %v", err)
	}
	clk.ms.Add(10)
	if res := mustAppend(t, l, rowsOf("10", "11"), ""); res.First != 10 {
		t.Fatalf("append after truncation = %+v", res)
	}
	mustTruncate(t, l, 11)

	// Start survives a reopen; appends continue at End.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(12); !errors.Is(err, ErrClosed) {
		t.Fatalf("Truncate after Close: %v", err)
	}
	m = openMetaClock(t, dir, clk)
	l = openLogT(t, m, 3)
	if l.Start() != 11 || l.End() != 12 {
		t.Fatalf("after reopen Start %d, End %d", l.Start(), l.End())
	}
	if _, err := l.Read(10, 10, func(int64, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read(10) after reopen: %v", err)
	}
	if got := readAll(t, l, 11); !slices.Equal(got, []string{"11"}) {
		t.Fatalf("rows after reopen: %q", got)
	}
	mustTruncate(t, l, 5)
	if l.Start() != 11 {
		t.Fatalf("Start moved back to %d after reopen", l.Start())
	}
	// Other tables are untouched.
	if l2 := openLogT(t, m, 4); l2.Start() != 0 || l2.End() != 0 {
		t.Fatalf("other table Start %d End %d", l2.Start(), l2.End())
	}
}

// TestLogReadRacesTruncate truncates inside a Read, after its first check of
// Start: the Read must fail with ErrTruncated, not find rows missing.
func TestLogReadRacesTruncate(t *testing.T) {
	m := openMeta(t, t.TempDir(), MetaOptions{})
	l := openLogT(t, m, 1)
	mustAppend(t, l, rowsOf("0", "1", "2", "3", "4", "5"), "")
	once := false
	l.readHook = func() {
		if !once {
			once = true
			mustTruncate(t, l, 4)
		}
	}
	if _, err := l.Read(2, 10, func(int64, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read racing Truncate: %v", err)
	}
	if got := readAll(t, l, 4); !slices.Equal(got, []string{"4", "5"}) {
		t.Fatalf("rows %q", got)
	}
}

// TestLogTruncateLeftovers checks that rows left below Start (as by a crash
// part-way through a truncation) are never read and go with the next
// Truncate, even one that does not move Start.
func TestLogTruncateLeftovers(t *testing.T) {
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	l := openLogT(t, m, 2)
	for i := range 6 {
		mustAppend(t, l, rowsOf(fmt.Sprint(i)), "")
	}
	mustTruncate(t, l, 4)
	// The crash: rows below Start are still there at the next open.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMeta(t, dir, MetaOptions{})
	l = openLogT(t, m, 2)
	txn := m.db.NewTransaction(true)
	for off := range uint64(3) {
		if err := txn.Set(binary8(tableKey(metaRow, 2), off), []byte("leftover")); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(1, 10, func(int64, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read of a leftover row: %v", err)
	}
	mustTruncate(t, l, 4)
	if got := rowOffsets(t, m, 2); !slices.Equal(got, []int64{4, 5}) {
		t.Fatalf("rows after a repeated Truncate: %v", got)
	}
}

// TestLogTruncateManyRows truncates more rows than one deletion chunk.
func TestLogTruncateManyRows(t *testing.T) {
	m := openMeta(t, t.TempDir(), MetaOptions{})
	l := openLogT(t, m, 1)
	const n = 2*truncateChunk + 100
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = []byte(fmt.Sprint(i))
	}
	mustAppend(t, l, rows[:n/2], "")
	mustAppend(t, l, rows[n/2:], "")
	mustTruncate(t, l, n-3)
	// The second request is one chunk (its rows are small): it straddles
	// n-3, so it stays whole.
	if got := rowOffsets(t, m, 1); !slices.Equal(got, offsets(n/2, n)) {
		t.Fatalf("%d rows left, from %v", len(got), got[:min(len(got), 3)])
	}
}

func TestLogOffsetBefore(t *testing.T) {
	dir := t.TempDir()
	clk := &testClock{}
	m := openMetaClock(t, dir, clk)
	l := openLogT(t, m, 5)
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	if got := l.OffsetBefore(at(1000)); got != 0 {
		t.Fatalf("OffsetBefore on an empty log = %d", got)
	}
	appendAt := func(ms int64, n int) {
		t.Helper()
		clk.ms.Store(ms)
		mustAppend(t, l, make([][]byte, n), "")
	}
	appendAt(1000, 3) // rows 0-2
	appendAt(1000, 2) // rows 3-4, same millisecond: covered by the entry at 1000
	appendAt(1005, 1) // row 5
	appendAt(1010, 2) // rows 6-7
	appendAt(1020, 0) // nothing appended: no entry
	appendAt(1003, 1) // row 8: the clock stepped back; covered by the entry at 1010
	if got := index(t, m, 5); !slices.Equal(got, []string{"1000:0", "1005:5", "1010:6"}) {
		t.Fatalf("index %v", got)
	}
	for _, c := range []struct {
		t    time.Time
		want int64
	}{
		{time.Time{}, 0}, // before 1970
		{at(0), 0},
		{at(999), 0},
		{at(1000), 0},
		{at(1000).Add(500 * time.Microsecond), 0}, // rows 0-4 may be later than t
		{at(1001), 5},
		{at(1005), 5},
		{at(1006), 6},
		{at(1010), 6},
		{at(1011), 9},
		{at(1 << 50), 9},
	} {
		if got := l.OffsetBefore(c.t); got != c.want {
			t.Errorf("OffsetBefore(%v) = %d, want %d", c.t.UnixMicro(), got, c.want)
		}
	}

	// Truncation drops the entries that only cover deleted rows.
	mustTruncate(t, l, 6)
	if got := index(t, m, 5); !slices.Equal(got, []string{"1010:6"}) {
		t.Fatalf("index after Truncate(6): %v", got)
	}
	if got := l.OffsetBefore(at(999)); got != 6 {
		t.Fatalf("OffsetBefore(999) after Truncate(6) = %d", got)
	}
	mustTruncate(t, l, 5) // no-op
	if got := index(t, m, 5); !slices.Equal(got, []string{"1010:6"}) {
		t.Fatalf("index after Truncate(5): %v", got)
	}
	mustTruncate(t, l, 7) // entry 1010 still covers row 7
	if got := index(t, m, 5); !slices.Equal(got, []string{"1010:6"}) {
		t.Fatalf("index after Truncate(7): %v", got)
	}

	// After a reopen the newest entry's millisecond is remembered: a group in
	// the same millisecond gets no entry, a later one does.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMetaClock(t, dir, clk)
	l = openLogT(t, m, 5)
	appendAt(1010, 1) // row 9
	appendAt(1002, 1) // row 10
	appendAt(1030, 1) // row 11
	if got := index(t, m, 5); !slices.Equal(got, []string{"1010:6", "1030:11"}) {
		t.Fatalf("index after reopen: %v", got)
	}
	if got := l.OffsetBefore(at(1011)); got != 11 {
		t.Fatalf("OffsetBefore(1011) = %d", got)
	}
	if got := l.OffsetBefore(at(1031)); got != 12 {
		t.Fatalf("OffsetBefore(1031) = %d", got)
	}
	// The retention rule the engine applies: truncate below OffsetBefore.
	mustTruncate(t, l, l.OffsetBefore(at(1030)))
	if l.Start() != 11 {
		t.Fatalf("Start = %d", l.Start())
	}
	if got := readAll(t, l, l.Start()); len(got) != 1 {
		t.Fatalf("rows %q", got)
	}
}

// TestLogTruncateConcurrent truncates while writers append and a reader
// follows the log: answers stay consistent, the reader only ever sees
// ErrTruncated (never a missing row), and what remains is exactly
// [Start, End).
func TestLogTruncateConcurrent(t *testing.T) {
	clk := &testClock{}
	m := openMetaClock(t, t.TempDir(), clk)
	l := openLogT(t, m, 1)
	const writers, each = 4, 60
	var mu sync.Mutex
	answered := map[int64]string{}
	var wg sync.WaitGroup
	var writing sync.WaitGroup
	for w := range writers {
		writing.Add(1)
		wg.Go(func() {
			defer writing.Done()
			for i := range each {
				clk.ms.Add(1)
				rows := rowsOf(fmt.Sprintf("%d/%d/a", w, i), fmt.Sprintf("%d/%d/b", w, i))
				res, err := l.Append(context.Background(), rows, "")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				answered[res.First], answered[res.First+1] = string(rows[0]), string(rows[1])
				mu.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	wg.Go(func() { // truncator
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.Truncate(l.End() - 5); err != nil {
				t.Error(err)
				return
			}
			if l.Start() > l.End() {
				t.Errorf("Start %d above End %d", l.Start(), l.End())
				return
			}
		}
	})
	seen := map[int64]string{}
	skipped := 0
	wg.Go(func() { // reader
		pos := int64(0)
		for {
			ch := l.Changed()
			next, err := l.Read(pos, 7, func(off int64, row []byte) error {
				seen[off] = string(row)
				return nil
			})
			switch {
			case errors.Is(err, ErrTruncated):
				skipped++
				pos = l.Start()
				continue
			case err != nil:
				t.Error(err)
				return
			}
			pos = next
			if pos < l.End() {
				continue
			}
			select {
			case <-stop:
				if pos >= l.End() {
					return
				}
			case <-ch:
			}
		}
	})
	wg.Go(func() { // a reader at the start, racing the truncator
		for {
			select {
			case <-stop:
				return
			default:
			}
			pos := l.Start()
			_, err := l.Read(pos, 3, func(off int64, row []byte) error {
				mu.Lock()
				defer mu.Unlock()
				if want, ok := answered[off]; ok && want != string(row) {
					return fmt.Errorf("row %d = %q, answered %q", off, row, want)
				}
				return nil
			})
			if err != nil && !errors.Is(err, ErrTruncated) {
				t.Error(err)
				return
			}
		}
	})
	writing.Wait()
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	end := int64(writers * each * 2)
	if l.End() != end || int64(len(answered)) != end {
		t.Fatalf("End %d, %d answered", l.End(), len(answered))
	}
	for off, row := range seen {
		if answered[off] != row {
			t.Fatalf("reader saw %q at %d, answered %q", row, off, answered[off])
		}
	}
	mustTruncate(t, l, end-5)
	// Each request is one chunk of two rows: the one holding end-5 stays.
	keep := end - 5
	if strings.HasSuffix(answered[keep], "/b") {
		keep--
	}
	if got := rowOffsets(t, m, 1); !slices.Equal(got, offsets(keep, end)) {
		t.Fatalf("rows stored: %v", got)
	}
	got := readAll(t, l, l.Start())
	for i, row := range got {
		if answered[end-5+int64(i)] != row {
			t.Fatalf("row %d = %q", end-5+int64(i), row)
		}
	}
	t.Logf("reader saw %d rows, was truncated past %d times; index has %d entries", len(seen), skipped, len(index(t, m, 1)))
}

func TestLogDropRetentionKeys(t *testing.T) {
	clk := &testClock{}
	m := openMetaClock(t, t.TempDir(), clk)
	l, other := openLogT(t, m, 1), openLogT(t, m, 2)
	for i := range 5 {
		clk.ms.Add(1)
		mustAppend(t, l, rowsOf(fmt.Sprint(i)), "")
		mustAppend(t, other, rowsOf(fmt.Sprint(i)), "")
	}
	mustTruncate(t, l, 2)
	mustTruncate(t, other, 2)
	if err := l.Drop(); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(3); !errors.Is(err, ErrClosed) {
		t.Fatalf("Truncate after Drop: %v", err)
	}
	for _, space := range []byte{metaRow, metaEnd, metaStart, metaTime, metaIdem} {
		if got := keysUnder(t, m, tableKey(space, 1)); len(got) != 0 {
			t.Fatalf("keys %q left after Drop", space)
		}
	}
	l = openLogT(t, m, 1)
	if l.Start() != 0 || l.End() != 0 {
		t.Fatalf("dropped table reopens with Start %d End %d", l.Start(), l.End())
	}
	if len(index(t, m, 2)) != 3 || other.Start() != 2 || len(readAll(t, other, 2)) != 3 {
		t.Fatal("other table changed by Drop")
	}
}
