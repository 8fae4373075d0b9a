package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
)

// roomStore is a store on a disk with room bytes left for state writes: a
// write needing more (keys, values and 64 bytes an entry, as the space
// guard counts) is refused, writing nothing.
type roomStore struct {
	state.Versioned
	room atomic.Int64
}

func (s *roomStore) Write(id uint64, kvs []state.KV) error {
	need := int64(0)
	for _, kv := range kvs {
		need += int64(len(kv.Key)+len(kv.Value)) + 64
	}
	if room := s.room.Load(); need > room {
		return &state.DiskFullError{Dir: "/data/state", Free: room, Need: need, Keep: 8 << 20}
	}
	return s.Versioned.Write(id, kvs)
}

// distinctGraph: SELECT k, COUNT(DISTINCT u) FROM t GROUP BY k over rows
// (k BIGINT, u VARCHAR).
func distinctGraph() *plan.Graph {
	schema := plan.Schema{{Name: "k", Type: plan.TypeBigint}, {Name: "u", Type: plan.TypeVarchar}}
	src := &plan.Source{Table: "t", TableID: 1, Engine: "mem", Schema: schema, EventTime: -1}
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	out := plan.Schema{schema[0], {Name: "n", Type: plan.TypeBigint}}
	agg := &plan.Aggregate{Keys: []int{0}, Aggs: []plan.Agg{{Fn: plan.AggCountDistinct, Arg: 1, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeBigint), col(1, plan.TypeBigint)}, Out: out, EmitMode: plan.EmitChanges}
	return &plan.Graph{
		Options: plan.Options{EmitMode: plan.EmitChanges, Parallelism: 1, CheckpointInterval: 1 << 40, EmitInterval: 10},
		Key:     plan.KeyGroup, Out: out,
		Vertices: []*plan.Vertex{
			{ID: 0, Parallelism: 1, Ops: []plan.Op{src, &plan.Calc{Project: []plan.Expr{col(0, plan.TypeBigint), col(1, plan.TypeVarchar)}, Out: schema}}},
			{ID: 1, Parallelism: 1, Inputs: []plan.Edge{{From: 0, Partition: plan.Hash, KeyCols: []int{0}}},
				Ops: []plan.Op{agg, &plan.Sink{Kind: plan.SinkResults, Name: "t", Key: plan.KeyGroup}}},
		},
	}
}

// TestDiskTightDistinct: a COUNT(DISTINCT) of 20,000 values whose disk has
// no room for a while, rows still arriving, then room for a few times what
// the rows since then take (far less than the set): the next checkpoint
// completes and the query runs again. Each checkpoint rewrote the whole
// set, and each failed one was kept and sent again with the next, so the
// retry needed the set once per failed checkpoint and the query stayed
// retrying however much room came back.
func TestDiskTightDistinct(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &roomStore{Versioned: state.NewMemVersioned()}
		store.room.Store(1 << 40)
		var rd *memReader
		deps := Deps{Store: store, Reader: func(_ *plan.Source, at SourcePosition, _ []bool) (Reader, error) {
			rd = &memReader{ready: make(chan struct{}), off: at.Offset}
			return rd, nil
		}}
		res := NewResults(store, 3)
		job, err := Start(distinctGraph(), deps, StartOptions{QueryID: 3, Name: "t", Results: res})
		if err != nil {
			t.Fatal(err)
		}
		defer job.Stop()
		ctx := context.Background()
		n := 0
		add := func(k int) {
			for range k {
				rd.add(plan.Row{plan.Int(1), plan.Str(fmt.Sprintf("user-%032d", n))})
				n++
			}
		}
		add(20_000)
		if _, err := job.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		store.room.Store(0)
		for range 5 {
			add(200)
			if _, err := job.Checkpoint(ctx); !state.IsDiskFull(err) {
				t.Fatalf("checkpoint with no room: %v", err)
			}
		}
		if st := job.Status(); st.State != StateRetrying {
			t.Fatalf("with no room: state %q", st.State)
		}
		// Room for four times what 1,200 new values take (about 60 bytes a
		// value logged), a twentieth of the set.
		store.room.Store(4 * 1200 * 60)
		add(200)
		if _, err := job.Checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint once room is back: %v", err)
		}
		if st := job.Status(); st.State != StateRunning {
			t.Fatalf("once a checkpoint completed: state %q, error %v", st.State, st.Err)
		}
		rows, err := res.Rows(true)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0][1].I != int64(n) {
			t.Fatalf("committed results %v, want one row counting %d values", rows, n)
		}
	})
}

// TestSuperseded: of the writes kept from failed checkpoints, those whose
// keys the next write writes again (put or delete) are dropped; the rest
// stay, in order.
func TestSuperseded(t *testing.T) {
	kv := func(k string, del bool) state.KV {
		return state.KV{Key: []byte(k), Value: []byte("v" + k), Delete: del}
	}
	kept := []state.KV{kv("a", false), kv("b", false), kv("c", true), kv("d", false)}
	next := []state.KV{kv("a", true), kv("c", false), kv("e", false)}
	var got []string
	for _, w := range superseded(kept, next) {
		got = append(got, string(w.Key))
	}
	if strings.Join(got, ",") != "b,d" {
		t.Fatalf("kept after superseding: %v, want b,d", got)
	}
	if superseded(nil, next) != nil {
		t.Fatal("nothing kept")
	}
}
