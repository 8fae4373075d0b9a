package queries

import (
	"context"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestDemo: the demo creates its tables and views once (a restart keeps
// them), in the emit modes and shapes it promises, and they produce rows.
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
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, rows, err := e.Results("bids_per_channel", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo produced no rows in 20 s")
		}
		time.Sleep(50 * time.Millisecond)
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
