package runtime

import (
	"fmt"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
)

// TestNexmarkResumesOnSchedule: a throttled generator restored at a
// position has that position due at once and goes on at its rate, instead
// of waiting until as many events are due again.
func TestNexmarkResumesOnSchedule(t *testing.T) {
	src := &plan.Source{Schema: nexmark.Columns(nexmark.Bid), EventTime: -1,
		Attrs: map[string]string{"kind": "bid", "events_per_second": "1000"}}
	const now = 1_000_000
	r, err := newNexmarkReader(src, 5000, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &op.Batch{}
	n, err := r.Poll(now, 1000, b)
	if err != nil || n == 0 {
		t.Fatalf("right after a restore at bid 5000: read %d rows (%v), want some", n, err)
	}
	if b.Meta[0].Offset != 5000 {
		t.Fatalf("first row at offset %d, want 5000", b.Meta[0].Offset)
	}
	// One second later about a second's worth of bids (46 of 50 events) more.
	m, _ := r.Poll(now+1000, 10_000, &op.Batch{})
	if m < 900 || m > 940 {
		t.Fatalf("a second later: %d more bids, want about 920 at 1000 events/s", m)
	}
}

// TestNexmarkEndsAtTheTimeRange: a generator whose event times would pass
// the TIMESTAMP range (a base_time near its end) ends before the first
// event that would, instead of producing it (issue 15 item 5).
func TestNexmarkEndsAtTheTimeRange(t *testing.T) {
	src := &plan.Source{Schema: nexmark.Columns(nexmark.Auction), EventTime: -1,
		Attrs: map[string]string{"kind": "auction", "base_time": fmt.Sprint(plan.MaxTime - 60_000)}}
	r, err := newNexmarkReader(src, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for i := 0; i < 1000 && !r.Done(); i++ {
		b := &op.Batch{}
		n, err := r.Poll(0, 1000, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			for _, v := range row {
				if v.K == plan.TypeTimestamp && !plan.TimeInRange(v.I) {
					t.Fatalf("row %d: %v past the TIMESTAMP range", rows, row)
				}
			}
			rows++
		}
		if n == 0 && !r.Done() {
			t.Fatal("no rows and not done")
		}
	}
	if !r.Done() || rows == 0 {
		t.Fatalf("done %v after %d rows", r.Done(), rows)
	}
	if n, _ := r.Poll(0, 1000, &op.Batch{}); n != 0 {
		t.Fatalf("%d rows after the end", n)
	}
}
