package runtime

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
)

// bidCatalog is the Nexmark bid table, for planning SQL over it.
type bidCatalog struct{}

func (bidCatalog) Table(n string) (*plan.TableDef, bool) {
	if n != "bid" {
		return nil, false
	}
	cols := nexmark.Columns(nexmark.Bid)
	return &plan.TableDef{Name: "bid", ID: 1, Engine: "mem", Columns: cols, EventTime: cols.Index("date_time")}, true
}
func (bidCatalog) View(string) (*plan.ViewDef, bool)        { return nil, false }
func (bidCatalog) ViewSelect(string) (*parser.Select, bool) { return nil, false }

func planBids(t *testing.T, sql string, par int) *plan.Graph {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	g, err := planner.Query(stmts[0].Stmt.(*parser.Select), bidCatalog{}, plan.Options{Parallelism: par, CheckpointInterval: 50, EmitInterval: 10}, "t", plan.SinkResults)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRestoreChangelogMatchesNaive runs queries over updating inputs (an
// aggregation over a running aggregate, with MIN, MAX and COUNT(DISTINCT)
// retracted; a LEFT join of two running aggregates) at parallelism 1,
// checkpoints, loses the work after the checkpoint, and resumes at
// parallelism 2 from it: the committed results equal a naive evaluation.
// Bags, held join rows and their counts are restored by group and join
// key at the other parallelism.
func TestRestoreChangelogMatchesNaive(t *testing.T) {
	const events = 20000
	all := bidRows(events)
	n := len(all)
	cols := nexmark.Columns(nexmark.Bid)
	ac, pc := cols.Index("auction"), cols.Index("price")
	// The inner aggregates: bids and top price per auction, and the top
	// price of the auctions' bids above the median.
	bids, top, topHigh := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
	for _, r := range all {
		a, p := r[ac].I, r[pc].I
		bids[a]++
		top[a] = max(top[a], p)
		if p > 5_000_000 {
			topHigh[a] = max(topHigh[a], p)
		}
	}
	type hist struct{ auctions, lo, hi, distinct int64 }
	wantHist := map[int64]*hist{}
	tops := map[int64]map[int64]bool{}
	for a, b := range bids {
		h := wantHist[b]
		if h == nil {
			h = &hist{lo: top[a], hi: top[a]}
			wantHist[b], tops[b] = h, map[int64]bool{}
		}
		h.auctions++
		h.lo, h.hi = min(h.lo, top[a]), max(h.hi, top[a])
		tops[b][top[a]] = true
	}
	for b, h := range wantHist {
		h.distinct = int64(len(tops[b]))
	}
	cases := []struct {
		name  string
		sql   string
		check func(t *testing.T, rows []plan.Row)
	}{
		{"aggregation over a running aggregate",
			"SELECT bids, COUNT(*) AS auctions, MIN(top) AS lo, MAX(top) AS hi, COUNT(DISTINCT top) AS d FROM (SELECT auction, COUNT(*) AS bids, MAX(price) AS top FROM bid GROUP BY auction) a GROUP BY bids",
			func(t *testing.T, rows []plan.Row) {
				if len(rows) != len(wantHist) {
					t.Fatalf("%d bid counts, want %d", len(rows), len(wantHist))
				}
				for _, r := range rows {
					w := wantHist[r[0].I]
					if w == nil || (hist{r[1].I, r[2].I, r[3].I, r[4].I}) != *w {
						t.Fatalf("bids %d: got %v, want %+v", r[0].I, r, w)
					}
				}
			}},
		{"LEFT join of two running aggregates",
			"SELECT x.auction, x.bids, y.top FROM (SELECT auction, COUNT(*) AS bids FROM bid GROUP BY auction) x LEFT JOIN (SELECT auction, MAX(price) AS top FROM bid WHERE price > 5000000 GROUP BY auction) y ON x.auction = y.auction",
			func(t *testing.T, rows []plan.Row) {
				if len(rows) != len(bids) {
					t.Fatalf("%d joined rows, want %d (one per auction)", len(rows), len(bids))
				}
				for _, r := range rows {
					a := r[0].I
					wantTop, has := topHigh[a]
					if r[1].I != bids[a] || r[2].IsNull() == has || has && r[2].I != wantTop {
						t.Fatalf("auction %d: got %v, want bids %d top %d (matched %v)", a, r, bids[a], wantTop, has)
					}
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := state.NewMemVersioned()
				run := func(par int, rows []plan.Row, checkpointAt int) {
					g := planBids(t, c.sql, par)
					var readers []*memReader
					deps := Deps{Store: store, Reader: func(_ *plan.Source, at SourcePosition, _ []bool) (Reader, error) {
						rd := &memReader{ready: make(chan struct{}), off: at.Offset}
						readers = append(readers, rd)
						return rd, nil
					}}
					res := NewResults(store, 3)
					job, err := Start(g, deps, StartOptions{QueryID: 3, Name: "t", Results: res})
					if err != nil {
						t.Fatal(err)
					}
					add := func(rs []plan.Row) {
						for _, rd := range readers {
							rd.add(rs...)
						}
					}
					ctx := context.Background()
					add(rows[:checkpointAt])
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					add(rows[checkpointAt:])
					if len(rows) < n {
						// Let the rows after the checkpoint be processed, then
						// stop without a checkpoint: a crash's worth of work lost.
						for job.Status().Offsets["bid"] < int64(len(rows)) {
							time.Sleep(time.Millisecond)
						}
						job.Stop()
						return
					}
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					job.Stop()
					got, err := res.Rows(true)
					if err != nil {
						t.Fatal(err)
					}
					c.check(t, got)
				}
				run(1, all[:n*2/3], n/3) // checkpoint at 1/3, stop at 2/3
				run(2, all, n/2)         // resume from 1/3 at parallelism 2
			})
		})
	}
}
