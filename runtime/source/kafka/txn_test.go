package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func begin(t testing.TB, cl *kgo.Client) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
}

func end(t testing.TB, cl *kgo.Client, commit kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.EndTransaction(testCtx(t), commit); err != nil {
		t.Fatal(err)
	}
}

// TestReadCommitted: records of an open transaction are not handed out
// (nor anything after them in their partition) until it commits; records
// of aborted transactions never are; markers are not handed out, and
// after everything committed Position equals EndOffsets, also when the
// last thing in a partition is an abort marker.
func TestReadCommitted(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(2, "t"))
	plain := newProducer(t, addr)
	tx := newTxProducer(t, addr, "tx-1")

	// Partition 0: r1 (offset 0); the open transaction's a1 a2 (1, 2);
	// r2 (3), produced while it is open.
	want := produce(t, plain, mk("t", 0, "r1", "1", 0))
	begin(t, tx)
	open := produce(t, tx, mk("t", 0, "a1", "2", 0), mk("t", 0, "a2", "3", 0))
	after := produce(t, plain, mk("t", 0, "r2", "4", 0))
	if open[0].Offset != 1 || after[0].Offset != 3 {
		t.Fatalf("offsets: open transaction at %d, r2 at %d", open[0].Offset, after[0].Offset)
	}

	c := newConsumer(t, addr, "t")
	if o := startOffsets(t, c, true); !equalOffsets(o, map[int32]int64{0: 1, 1: 0}) {
		t.Fatalf("latest with an open transaction: %v, want the last stable offsets", o)
	}
	start(t, c, startOffsets(t, c, false))
	// A record of partition 1 produced after the transaction's records:
	// once it is read, fetches of partition 0 came back since.
	sentinel := produce(t, plain, mk("t", 1, "s", "5", 0))
	got := pollUntil(t, c, 0, "r1 and the sentinel", func(g []Record) bool { return len(g) >= 2 })
	checkRecords(t, got, append(want, sentinel...))
	for i := 0; i < 3; i++ {
		// And once more a fetch round: the record after the sentinel.
		more := produce(t, plain, mk("t", 1, "s", "more", 0))
		sentinel = append(sentinel, more...)
		got = append(got, pollUntil(t, c, 0, "the next sentinel", func(g []Record) bool { return len(g) >= 1 })...)
	}
	checkRecords(t, got, append(want, sentinel...))
	if pos := c.Position(); pos[0] != 1 {
		t.Fatalf("Position %v, want partition 0 held at the open transaction (1)", pos)
	}

	// Commit: a1 a2, then the marker (3, not handed out), then r2.
	end(t, tx, kgo.TryCommit)
	ends := endOffsets(t, c)
	if ends[0] != 5 {
		t.Fatalf("EndOffsets %v, want 5 in partition 0 (4 records and a marker)", ends)
	}
	got = append(got, readTo(t, c, 0, ends)...)
	want = append(append(want, open...), after...)
	// r2 was written at 3 before the marker; the broker placed it there.
	checkRecords(t, got, append(want, sentinel...))
	if pos := c.Position(); !equalOffsets(pos, ends) {
		t.Fatalf("Position %v after the commit, want EndOffsets %v", pos, ends)
	}

	// An aborted transaction, last in partition 0; in partition 1 it is
	// followed by a committed one.
	begin(t, tx)
	produce(t, tx, mk("t", 0, "b1", "x", 0), mk("t", 0, "b2", "x", 0), mk("t", 1, "b3", "x", 0))
	end(t, tx, kgo.TryAbort)
	begin(t, tx)
	committed := produce(t, tx, mk("t", 1, "c1", "6", 0))
	end(t, tx, kgo.TryCommit)
	ends = endOffsets(t, c)
	if ends[0] != 8 || ends[1] != 8 {
		// p0: 5 + b1 b2 + abort marker; p1: 4 sentinels + b3 + marker + c1 + marker.
		t.Fatalf("EndOffsets %v, want {0:8 1:8}", ends)
	}
	got = append(got, readTo(t, c, 2, ends)...)
	checkRecords(t, got, append(append(want, sentinel...), committed...))
	if pos := c.Position(); !equalOffsets(pos, ends) {
		t.Fatalf("Position %v, want EndOffsets %v (markers and aborted records passed)", pos, ends)
	}

	// A consumer resuming at those positions reads nothing old, and a
	// consumer replaying from the start reads the same records.
	c2 := newConsumer(t, addr, "t")
	start(t, c2, c.Position())
	last := produce(t, plain, mk("t", 0, "z", "7", 0))
	checkRecords(t, pollUntil(t, c2, 0, "the record after the resume", func(g []Record) bool { return len(g) >= 1 }), last)
	c3 := newConsumer(t, addr, "t")
	start(t, c3, map[int32]int64{0: 0, 1: 0})
	checkRecords(t, readTo(t, c3, 3, endOffsets(t, c3)), append(append(append(want, sentinel...), committed...), last...))
}

// TestAbortedOnly: a partition holding only an aborted transaction: no
// record, Position at its end.
func TestAbortedOnly(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	tx := newTxProducer(t, addr, "tx-2")
	begin(t, tx)
	produce(t, tx, mk("t", 0, "a", "1", 0), mk("t", 0, "b", "2", 0), mk("t", 0, "c", "3", 0))
	end(t, tx, kgo.TryAbort)
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 0})
	ends := endOffsets(t, c)
	if ends[0] != 4 {
		t.Fatalf("EndOffsets %v, want 4", ends)
	}
	if got := readTo(t, c, 0, ends); len(got) != 0 {
		t.Fatalf("records of an aborted transaction handed out: %s", recsString(got))
	}
	if pos := c.Position(); pos[0] != 4 {
		t.Fatalf("Position %v, want 4", pos)
	}
}

// TestPollSkipsMarkers: markers count for nothing in Poll's max; a Poll
// that hands out nothing has drained every marker kgo had buffered.
func TestPollSkipsMarkers(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	tx := newTxProducer(t, addr, "tx-3")
	var want []*kgo.Record
	for i := 0; i < 5; i++ {
		begin(t, tx)
		want = append(want, produce(t, tx, mk("t", 0, "k", fmt.Sprint(i), 0))...)
		end(t, tx, kgo.TryCommit)
	}
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 0})
	cl, _ := c.client()
	deadline := time.Now().Add(waitFor)
	for cl.BufferedFetchRecords() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("kgo buffered %d records and markers, want 10", cl.BufferedFetchRecords())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var got []Record
	for i := 0; i < 5; i++ {
		if n := c.Poll(1, func(r *Record) { got = append(got, *r) }); n != 1 {
			t.Fatalf("Poll(1) #%d = %d with records buffered", i, n)
		}
		if pos := c.Position()[0]; pos != int64(2*i+1) {
			t.Fatalf("Position %d after record %d, want %d", pos, i, 2*i+1)
		}
	}
	checkRecords(t, got, want)
	if n := c.Poll(1, func(r *Record) { t.Fatalf("extra record %+v", *r) }); n != 0 {
		t.Fatalf("last Poll = %d", n)
	}
	if pos := c.Position()[0]; pos != 10 || cl.BufferedFetchRecords() != 0 {
		t.Fatalf("Position %d, %d left buffered; want 10, 0", pos, cl.BufferedFetchRecords())
	}
}
