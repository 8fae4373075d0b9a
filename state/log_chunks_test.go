package state

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// chunkOracle is the log as a plain list: every row ever appended by
// offset, the lost offsets, Start, and the requests' offset ranges.
type chunkOracle struct {
	rows  map[int64][]byte
	lost  map[int64]bool
	start int64
	end   int64
	reqs  [][2]int64 // [first, end) of each request that appended rows
	idem  map[string]AppendResult
	body  map[string][][]byte
}

// TestLogChunksRandom runs random appends (rows from 10 bytes to 600 KB,
// so requests span several 1 MiB chunks), idempotent retries, losses,
// truncations, reopens and reads from any offset against chunkOracle.
func TestLogChunksRandom(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testLogChunksRandom(t, seed) })
	}
}

func testLogChunksRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 20))
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	l := openLogT(t, m, 3)
	o := &chunkOracle{rows: map[int64][]byte{}, lost: map[int64]bool{}, idem: map[string]AppendResult{}, body: map[string][][]byte{}}
	row := func(off int) []byte {
		n := 10 + rng.IntN(40)
		if rng.IntN(3) == 0 {
			n = 300<<10 + rng.IntN(300<<10)
		}
		b := bytes.Repeat([]byte{byte('a' + off%26)}, n)
		return fmt.Appendf(b[:0], "row-%d-%d:", seed, off)[:n:n]
	}
	check := func(step int) {
		t.Helper()
		for range 6 {
			from := o.start + rng.Int64N(o.end-o.start+1)
			if rng.IntN(5) == 0 && o.start > 0 {
				from = rng.Int64N(o.start)
			}
			max := 1 + rng.IntN(12)
			var got []int64
			next, err := l.Read(from, max, func(off int64, r []byte) error {
				if !bytes.Equal(r, o.rows[off]) {
					return fmt.Errorf("row %d: %.20q, want %.20q", off, r, o.rows[off])
				}
				got = append(got, off)
				return nil
			})
			if from < o.start {
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("step %d: Read(%d) below start %d: %v", step, from, o.start, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: Read(%d, %d): %v", step, from, max, err)
			}
			var want []int64
			for off := from; off < o.end && len(want) < max; off++ {
				if !o.lost[off] {
					want = append(want, off)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d: Read(%d, %d) = %v, want %v", step, from, max, got, want)
			}
			if n := len(got); n > 0 && next < got[n-1]+1 {
				t.Fatalf("step %d: Read(%d, %d) next %d after row %d", step, from, max, next, got[n-1])
			}
		}
		// Nothing retained below Start but the chunks of the last request
		// that began below it (a chunk straddling Start stays whole).
		var keep [2]int64
		for _, r := range o.reqs {
			if r[0] < o.start {
				keep = r
			}
		}
		for _, off := range rowOffsets(t, m, 3) {
			if off < o.start && (off < keep[0] || off >= keep[1]) {
				t.Fatalf("step %d: row %d stored below start %d outside the request %v", step, off, o.start, keep)
			}
		}
	}
	for step := range 60 {
		switch op := rng.IntN(10); {
		case op < 5: // append, maybe with a key, maybe a retry
			key := ""
			if rng.IntN(2) == 0 {
				key = fmt.Sprint("k", rng.IntN(8))
			}
			rows := o.body[key]
			if rows == nil || key == "" || rng.IntN(3) == 0 {
				rows = make([][]byte, 1+rng.IntN(8))
				for i := range rows {
					rows[i] = row(int(o.end) + i)
				}
			}
			res, err := l.Append(t.Context(), rows, key)
			first, seen := o.idem[key]
			var conflict *IdempotencyConflictError
			switch {
			case seen && key != "" && fmt.Sprint(rows) != fmt.Sprint(o.body[key]):
				if !errors.As(err, &conflict) || conflict.First.First != first.First {
					t.Fatalf("step %d: conflicting retry of %q: %+v, %v", step, key, res, err)
				}
			case seen && key != "":
				if err != nil || !res.Duplicate || res.First != first.First || res.Last != first.Last {
					t.Fatalf("step %d: retry of %q = %+v, %v; first %+v", step, key, res, err, first)
				}
			case err != nil:
				t.Fatalf("step %d: append: %v", step, err)
			default:
				if res.First != o.end || res.Accepted != len(rows) {
					t.Fatalf("step %d: append = %+v, end %d", step, res, o.end)
				}
				for i, r := range rows {
					o.rows[res.First+int64(i)] = r
				}
				o.reqs = append(o.reqs, [2]int64{res.First, res.First + int64(len(rows))})
				o.end += int64(len(rows))
				if key != "" {
					o.idem[key], o.body[key] = res, rows
				}
			}
		case op == 5: // a loss proved by a checkpoint
			acked := o.end + 1 + rng.Int64N(4)
			if ok, err := l.CheckAcked(acked, "test"); err != nil || !ok {
				t.Fatalf("step %d: CheckAcked(%d) = %v, %v", step, acked, ok, err)
			}
			for off := o.end; off < acked; off++ {
				o.lost[off] = true
			}
			o.end = acked
		case op < 8: // truncate
			below := o.start + rng.Int64N(o.end-o.start+1)
			mustTruncate(t, l, below)
			o.start = max(o.start, below)
		default: // reopen
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			m = openMeta(t, dir, MetaOptions{})
			l = openLogT(t, m, 3)
			if l.End() != o.end || l.Start() != o.start {
				t.Fatalf("step %d: reopened with [%d, %d), want [%d, %d)", step, l.Start(), l.End(), o.start, o.end)
			}
		}
		if l.End() != o.end || l.Start() != o.start {
			t.Fatalf("step %d: log [%d, %d), oracle [%d, %d)", step, l.Start(), l.End(), o.start, o.end)
		}
		check(step)
	}
}

// TestLogMigratesPerRowLayout opens a log stored one row per key (the
// layout before chunks, with a row below Start and one above End left
// behind): the open rewrites the rows in [Start, End) as chunks and
// deletes the old keys.
func TestLogMigratesPerRowLayout(t *testing.T) {
	dir := t.TempDir()
	m := openMeta(t, dir, MetaOptions{})
	txn := m.db.NewTransaction(true)
	big := bytes.Repeat([]byte("x"), 1000)
	for off, row := range [][]byte{[]byte("r0"), []byte("r1"), big, []byte("r3"), []byte("debris")} {
		if err := txn.Set(binary8(tableKey(metaRowV1, 4), uint64(off)), row); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Set(tableKey(metaEnd, 4), binary8(nil, 4)); err != nil {
		t.Fatal(err)
	}
	if err := txn.Set(tableKey(metaStart, 4), binary8(nil, 1)); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	l := openLogT(t, m, 4)
	if got := readAll(t, l, 1); fmt.Sprint(got) != fmt.Sprint([]string{"r1", string(big), "r3"}) {
		t.Fatalf("rows after migration: %.40q", got)
	}
	if got := keysUnder(t, m, tableKey(metaRowV1, 4)); len(got) != 0 {
		t.Fatalf("%d keys of layout 1 left", len(got))
	}
	if got := rowOffsets(t, m, 4); fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("chunks after migration: %v", got)
	}
	mustAppend(t, l, rowsOf("r4"), "")
	if got := readAll(t, l, 3); fmt.Sprint(got) != "[r3 r4]" {
		t.Fatalf("rows after an append: %q", got)
	}
}
