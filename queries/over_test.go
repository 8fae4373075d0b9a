package queries

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
)

// TestOverQueries runs OVER aggregations over the generator's bids (an
// append-only stream) at parallelism 1 and 2 against an oracle that
// computes every bid's frame from the events: ROWS (the bid and the 3
// before it in its auction) and RANGE (its bidder's bids of the last
// second, those of the same time included).
func TestOverQueries(t *testing.T) {
	in := suiteInput{events: 20000}
	bids := in.rows(nexmark.Bid)
	// The bids of each partition in time order (the generator's order:
	// ties stay in it, as the offsets break them).
	partitions := func(col int) map[int64][]plan.Row {
		out := map[int64][]plan.Row{}
		for _, b := range bids {
			out[b[col].I] = append(out[b[col].I], b)
		}
		for _, rows := range out {
			sort.SliceStable(rows, func(i, j int) bool { return rows[i][nexmark.BidDateTime].I < rows[j][nexmark.BidDateTime].I })
		}
		return out
	}
	for _, c := range []struct {
		name, sql string
		oracle    func() []string
	}{
		{"rows", `SELECT auction, price, date_time, COUNT(*) OVER w AS n, SUM(price) OVER w AS s, MAX(price) OVER w AS hi FROM bid`,
			func() []string {
				var out []string
				for auction, rows := range partitions(nexmark.BidAuction) {
					for i, b := range rows {
						frame := rows[max(0, i-3) : i+1]
						var s, hi int64
						for _, f := range frame {
							s += f[nexmark.BidPrice].I
							hi = max(hi, f[nexmark.BidPrice].I)
						}
						out = append(out, line(auction, b[nexmark.BidPrice].I, ts(b[nexmark.BidDateTime].I), len(frame), s, hi))
					}
				}
				return sorted(out)
			}},
		{"range", `SELECT bidder, price, date_time, AVG(price) OVER w AS a, FIRST_VALUE(price) OVER w AS f, LAST_VALUE(price) OVER w AS l FROM bid`,
			func() []string {
				var out []string
				for bidder, rows := range partitions(nexmark.BidBidder) {
					for _, b := range rows {
						at := b[nexmark.BidDateTime].I
						var frame []plan.Row
						for _, f := range rows {
							if t := f[nexmark.BidDateTime].I; t <= at && t >= at-1000 {
								frame = append(frame, f)
							}
						}
						var s int64
						for _, f := range frame {
							s += f[nexmark.BidPrice].I
						}
						out = append(out, line(bidder, b[nexmark.BidPrice].I, ts(at), float64(s)/float64(len(frame)),
							frame[0][nexmark.BidPrice].I, frame[len(frame)-1][nexmark.BidPrice].I))
					}
				}
				return sorted(out)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			window := "(PARTITION BY auction ORDER BY date_time ROWS BETWEEN 3 PRECEDING AND CURRENT ROW)"
			if c.name == "range" {
				window = "(PARTITION BY bidder ORDER BY date_time RANGE BETWEEN INTERVAL 1 SECOND PRECEDING AND CURRENT ROW)"
			}
			sql := strings.ReplaceAll(c.sql, "OVER w", "OVER "+window)
			want := c.oracle()
			if len(want) != len(bids) {
				t.Fatalf("the oracle has %d rows for %d bids", len(want), len(bids))
			}
			for _, par := range []int{1, 2} {
				e := openNexmark(t, t.TempDir())
				exec(t, e, in.tables(t))
				exec(t, e, fmt.Sprintf("SET parallelism = %d;\nCREATE VIEW v AS %s", par, sql))
				got, st := finishView(t, e)
				closeEngine(t, t.Context(), e)
				if d := firstDiff(want, got); d != "" {
					t.Fatalf("p%d: %d rows, want %d; %s", par, len(got), len(want), d)
				}
				if st.LateRows != 0 {
					t.Errorf("p%d: %d late rows; the generator's bids are in time order", par, st.LateRows)
				}
			}
		})
	}
}
