package queries

import (
	"context"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// TestDemo: the demo creates its tables and views once (a restart keeps
// them), in the emit modes and shapes it promises, with a results
// retention on every windowed view, and they produce rows.
func TestDemo(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Second, EmitInterval: 20 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Demo(ctx); err != nil {
		t.Fatal(err)
	}
	modes := map[string]plan.EmitMode{}
	for _, q := range e.Queries() {
		modes[q.Name] = e.views[q.Name].Graph.Options.EmitMode
	}
	if len(modes) != 4 || modes["bids_per_channel"] != plan.EmitChanges || modes["hot_auctions"] != plan.EmitOnWindowClose {
		t.Fatalf("demo views: %v", modes)
	}
	// A demo left running stays bounded: every windowed view drops the
	// windows older than the retention; the one append-only view is
	// highest_bid, one row per 10 s window (or a few on a tie).
	retention, err := window.ParseDuration(DemoRetention)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range e.Queries() {
		g := e.views[q.Name].Graph
		switch {
		case g.Key == plan.KeyWindowGroup && g.Options.ResultsRetention != retention:
			t.Errorf("demo view %s keeps its windows for %s, want %s", q.Name, window.FormatDuration(g.Options.ResultsRetention), DemoRetention)
		case g.Key != plan.KeyWindowGroup && q.Name != "highest_bid":
			t.Errorf("demo view %s has %s results, which no retention bounds", q.Name, g.Key)
		}
	}
	// Wait on the view's change stream (it wakes when the query logs a
	// change or a watermark) rather than sleeping between looks.
	changes, err := e.Changes("bids_per_channel", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		_, rows, err := e.Results("bids_per_channel", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			break
		}
		if _, err := changes.Next(wait, 20*time.Second); err != nil || wait.Err() != nil {
			t.Fatalf("the demo produced no rows in 20 s (%v)", err)
		}
	}
	e.Close(ctx)
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if err := e.Demo(ctx); err != nil {
		t.Fatalf("demo after a restart: %v", err)
	}
	if n := len(e.Queries()); n != 4 {
		t.Fatalf("%d queries after a restart", n)
	}
}
