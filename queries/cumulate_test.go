package queries

import (
	"context"
	"fmt"
	"testing"

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
