package queries

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime/source/nexmark"
)

// cumulateBids computes the cumulate_bids example from the generator's
// events (identityTables' input: the base time 8 s past a 10 s boundary,
// so windows close during the run): for every cumulative window [s,
// s+k*2s) of each 10 s window and auction, the bids with s <= date_time <
// s+k*2s, their count, sum and maximum price. Keyed by start, end and
// auction.
func cumulateBids(events int) map[[3]string][3]int64 {
	in := suiteInput{events: events, base: nexmark.DefaultBaseTime + 8000}
	out := map[[3]string][3]int64{}
	for _, b := range in.rows(nexmark.Bid) {
		at, price := b[nexmark.BidDateTime].I, b[nexmark.BidPrice].I
		// Every cumulative window that contains the bid, tried one by one.
		s := at - ((at%10000)+10000)%10000
		for end := s + 2000; end <= s+10000; end += 2000 {
			if at >= end {
				continue
			}
			k := [3]string{ts(s), ts(end), fmt.Sprint(b[nexmark.BidAuction].I)}
			a := out[k]
			a[0], a[1], a[2] = a[0]+1, a[1]+price, max(a[2], price)
			out[k] = a
		}
	}
	return out
}

// TestCumulateBids runs the cumulate_bids example (CUMULATE(date_time,
// '2s', '10s') per auction) over 60000 generator events, 6 s of event
// time crossing a 10 s boundary, at parallelism 1 and 2, and checks every
// cumulative window's row against the bids counted from the generator;
// no bid is late.
func TestCumulateBids(t *testing.T) {
	const events = 60000
	var want []string
	ends := map[string]bool{}
	for k, a := range cumulateBids(events) {
		want = append(want, line(k[0], k[1], k[2], a[0], a[1], a[2]))
		ends[k[1]] = true
	}
	if len(ends) < 4 {
		t.Fatalf("the oracle's windows end at %d times: the input should cross several steps and a max window", len(ends))
	}
	want = sorted(want)
	for _, par := range []int{1, 2} {
		got, st := runExampleOver(t, identityTables(t, events), "cumulate_bids", par)
		if st.LateRows != 0 {
			t.Fatalf("p%d: %d late rows", par, st.LateRows)
		}
		if d := firstDiff(want, got); d != "" {
			t.Fatalf("p%d: %d rows, want %d; %s", par, len(got), len(want), d)
		}
	}
}

// TestCumulateCascade reads a CUMULATE view from another view, grouped by
// its window_start and window_end (a cascading window): per cumulative
// window, the most bids of one auction and the auctions with bids, at
// parallelism 1 and 2.
func TestCumulateCascade(t *testing.T) {
	const events = 40000
	type agg struct{ top, auctions int64 }
	per := map[[2]string]agg{}
	for k, a := range cumulateBids(events) {
		w := [2]string{k[0], k[1]}
		p := per[w]
		p.top, p.auctions = max(p.top, a[0]), p.auctions+1
		per[w] = p
	}
	var want []string
	for w, p := range per {
		want = append(want, line(w[0], w[1], p.top, p.auctions))
	}
	want = sorted(want)
	for _, par := range []int{1, 2} {
		e := openNexmark(t, t.TempDir())
		exec(t, e, identityTables(t, events))
		exec(t, e, fmt.Sprintf("SET parallelism = %d;\n", par)+
			"CREATE VIEW c AS SELECT window_start, window_end, auction, COUNT(*) AS bids FROM bid GROUP BY CUMULATE(date_time, '2s', '10s'), auction;\n"+
			"CREATE VIEW v AS SELECT window_start, window_end, MAX(bids) AS top, COUNT(*) AS auctions FROM c GROUP BY window_start, window_end")
		got, st := finishView(t, e)
		closeEngine(t, context.Background(), e)
		if st.LateRows != 0 {
			t.Fatalf("p%d: %d late rows", par, st.LateRows)
		}
		if d := firstDiff(want, got); d != "" {
			t.Fatalf("p%d: %d rows, want %d; %s", par, len(got), len(want), d)
		}
	}
}

