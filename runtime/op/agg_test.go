package op

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"sort"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// upserts applies an aggregation's changelog to a map from upsert key to
// the row's text.
type upserts map[string]string

func (u upserts) Emit(b *Batch) error {
	for i, m := range b.Meta {
		if m.Op == Delete {
			delete(u, m.Key)
			continue
		}
		u[m.Key] = fmt.Sprint(b.Rows[i])
	}
	return nil
}

// sessionOracle computes the final rows of sessionDistinctSpec over rows
// [ts, k, v] in batch: per key, sorted by time, a row starts a new session
// when it is at or past the current one's end (last + gap).
func sessionOracle(rows []plan.Row, gap int64) map[string]string {
	byKey := map[int64][]plan.Row{}
	for _, r := range rows {
		byKey[r[1].I] = append(byKey[r[1].I], r)
	}
	out := map[string]string{}
	for k, rs := range byKey {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i][0].I < rs[j][0].I })
		for i := 0; i < len(rs); {
			start, end := rs[i][0].I, rs[i][0].I+gap
			n, sum, lo, hi := int64(0), int64(0), int64(math.MaxInt64), int64(math.MinInt64)
			seen := map[int64]bool{}
			for ; i < len(rs) && rs[i][0].I < end; i++ {
				v := rs[i][2].I
				n, sum, lo, hi = n+1, sum+v, min(lo, v), max(hi, v)
				seen[v] = true
				end = max(end, rs[i][0].I+gap)
			}
			row := plan.Row{plan.Time(start), plan.Time(end), plan.Int(k), plan.Int(n), plan.Int(int64(len(seen))), plan.Int(sum), plan.Int(lo), plan.Int(hi)}
			key := string(value.AppendValue(value.AppendValue(value.AppendValue(nil, plan.Time(start)), plan.Time(end)), plan.Int(k)))
			out[key] = fmt.Sprint(row)
		}
	}
	return out
}

// TestSessionDistinctOracle runs random, mostly ordered rows of a few keys
// through sessions of COUNT(*), COUNT(DISTINCT), SUM, MIN and MAX, in both
// emit modes, with checkpoints (bases and deltas of the operator's records,
// as the state log keeps them) and restores from them (the rows since the
// restored checkpoint fed again), and compares the final rows with a batch
// evaluation. Sessions grow by a row at a time, bridge each other and close
// as the watermark passes them, so groups move between windows with their
// sets, are folded into each other and dropped, and their chunk records are
// written, moved and deleted.
func TestSessionDistinctOracle(t *testing.T) {
	for _, mode := range []plan.EmitMode{plan.EmitOnWindowClose, plan.EmitChanges} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("mode%d/seed%d", mode, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				const gap = 40
				spec := sessionDistinctSpec(gap, mode)
				var rows []plan.Row
				ts := int64(1000)
				for range 3000 {
					ts += rng.Int64N(12)
					k := rng.Int64N(4)
					// Disorder below the watermark delay: no row is late.
					rows = append(rows, plan.Row{plan.Time(ts - rng.Int64N(30)), plan.Int(k), plan.Int(rng.Int64N(60))})
				}
				got := upserts{}
				a, err := newHashAgg(spec, &Env{}, &Counters{})
				if err != nil {
					t.Fatal(err)
				}
				var log []byte     // the records since the last base
				logAt := 0         // rows fed before the last checkpoint
				gotAt := upserts{} // the results as of the last checkpoint
				maxTS := int64(math.MinInt64)
				for i := 0; i < len(rows); {
					b := &Batch{}
					for range 1 + rng.IntN(20) {
						if i == len(rows) {
							break
						}
						r := rows[i]
						maxTS = max(maxTS, r[0].I)
						b.Append(slices.Clone(r), RowMeta{Key: string(value.AppendValue(nil, r[1])), WM: maxTS - 200})
						i++
					}
					if err := a.Process(b, got); err != nil {
						t.Fatal(err)
					}
					if rng.IntN(4) > 0 {
						continue
					}
					if err := a.Barrier(Barrier{CheckpointID: 1}, got); err != nil {
						t.Fatal(err)
					}
					w := &LogWriter{all: rng.IntN(5) == 0 || log == nil}
					if err := a.Snapshot(w); err != nil {
						t.Fatal(err)
					}
					if w.all {
						log = nil
					}
					log = append(log, slices.Concat(w.Close()...)...)
					logAt, gotAt = i, maps.Clone(got)
					if rng.IntN(3) > 0 {
						continue
					}
					// Restart from the checkpoint: a new operator restores
					// the log and the rows after it come again.
					r, err := blockReader(log)
					if err != nil {
						t.Fatal(err)
					}
					if a, err = newHashAgg(spec, &Env{}, &Counters{}); err != nil {
						t.Fatal(err)
					}
					if err := a.Restore(r); err != nil {
						t.Fatalf("restore after row %d: %v", i, err)
					}
					// The results go back to the checkpoint, and the rows
					// after it come again.
					got = maps.Clone(gotAt)
					i, maxTS = logAt, int64(math.MinInt64)
					for _, r := range rows[:i] {
						maxTS = max(maxTS, r[0].I)
					}
				}
				if _, err := a.Watermark(math.MaxInt64, got); err != nil {
					t.Fatal(err)
				}
				if err := a.Barrier(Barrier{}, got); err != nil {
					t.Fatal(err)
				}
				want := sessionOracle(rows, gap)
				if !maps.Equal(map[string]string(got), want) {
					for k, v := range want {
						if got[k] != v {
							t.Errorf("session %x: got %q, want %q", k, got[k], v)
						}
					}
					for k, v := range got {
						if _, ok := want[k]; !ok {
							t.Errorf("session %x: got %q, not in the oracle", k, v)
						}
					}
					t.Fatalf("%d sessions, want %d", len(got), len(want))
				}
				if a.StateRows() != 0 || len(a.wins) != 0 || len(a.keys) != 0 || len(a.sessions) != 0 || a.bytes != 0 {
					t.Fatalf("after every session closed: %d groups, %d windows, %d keys, %d session lists, %d bytes", a.StateRows(), len(a.wins), len(a.keys), len(a.sessions), a.bytes)
				}
			})
		}
	}
}

// TestLongSessionLive: a session that grows by one row at a time holds one
// window with one group, a close-order heap of a few entries, and a heap
// proportional to its distinct values. Every row extended the session, and
// the operator made a new group for each extension, copied the distinct
// set into it and kept the old one (dead, with its set) in its window
// until that closed: memory quadratic in the rows (8k rows took 1.6 GB in
// the server) and nothing reported it.
func TestLongSessionLive(t *testing.T) {
	const n = 2000
	rows := longSessionRows(n, 0)
	var before, after goruntime.MemStats
	readHeap(&before)
	a, err := newHashAgg(sessionDistinctSpec(3_600_000, plan.EmitChanges), &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	longSession(t, a, rows)
	readHeap(&after)
	held := 0
	for _, wg := range a.wins {
		held += len(wg.list)
	}
	if len(a.wins) != 1 || held != 1 || len(a.ends) > 2+1024 {
		t.Fatalf("one open session after %d rows: %d windows holding %d groups, %d close-order entries; want 1, 1, a few", n, len(a.wins), held, len(a.ends))
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 200*n {
		t.Fatalf("one session of %d distinct values takes %d bytes of heap, over %d", n, grown, 200*n)
	}
	goruntime.KeepAlive(a)
}

// readHeap collects garbage and reads the heap's figures.
func readHeap(m *goruntime.MemStats) {
	goruntime.GC()
	goruntime.ReadMemStats(m)
}
