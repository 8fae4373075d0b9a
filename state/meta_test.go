package state

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func openMeta(t *testing.T, dir string, opts MetaOptions) *Meta {
	t.Helper()
	m, err := OpenMeta(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func openLogT(t *testing.T, m *Meta, id uint64) *Log {
	t.Helper()
	l, err := m.Log(id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func rowsOf(vals ...string) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out
}

func mustAppend(t *testing.T, l *Log, rows [][]byte, key string) AppendResult {
	t.Helper()
	res, err := l.Append(context.Background(), rows, key)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readAll returns every row of l from offset from.
func readAll(t *testing.T, l *Log, from int64) []string {
	t.Helper()
	var out []string
	next, err := l.Read(from, 1<<30, func(off int64, row []byte) error {
		if want := from + int64(len(out)); off != want {
			return fmt.Errorf("offset %d, want %d", off, want)
		}
		out = append(out, string(row))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := from + int64(len(out)); next != want {
		t.Fatalf("Read returned next %d, want %d", next, want)
	}
	return out
}

func TestMetaSequences(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := func(m *Meta, name string) uint64 {
		t.Helper()
		v, err := m.NextSeq(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for want := uint64(1); want <= 3; want++ {
		if got := next(m, "table"); got != want {
			t.Fatalf("NextSeq = %d, want %d", got, want)
		}
	}
	if got := next(m, "query"); got != 1 {
		t.Fatalf("a second sequence starts at %d", got)
	}
	// Concurrent callers never get the same value.
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				v, err := m.NextSeq("table")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[v] {
					t.Errorf("NextSeq repeated %d", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.NextSeq("table"); !errors.Is(err, ErrClosed) {
		t.Fatalf("NextSeq after Close: %v", err)
	}
	m = openMeta(t, dir, MetaOptions{})
	if got := next(m, "table"); got != 84 {
		t.Fatalf("NextSeq after reopen = %d, want 84", got)
	}
	if got := next(m, "query"); got != 2 {
		t.Fatalf("second sequence after reopen = %d, want 2", got)
	}
}

func TestMetaCatalog(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"table/b", "query/x", "table/a", "table/c"} {
		if err := m.PutCatalog(k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.PutCatalog("table/a", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteCatalog("table/c"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteCatalog("missing"); err != nil {
		t.Fatal(err)
	}
	render := func(kvs []KV) string {
		s := ""
		for _, kv := range kvs {
			s += string(kv.Key) + "=" + string(kv.Value) + ";"
		}
		return s
	}
	check := func(m *Meta) {
		t.Helper()
		got, err := m.ListCatalog("table/")
		if err != nil {
			t.Fatal(err)
		}
		if want := "table/a=v2;table/b=v-table/b;"; render(got) != want {
			t.Fatalf("ListCatalog(table/) = %q, want %q", render(got), want)
		}
		all, err := m.ListCatalog("")
		if err != nil {
			t.Fatal(err)
		}
		if want := "query/x=v-query/x;table/a=v2;table/b=v-table/b;"; render(all) != want {
			t.Fatalf("ListCatalog() = %q, want %q", render(all), want)
		}
	}
	check(m)
	// Sequences and logs live in other key spaces.
	if _, err := m.NextSeq("table"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, openLogT(t, m, 1), rowsOf("r"), "k")
	check(m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	check(openMeta(t, dir, MetaOptions{}))
}

func TestLogAppendRead(t *testing.T) {
	m := openMeta(t, t.TempDir(), MetaOptions{})
	l := openLogT(t, m, 7)
	if l2 := openLogT(t, m, 7); l2 != l {
		t.Fatal("Log returned a second *Log for the same table")
	}
	if l.End() != 0 {
		t.Fatalf("new log End = %d", l.End())
	}
	res := mustAppend(t, l, nil, "")
	if res != (AppendResult{Accepted: 0, First: 0, Last: -1}) {
		t.Fatalf("empty append = %+v", res)
	}
	ch := l.Changed()
	res = mustAppend(t, l, rowsOf("a", "b", "c"), "")
	if res != (AppendResult{Accepted: 3, First: 0, Last: 2}) {
		t.Fatalf("append = %+v", res)
	}
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed after End advanced")
	}
	if l.Changed() == ch {
		t.Fatal("Changed not replaced")
	}
	res = mustAppend(t, l, rowsOf("d"), "")
	if res != (AppendResult{Accepted: 1, First: 3, Last: 3}) {
		t.Fatalf("append = %+v", res)
	}
	if res := mustAppend(t, l, nil, ""); res.First != 4 || res.Last != 3 {
		t.Fatalf("empty append = %+v", res)
	}
	if got := readAll(t, l, 0); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("rows = %q", got)
	}
	if got := readAll(t, l, 2); !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("rows from 2 = %q", got)
	}
	if got := readAll(t, l, 9); len(got) != 0 {
		t.Fatalf("rows past end = %q", got)
	}
	if _, err := l.Read(-1, 10, func(int64, []byte) error { return nil }); err == nil {
		t.Fatal("Read from -1 succeeded")
	}
	stop := errors.New("stop")
	next, err := l.Read(1, 10, func(off int64, _ []byte) error {
		if off == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || next != 2 {
		t.Fatalf("Read with failing fn = %d, %v", next, err)
	}
	// Another table has its own offsets.
	if res := mustAppend(t, openLogT(t, m, 8), rowsOf("x"), ""); res.First != 0 {
		t.Fatalf("second table starts at %d", res.First)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, rowsOf("z"), ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with cancelled ctx: %v", err)
	}
}

func TestLogReadPaging(t *testing.T) {
	m := openMeta(t, t.TempDir(), MetaOptions{})
	l := openLogT(t, m, 1)
	var rows [][]byte
	for i := range 250 {
		rows = append(rows, []byte(fmt.Sprint(i)))
	}
	mustAppend(t, l, rows[:120], "")
	mustAppend(t, l, rows[120:], "")
	var got []string
	from := int64(0)
	var pages []int64
	for {
		next, err := l.Read(from, 100, func(off int64, row []byte) error {
			if string(row) != fmt.Sprint(off) {
				return fmt.Errorf("row %d = %q", off, row)
			}
			got = append(got, string(row))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next == from {
			break
		}
		pages = append(pages, next)
		from = next
	}
	if !slices.Equal(pages, []int64{100, 200, 250}) || len(got) != 250 {
		t.Fatalf("pages %v, %d rows", pages, len(got))
	}
	if next, err := l.Read(10, 0, func(int64, []byte) error { return nil }); next != 10 || err != nil {
		t.Fatalf("Read max 0 = %d, %v", next, err)
	}
}

func TestLogGroupCommit(t *testing.T) {
	rec := &SyncRecorder{}
	m := openMeta(t, t.TempDir(), MetaOptions{WrapSync: rec.Wrap})
	l := openLogT(t, m, 3)

	// Hold the first group in its sync, queue more appends behind it: they
	// must all go in the next group, with a single sync.
	started, release := rec.HoldNext()
	defer release()
	type answer struct {
		idx  int
		res  AppendResult
		err  error
		rows [][]byte
	}
	answers := make(chan answer, 64)
	appendAsync := func(idx int, rows [][]byte, key string) {
		go func() {
			res, err := l.Append(context.Background(), rows, key)
			answers <- answer{idx, res, err, rows}
		}()
	}
	appendAsync(-1, rowsOf("first"), "")
	<-started
	const queued = 40
	for i := range queued {
		rows := make([][]byte, 1+i%4)
		for j := range rows {
			rows[j] = fmt.Appendf(nil, "w%d-%d", i, j)
		}
		key := ""
		if i == 10 || i == 11 {
			key = "same-key" // two requests with one key (and rows) in one group
			rows = [][]byte{[]byte("w10-0"), []byte("w10-1"), []byte("w10-2")}
		}
		appendAsync(i, rows, key)
	}
	// Wait until every request is in the appender's queue (not merely on
	// its way), so the next group is sure to take them all.
	for len(l.reqs) < queued {
		runtime.Gosched()
	}
	if l.End() != 0 {
		t.Fatalf("End advanced to %d before the sync", l.End())
	}
	if len(answers) != 0 {
		t.Fatal("an Append returned while its group's sync was held")
	}
	syncsBefore := rec.Count()
	release()

	byOffset := map[int64]string{}
	dups := 0
	var dupRes, firstRes AppendResult
	for range queued + 1 {
		a := <-answers
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.res.Duplicate {
			dups++
			dupRes = a.res
			continue
		}
		if a.res.Accepted != len(a.rows) || a.res.Last-a.res.First+1 != int64(len(a.rows)) {
			t.Fatalf("answer %+v for %d rows", a.res, len(a.rows))
		}
		if a.idx == 10 || a.idx == 11 {
			firstRes = a.res
		}
		for j, r := range a.rows {
			off := a.res.First + int64(j)
			if _, dup := byOffset[off]; dup {
				t.Fatalf("offset %d assigned twice", off)
			}
			byOffset[off] = string(r)
		}
	}
	if got := rec.Count() - syncsBefore; got != 1 {
		t.Fatalf("%d syncs for one queued group, want 1", got)
	}
	if dups != 1 || dupRes.First != firstRes.First || dupRes.Last != firstRes.Last || dupRes.Accepted != firstRes.Accepted {
		t.Fatalf("same key in one group: %d duplicates, dup %+v, first %+v", dups, dupRes, firstRes)
	}
	end := l.End()
	if int64(len(byOffset)) != end {
		t.Fatalf("End %d, %d rows answered", end, len(byOffset))
	}
	rows := readAll(t, l, 0)
	for off, r := range rows {
		if byOffset[int64(off)] != r {
			t.Fatalf("row %d = %q, answered %q", off, r, byOffset[int64(off)])
		}
	}
}

func TestLogConcurrentAppenders(t *testing.T) {
	rec := &SyncRecorder{}
	m := openMeta(t, t.TempDir(), MetaOptions{WrapSync: rec.Wrap})
	l := openLogT(t, m, 1)
	const writers, each = 16, 25
	var mu sync.Mutex
	byOffset := map[int64]string{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rows := make([][]byte, 1+(w+i)%3)
				for j := range rows {
					rows[j] = fmt.Appendf(nil, "%d/%d/%d", w, i, j)
				}
				res, err := l.Append(context.Background(), rows, fmt.Sprintf("%d/%d", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				if res.Duplicate || res.Accepted != len(rows) {
					t.Errorf("answer %+v", res)
					return
				}
				if l.End() <= res.Last {
					t.Errorf("acknowledged up to %d with End %d", res.Last, l.End())
				}
				mu.Lock()
				for j, r := range rows {
					off := res.First + int64(j)
					if _, ok := byOffset[off]; ok {
						t.Errorf("offset %d assigned twice", off)
					}
					byOffset[off] = string(r)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	rows := readAll(t, l, 0)
	if int64(len(rows)) != l.End() || len(rows) != len(byOffset) {
		t.Fatalf("%d rows, End %d, %d answered", len(rows), l.End(), len(byOffset))
	}
	for off, r := range rows {
		if byOffset[int64(off)] != r {
			t.Fatalf("row %d = %q, answered %q", off, r, byOffset[int64(off)])
		}
	}
	t.Logf("%d appends in %d syncs", writers*each, rec.Count())
}

func TestLogIdempotency(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := openLogT(t, m, 5)
	mustAppend(t, l, rowsOf("before"), "")
	first := mustAppend(t, l, rowsOf("a", "b"), "key-1")
	if first.Duplicate || first.First != 1 || first.Last != 2 {
		t.Fatalf("first = %+v", first)
	}
	again := mustAppend(t, l, rowsOf("a", "b"), "key-1")
	want := first
	want.Duplicate = true
	if again != want {
		t.Fatalf("repeat = %+v, want %+v", again, want)
	}
	if l.End() != 3 {
		t.Fatalf("End after duplicate = %d", l.End())
	}
	// The same key on another table is unrelated.
	other := mustAppend(t, openLogT(t, m, 6), rowsOf("o"), "key-1")
	if other.Duplicate {
		t.Fatal("key shared across tables")
	}
	// An empty request with a key is remembered too.
	empty := mustAppend(t, l, nil, "key-empty")
	if empty.Duplicate || empty.First != 3 || empty.Last != 2 {
		t.Fatalf("empty with key = %+v", empty)
	}
	mustAppend(t, l, rowsOf("c"), "")
	if got := mustAppend(t, l, nil, "key-empty"); !got.Duplicate || got.First != 3 || got.Last != 2 {
		t.Fatalf("empty repeat = %+v", got)
	}

	// The key carries a TTL of the idempotency window.
	txn := m.db.NewTransaction(false)
	var expires uint64
	opts := badger.DefaultIteratorOptions
	opts.Prefix = tableKey(metaIdem, 5)
	it := txn.NewIterator(opts)
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		expires = it.Item().ExpiresAt()
		n++
	}
	it.Close()
	txn.Discard()
	if n != 2 || expires == 0 {
		t.Fatalf("%d idempotency records, expires at %d", n, expires)
	}

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMeta(t, dir, MetaOptions{})
	l = openLogT(t, m, 5)
	if got := mustAppend(t, l, rowsOf("a", "b"), "key-1"); got != want {
		t.Fatalf("repeat after reopen = %+v, want %+v", got, want)
	}
	if got := readAll(t, l, 0); !slices.Equal(got, []string{"before", "a", "b", "c"}) {
		t.Fatalf("rows = %q", got)
	}
}

func TestLogPersistence(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := openLogT(t, m, 9)
	mustAppend(t, l, rowsOf("a", "b"), "")
	mustAppend(t, l, rowsOf("c"), "")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), rowsOf("x"), ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	select {
	case <-l.Changed():
	default:
		t.Fatal("Changed not closed by Close")
	}
	if _, err := l.Read(0, 10, func(int64, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}

	m = openMeta(t, dir, MetaOptions{})
	l = openLogT(t, m, 9)
	if l.End() != 3 {
		t.Fatalf("End after reopen = %d", l.End())
	}
	if res := mustAppend(t, l, rowsOf("d"), ""); res.First != 3 {
		t.Fatalf("append after reopen = %+v", res)
	}
	if got := readAll(t, l, 0); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("rows = %q", got)
	}
}

// TestLogLargeRequest appends a request bigger than one Badger transaction,
// and checks that rows left above the persisted end (as by a crash in the
// middle of such a request) are invisible and overwritten.
func TestLogLargeRequest(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := openLogT(t, m, 2)
	mustAppend(t, l, rowsOf("r0"), "")

	// Debris above the end offset.
	txn := m.db.NewTransaction(true)
	for off := int64(1); off < 5; off++ {
		k := binary8(tableKey(metaRow, 2), uint64(off))
		if err := txn.Set(k, []byte("debris")); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 0); !slices.Equal(got, []string{"r0"}) {
		t.Fatalf("debris visible: %q", got)
	}
	// As after a crash: the open deletes chunks at or above the end.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = OpenMeta(dir, MetaOptions{}); err != nil {
		t.Fatal(err)
	}
	l = openLogT(t, m, 2)
	if got := rowOffsets(t, m, 2); !slices.Equal(got, []int64{0}) {
		t.Fatalf("rows after reopen with debris: %v", got)
	}

	const n = 60000
	payload := make([]byte, 100)
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = fmt.Appendf(payload[:0:0], "%06d-%s", i, payload)
	}
	if int64(n*100) < 2*m.db.MaxBatchSize() {
		t.Fatal("request too small to need several transactions")
	}
	res := mustAppend(t, l, rows, "big")
	if res.First != 1 || res.Last != n || res.Accepted != n {
		t.Fatalf("big append = %+v", res)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMeta(t, dir, MetaOptions{})
	l = openLogT(t, m, 2)
	if l.End() != n+1 {
		t.Fatalf("End after reopen = %d", l.End())
	}
	got := readAll(t, l, 0)
	for i := 1; i <= n; i++ {
		if got[i] != string(rows[i-1]) {
			t.Fatalf("row %d = %.20q, want %.20q", i, got[i], rows[i-1])
		}
	}
}

func binary8(prefix []byte, v uint64) []byte {
	k := append([]byte(nil), prefix...)
	for i := 7; i >= 0; i-- {
		k = append(k, byte(v>>(8*i)))
	}
	return k
}

// persistedEnd reads the end offset committed for table id, which may be
// ahead of Log.End while its sync has not returned.
func persistedEnd(m *Meta, id uint64) int64 {
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	v, err := getBE8(txn, tableKey(metaEnd, id))
	if err != nil {
		return -1
	}
	return int64(v)
}

// TestLogSyncFailure checks through the sync seam that nothing is
// acknowledged or made visible unless the sync succeeded.
func TestLogSyncFailure(t *testing.T) {
	rec := &SyncRecorder{}
	m := openMeta(t, t.TempDir(), MetaOptions{WrapSync: rec.Wrap})
	l := openLogT(t, m, 4)
	mustAppend(t, l, rowsOf("ok"), "")
	ch := l.Changed()
	boom := errors.New("injected fsync failure")
	rec.SetProbe(func() string { return fmt.Sprintf("end=%d persisted=%d", l.End(), persistedEnd(m, 4)) })
	rec.FailNext(boom)
	n := rec.Count()

	res, err := l.Append(context.Background(), rowsOf("lost-1", "lost-2"), "key")
	rec.Note(fmt.Sprintf("answered %v", err))
	if !errors.Is(err, boom) {
		t.Fatalf("Append with failing sync = %+v, %v", res, err)
	}
	// The group was committed (persisted end 3) before the sync; the sync
	// failed; End stayed; only then was the caller answered.
	want := []string{
		fmt.Sprintf("sync %d start [end=1 persisted=3]", n+1),
		fmt.Sprintf("sync %d failed [end=1 persisted=3]: %v", n+1, boom),
		"note answered log 4 append: sync: " + boom.Error(),
	}
	if got := eventStrings(rec.Events()); !slices.Equal(got[len(got)-3:], want) {
		t.Fatalf("events\n%s\nwant the last ones\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if l.End() != 1 {
		t.Fatalf("End advanced to %d after a failed sync", l.End())
	}
	select {
	case <-ch:
		t.Fatal("Changed fired after a failed sync")
	default:
	}
	if got := readAll(t, l, 0); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("readers see %q", got)
	}
	// The log refuses further appends, even once syncs work again: its
	// on-disk state is unknown until reopened.
	if _, err := l.Append(context.Background(), rowsOf("next"), ""); err == nil {
		t.Fatal("Append after a failed sync succeeded")
	}
	if l.End() != 1 {
		t.Fatalf("End = %d", l.End())
	}
	rec.SetProbe(nil)
	// Other tables are unaffected.
	mustAppend(t, openLogT(t, m, 5), rowsOf("x"), "")
	// Catalog writes report sync failures too.
	rec.FailNext(boom)
	if err := m.PutCatalog("k", nil); !errors.Is(err, boom) {
		t.Fatalf("PutCatalog with failing sync: %v", err)
	}
	rec.FailNext(boom)
	if _, err := m.NextSeq("s"); !errors.Is(err, boom) {
		t.Fatalf("NextSeq with failing sync: %v", err)
	}
}

func eventStrings(evs []SyncEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	return out
}

// TestLogAnswersAfterSync checks, under concurrent appends, that every
// answer comes after the return of a sync that started once the answered
// rows were committed.
func TestLogAnswersAfterSync(t *testing.T) {
	rec := &SyncRecorder{}
	m := openMeta(t, t.TempDir(), MetaOptions{WrapSync: rec.Wrap})
	l := openLogT(t, m, 1)
	rec.SetProbe(func() string { return fmt.Sprint(persistedEnd(m, 1)) })
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				res, err := l.Append(context.Background(), rowsOf(fmt.Sprint(w, i), "x"), "")
				if err != nil {
					t.Error(err)
					return
				}
				rec.Note(fmt.Sprint(res.Last))
			}
		})
	}
	wg.Wait()
	started := map[int]int64{} // sync -> persisted end when it started
	synced := int64(0)         // highest persisted end covered by a returned sync
	answers := 0
	for _, e := range rec.Events() {
		var v int64
		if _, err := fmt.Sscan(e.Text, &v); err != nil {
			t.Fatalf("event %v: %v", e, err)
		}
		switch e.Kind {
		case SyncStarted:
			started[e.Sync] = v
		case SyncReturned:
			if e.Err != nil {
				t.Fatalf("event %v", e)
			}
			synced = max(synced, started[e.Sync])
		case SyncNote:
			answers++
			if v >= synced {
				t.Fatalf("row %d answered when syncs covered rows below %d only", v, synced)
			}
		}
	}
	if answers != writers*each {
		t.Fatalf("%d answers", answers)
	}
}

func TestLogDrop(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l1, l2 := openLogT(t, m, 1), openLogT(t, m, 2)
	mustAppend(t, l1, rowsOf("a", "b"), "k1")
	mustAppend(t, l2, rowsOf("c"), "k1")
	// Appends to another table keep working while one is dropped.
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 20 {
			if _, err := l2.Append(context.Background(), rowsOf("more"), ""); err != nil {
				t.Error(err)
				return
			}
		}
	})
	if err := l1.Drop(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := l1.Append(context.Background(), rowsOf("x"), ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Drop: %v", err)
	}
	check := func(m *Meta) {
		t.Helper()
		l := openLogT(t, m, 1)
		if l.End() != 0 {
			t.Fatalf("dropped log End = %d", l.End())
		}
		if got := readAll(t, l, 0); len(got) != 0 {
			t.Fatalf("dropped log rows %q", got)
		}
		txn := m.db.NewTransaction(false)
		defer txn.Discard()
		for _, p := range [][]byte{tableKey(metaRow, 1), tableKey(metaIdem, 1)} {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = p
			it := txn.NewIterator(opts)
			it.Rewind()
			if it.Valid() {
				t.Fatalf("key %q left after drop", it.Item().Key())
			}
			it.Close()
		}
		l2 := openLogT(t, m, 2)
		if l2.End() != 21 {
			t.Fatalf("other table End = %d", l2.End())
		}
	}
	check(m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	check(openMeta(t, dir, MetaOptions{}))
}

// TestMetaValueLog: rows long enough go to the value log and read back the
// same, also after a reopen and a value-log GC round; GC on a closed Meta
// fails with ErrClosed. (That GC reclaims truncated rows' space needs
// compactions of hundreds of MB: see the commit that added it.)
func TestMetaValueLog(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenMeta(dir, MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("v", 2*metaValueThreshold)
	l := openLogT(t, m, 1)
	mustAppend(t, l, rowsOf("short", long, long+"2"), "")
	if err := l.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectGarbage(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 1); !slices.Equal(got, []string{long, long + "2"}) {
		t.Fatalf("rows %q", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectGarbage(); !errors.Is(err, ErrClosed) {
		t.Fatalf("CollectGarbage after Close: %v", err)
	}
	m = openMeta(t, dir, MetaOptions{})
	if got := readAll(t, openLogT(t, m, 1), 1); !slices.Equal(got, []string{long, long + "2"}) {
		t.Fatalf("rows after reopen %q", got)
	}
}