// TestCumulateRestart stops cumulate_bids mid-stream at parallelism 2
// (crashing, and closing with a final checkpoint), restarts it from its
// checkpoint, and compares the results and counters with an
// uninterrupted run's.
func TestCumulateRestart(t *testing.T) {
	const events, par = 10000, 2
	tables := nexmarkTables(t, events, fmt.Sprintf(`"base_time": %d, "events_per_second": 2000`, nexmark.DefaultBaseTime+7500))
	want, wantSt := runExampleOver(t, tables, "cumulate_bids", par)
	if len(want) == 0 {
		t.Fatal("cumulate_bids produced no rows: the comparison would be vacuous")
	}
	for _, crash := range []bool{true, false} {
		got, st := runRestarted(t, tables, "cumulate_bids", par, events, crash)
		if d := firstDiff(want, got); d != "" {
			t.Fatalf("crash %v: uninterrupted run has %d rows, restarted %d; %s", crash, len(want), len(got), d)
		}
		if st.RowsIn != wantSt.RowsIn || st.LateRows != wantSt.LateRows {
			t.Errorf("crash %v: restarted run counted %d rows in, %d late; uninterrupted %d in, %d late", crash, st.RowsIn, st.LateRows, wantSt.RowsIn, wantSt.LateRows)
		}
	}
}

// TestCumulateUpdating runs CUMULATE over a PRIMARY KEY table (an updating
// input: upserts that move rows between steps and windows, deletes) at
// parallelism 1 and 2, and checks the results against the windows of the
// table's final rows, counted from scratch. The watermark delay of an
// hour keeps every window open until a last row far ahead closes them.
func TestCumulateUpdating(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 19))
	type row struct{ v, ts int64 }
	final := map[int64]row{}
	var batches []string
	var b strings.Builder
	for i := range 400 {
		id := rng.Int64N(40)
		if _, ok := final[id]; ok && rng.IntN(4) == 0 {
			fmt.Fprintf(&b, `{"_op": "delete", "id": %d, "ts": %d}`+"\n", id, final[id].ts)
			delete(final, id)
		} else {
			r := row{rng.Int64N(100), rng.Int64N(12000)}
			fmt.Fprintf(&b, `{"id": %d, "v": %d, "ts": %d}`+"\n", id, r.v, r.ts)
			final[id] = r
		}
		if i%50 == 49 {
			batches = append(batches, b.String())
			b.Reset()
		}
	}
	// The last row, in the last step of a max window two hours on: the
	// watermark closes every window before it.
	const far = 7_200_000 + 5_000
	batches = append(batches, fmt.Sprintf(`{"id": 1000, "v": 7, "ts": %d}`+"\n", far))
	final[1000] = row{7, far}

	type agg struct{ n, sum, top int64 }
	per := map[[3]string]agg{}
	for id, r := range final {
		s := r.ts - r.ts%6000
		for end := s + 2000; end <= s+6000; end += 2000 {
			if r.ts >= end {
				continue
			}
			k := [3]string{ts(s), ts(end), fmt.Sprint(id % 3)}
			a := per[k]
			a.n, a.sum, a.top = a.n+1, a.sum+r.v, max(a.top, r.v)
			per[k] = a
		}
	}
	var want []string
	for k, a := range per {
		want = append(want, line(k[0], k[1], k[2], a.n, a.sum, a.top))
	}
	want = sorted(want)

	for _, par := range []int{1, 2} {
		e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		exec(t, e, `CREATE TABLE p (id BIGINT NOT NULL, v BIGINT, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id))
			ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1h"}'`)
		exec(t, e, fmt.Sprintf("SET parallelism = %d;\n", par)+`CREATE VIEW v AS SELECT window_start, window_end, id % 3 AS b,
			COUNT(*) AS n, SUM(v) AS s, MAX(v) AS top FROM p GROUP BY CUMULATE(ts, '2s', '6s'), b`)
		for _, body := range batches {
			ingest(t, e, "p", body)
		}
		// A checkpoint reads what was ingested before its barrier.
		if _, err := e.Checkpoint(context.Background(), "v"); err != nil {
			t.Fatal(err)
		}
		_, rows, err := e.Results("v", true)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			parts := make([]string, len(r))
			for i, v := range r {
				parts[i] = fmt.Sprint(JSONValue(v))
			}
			got = append(got, strings.Join(parts, "|"))
		}
		got = sorted(got)
		closeEngine(t, context.Background(), e)
		if d := firstDiff(want, got); d != "" {
			t.Fatalf("p%d: %d rows, want %d; %s", par, len(got), len(want), d)
		}
	}
}
