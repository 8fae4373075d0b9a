package runtime

import (
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
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
	b := &Batch{}
	n, err := r.Poll(now, 1000, b)
	if err != nil || n == 0 {
		t.Fatalf("right after a restore at bid 5000: read %d rows (%v), want some", n, err)
	}
	if b.Meta[0].Offset != 5000 {
		t.Fatalf("first row at offset %d, want 5000", b.Meta[0].Offset)
	}
	// One second later about a second's worth of bids (46 of 50 events) more.
	m, _ := r.Poll(now+1000, 10_000, &Batch{})
	if m < 900 || m > 940 {
		t.Fatalf("a second later: %d more bids, want about 920 at 1000 events/s", m)
	}
}
