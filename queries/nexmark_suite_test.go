package queries

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/value"
)

// The Nexmark suite's oracles: each computes a query's final result from
// the generator's events directly, from what the query means (never from
// how the engine plans it), in the row format runExample returns (columns
// joined by |, rows sorted). TestNexmarkSuite runs every query with an
// oracle at parallelism 1 and 2; TestNexmarkParallelismIdentity and
// TestNexmarkRestartIdentity cover parallelism and restarts of every
// example.

// suiteInput is the bounded generator input of one suite query: events
// generator events from base (ms; 0: the generator's default).
type suiteInput struct {
	events int
	base   int64
}

func (in suiteInput) tables(t *testing.T) string {
	if in.base == 0 {
		return BenchTables(int64(in.events))
	}
	return nexmarkTables(t, in.events, fmt.Sprintf(`"base_time": %d`, in.base))
}

// rows are the generator's events of kind k in the input, every column.
func (in suiteInput) rows(k nexmark.Kind) []plan.Row {
	g := nexmark.New(nexmark.Config{BaseTime: in.base})
	out := make([]plan.Row, nexmark.Count(k, uint64(in.events)))
	for i := range out {
		out[i] = g.Fill(k, uint64(i), nil, nil)
	}
	return out
}

// line renders one result row as runExample does.
func line(vals ...any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, "|")
}

func sorted(rows []string) []string {
	sort.Strings(rows)
	return rows
}

func utc(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

type suiteCase struct {
	in     suiteInput
	oracle func(in suiteInput) []string
}

var suite = map[string]suiteCase{
	// Each bid with the side input's value of auction % 10000 (every key
	// is in the file: every bid joins).
	"q13": {suiteInput{events: 40000}, func(in suiteInput) []string {
		var out []string
		for _, b := range in.rows(nexmark.Bid) {
			out = append(out, line(b[nexmark.BidAuction].I, b[nexmark.BidBidder].I, b[nexmark.BidPrice].I,
				plan.FormatTime(b[nexmark.BidDateTime].I), NexmarkSideValue(b[nexmark.BidAuction].I%NexmarkSideInputKeys)))
		}
		return sorted(out)
	}},
	// Winning bid of each auction (bids while it is open), averaged per
	// category.
	"q4": {suiteInput{events: 60000}, func(in suiteInput) []string {
		type auc struct{ open, expires, category int64 }
		aucs := map[int64]auc{}
		for _, a := range in.rows(nexmark.Auction) {
			aucs[a[nexmark.AuctionID].I] = auc{a[nexmark.AuctionDateTime].I, a[nexmark.AuctionExpires].I, a[nexmark.AuctionCategory].I}
		}
		final := map[int64]int64{}
		for _, b := range in.rows(nexmark.Bid) {
			a, ok := aucs[b[nexmark.BidAuction].I]
			ts := b[nexmark.BidDateTime].I
			if !ok || ts < a.open || ts > a.expires {
				continue
			}
			id := b[nexmark.BidAuction].I
			if p, seen := final[id]; !seen || b[nexmark.BidPrice].I > p {
				final[id] = b[nexmark.BidPrice].I
			}
		}
		sum, n := map[int64]int64{}, map[int64]int64{}
		for id, p := range final {
			sum[aucs[id].category] += p
			n[aucs[id].category]++
		}
		var out []string
		for c := range sum {
			out = append(out, line(c, float64(sum[c])/float64(n[c])))
		}
		return sorted(out)
	}},
	// Each auction's winning bid (and its last bid's time), then per
	// seller the average over the auction and the 10 before it in order
	// of that time (ties by the auction's group key: id, seller).
	"q6": {suiteInput{events: 60000}, q6Oracle},
	// Sessions of bids per bidder with a 10 s gap.
	"q11": {suiteInput{events: 40000}, func(in suiteInput) []string {
		per := map[int64][]int64{}
		for _, b := range in.rows(nexmark.Bid) {
			per[b[nexmark.BidBidder].I] = append(per[b[nexmark.BidBidder].I], b[nexmark.BidDateTime].I)
		}
		const gap = 10000
		var out []string
		for bidder, tss := range per {
			sort.Slice(tss, func(i, j int) bool { return tss[i] < tss[j] })
			start, end, n := tss[0], tss[0]+gap, 1
			for _, at := range tss[1:] {
				if at < end {
					end, n = max(end, at+gap), n+1
					continue
				}
				out = append(out, line(bidder, n, ts(start), ts(end)))
				start, end, n = at, at+gap, 1
			}
			out = append(out, line(bidder, n, ts(start), ts(end)))
		}
		return sorted(out)
	}},
	// From 7:59:58, so that the hour changes during the input.
	"q14": {suiteInput{events: 40000, base: nexmark.DefaultBaseTime + 8*3600_000 - 2000}, func(in suiteInput) []string {
		var out []string
		for _, b := range in.rows(nexmark.Bid) {
			p := 0.908 * float64(b[nexmark.BidPrice].I)
			if !(p > 1000000 && p < 50000000) {
				continue
			}
			h := utc(b[nexmark.BidDateTime].I).Hour()
			kind := "otherTime"
			switch {
			case h >= 8 && h <= 18:
				kind = "dayTime"
			case h <= 6 || h >= 20:
				kind = "nightTime"
			}
			extra := b[nexmark.BidExtra].S
			out = append(out, line(b[nexmark.BidAuction].I, b[nexmark.BidBidder].I, p, kind, ts(b[nexmark.BidDateTime].I), extra, strings.Count(extra, "c")))
		}
		return sorted(out)
	}},
	// From 23:59:58, so that the day changes during the input.
	"q15": {suiteInput{events: 40000, base: nexmark.DefaultBaseTime + 24*3600_000 - 2000}, func(in suiteInput) []string {
		return bidStats(in, false)
	}},
	"q16": {suiteInput{events: 40000, base: nexmark.DefaultBaseTime + 24*3600_000 - 2000}, func(in suiteInput) []string {
		return bidStats(in, true)
	}},
	// The highest bid of each auction while it is open (the earliest of
	// equal bids, then the first generated), with its auction.
	"q9": {suiteInput{events: 40000}, func(in suiteInput) []string {
		aucs := map[int64]plan.Row{}
		for _, a := range in.rows(nexmark.Auction) {
			aucs[a[nexmark.AuctionID].I] = a
		}
		best := map[int64]plan.Row{}
		for _, b := range in.rows(nexmark.Bid) {
			a, ok := aucs[b[nexmark.BidAuction].I]
			at := b[nexmark.BidDateTime].I
			if !ok || at < a[nexmark.AuctionDateTime].I || at > a[nexmark.AuctionExpires].I {
				continue
			}
			id := a[nexmark.AuctionID].I
			if w, seen := best[id]; !seen || b[nexmark.BidPrice].I > w[nexmark.BidPrice].I ||
				b[nexmark.BidPrice].I == w[nexmark.BidPrice].I && at < w[nexmark.BidDateTime].I {
				best[id] = b
			}
		}
		var out []string
		for id, b := range best {
			a := aucs[id]
			out = append(out, rowLine(append(append(plan.Row{}, a...), b[nexmark.BidAuction], b[nexmark.BidBidder], b[nexmark.BidPrice],
				b[nexmark.BidDateTime], b[nexmark.BidExtra])))
		}
		return sorted(out)
	}},
	// The last bid (by event time, the first generated of equal times) of
	// each bidder on each auction.
	"q18": {suiteInput{events: 40000}, func(in suiteInput) []string {
		type key struct{ bidder, auction int64 }
		last := map[key]plan.Row{}
		for _, b := range in.rows(nexmark.Bid) {
			k := key{b[nexmark.BidBidder].I, b[nexmark.BidAuction].I}
			if l, seen := last[k]; !seen || b[nexmark.BidDateTime].I > l[nexmark.BidDateTime].I {
				last[k] = b
			}
		}
		var out []string
		for _, b := range last {
			out = append(out, rowLine(b))
		}
		return sorted(out)
	}},
	// The ten highest bids of each auction (the first generated of equal
	// prices first), with their rank.
	"q19": {suiteInput{events: 40000}, func(in suiteInput) []string {
		per := map[int64][]plan.Row{}
		for _, b := range in.rows(nexmark.Bid) {
			per[b[nexmark.BidAuction].I] = append(per[b[nexmark.BidAuction].I], b)
		}
		var out []string
		for _, bids := range per {
			sort.SliceStable(bids, func(i, j int) bool { return bids[i][nexmark.BidPrice].I > bids[j][nexmark.BidPrice].I })
			for i, b := range bids[:min(10, len(bids))] {
				out = append(out, rowLine(append(append(plan.Row{}, b...), plan.Int(int64(i+1)))))
			}
		}
		return sorted(out)
	}},
	// The channel_id of the bids of a hot channel (by its name) or whose
	// URL has a channel_id parameter (after an '&': the pattern's (&|^)
	// on a URL, which begins with https).
	"q21": {suiteInput{events: 40000}, func(in suiteInput) []string {
		ids := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
		var out []string
		for _, b := range in.rows(nexmark.Bid) {
			ch, u := b[nexmark.BidChannel].S, b[nexmark.BidURL].S
			param, ok := "", false
			if _, after, found := strings.Cut(u, "&channel_id="); found {
				param, _, _ = strings.Cut(after, "&")
				ok = true
			}
			id, hot := ids[strings.ToLower(ch)]
			if !hot {
				if !ok {
					continue
				}
				id = param
			}
			out = append(out, line(b[nexmark.BidAuction].I, b[nexmark.BidBidder].I, b[nexmark.BidPrice].I, ch, id))
		}
		return sorted(out)
	}},
	// The first three directories of each bid's URL
	// (https://www.nexmark.com/<dir1>/<dir2>/<dir3>/item.htm?...).
	"q22": {suiteInput{events: 40000}, func(in suiteInput) []string {
		var out []string
		for _, b := range in.rows(nexmark.Bid) {
			rest := strings.TrimPrefix(b[nexmark.BidURL].S, "https://www.nexmark.com/")
			dirs := strings.SplitN(rest, "/", 4)
			out = append(out, line(b[nexmark.BidAuction].I, b[nexmark.BidBidder].I, b[nexmark.BidPrice].I, b[nexmark.BidChannel].S, dirs[0], dirs[1], dirs[2]))
		}
		return sorted(out)
	}},
}

// rowLine renders a row as runExample does.
func rowLine(r plan.Row) string {
	vals := make([]any, len(r))
	for i, v := range r {
		vals[i] = JSONValue(v)
	}
	return line(vals...)
}

func q6Oracle(in suiteInput) []string {
	type auc struct{ open, expires, seller int64 }
	aucs := map[int64]auc{}
	for _, a := range in.rows(nexmark.Auction) {
		aucs[a[nexmark.AuctionID].I] = auc{a[nexmark.AuctionDateTime].I, a[nexmark.AuctionExpires].I, a[nexmark.AuctionSeller].I}
	}
	type win struct{ final, last int64 }
	wins := map[int64]win{}
	for _, b := range in.rows(nexmark.Bid) {
		id := b[nexmark.BidAuction].I
		a, ok := aucs[id]
		at := b[nexmark.BidDateTime].I
		if !ok || at < a.open || at > a.expires {
			continue
		}
		w, seen := wins[id]
		if !seen {
			w = win{final: b[nexmark.BidPrice].I, last: at}
		}
		w.final, w.last = max(w.final, b[nexmark.BidPrice].I), max(w.last, at)
		wins[id] = w
	}
	type row struct {
		key         string // the group key (id, seller), encoded: the tie-break
		final, last int64
	}
	bySeller := map[int64][]row{}
	for id, w := range wins {
		s := aucs[id].seller
		key := value.AppendValue(value.AppendValue(nil, plan.Int(id)), plan.Int(s))
		bySeller[s] = append(bySeller[s], row{string(key), w.final, w.last})
	}
	var out []string
	for s, rows := range bySeller {
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].last != rows[j].last {
				return rows[i].last < rows[j].last
			}
			return rows[i].key < rows[j].key
		})
		for i := range rows {
			var sum int64
			frame := rows[max(0, i-10) : i+1]
			for _, r := range frame {
				sum += r.final
			}
			out = append(out, line(s, float64(sum)/float64(len(frame))))
		}
	}
	return sorted(out)
}

// bidStats is q15 (per day) or, perChannel, q16 (per channel and day,
// with the latest minute): bids, distinct bidders and distinct auctions,
// in all and per price band.
func bidStats(in suiteInput, perChannel bool) []string {
	type key struct{ channel, day string }
	type stats struct {
		minute   string
		bids     [4]int64
		bidders  [4]map[int64]bool
		auctions [4]map[int64]bool
	}
	all := map[key]*stats{}
	for _, b := range in.rows(nexmark.Bid) {
		t := utc(b[nexmark.BidDateTime].I)
		k := key{day: t.Format("2006-01-02")}
		if perChannel {
			k.channel = b[nexmark.BidChannel].S
		}
		s := all[k]
		if s == nil {
			s = &stats{}
			for i := range 4 {
				s.bidders[i], s.auctions[i] = map[int64]bool{}, map[int64]bool{}
			}
			all[k] = s
		}
		if m := t.Format("15:04"); m > s.minute {
			s.minute = m
		}
		price := b[nexmark.BidPrice].I
		band := 3
		switch {
		case price < 10000:
			band = 1
		case price < 1000000:
			band = 2
		}
		for _, i := range []int{0, band} {
			s.bids[i]++
			s.bidders[i][b[nexmark.BidBidder].I] = true
			s.auctions[i][b[nexmark.BidAuction].I] = true
		}
	}
	var out []string
	for k, s := range all {
		var vals []any
		if perChannel {
			vals = append(vals, k.channel, k.day, s.minute)
		} else {
			vals = append(vals, k.day)
		}
		for i := range 4 {
			vals = append(vals, s.bids[i])
		}
		for i := range 4 {
			vals = append(vals, len(s.bidders[i]))
		}
		for i := range 4 {
			vals = append(vals, len(s.auctions[i]))
		}
		out = append(out, line(vals...))
	}
	return sorted(out)
}

// TestNexmarkSuite checks each suite query with an oracle against it, at
// parallelism 1 and 2.
func TestNexmarkSuite(t *testing.T) {
	for q, c := range suite {
		t.Run(q, func(t *testing.T) {
			t.Parallel()
			want := c.oracle(c.in)
			if len(want) == 0 {
				t.Fatalf("the oracle has no rows for %s over %d events: the comparison would be vacuous", q, c.in.events)
			}
			for _, par := range []int{1, 2} {
				got, _ := runExampleOver(t, c.in.tables(t), q, par)
				if d := firstDiff(want, got); d != "" {
					t.Fatalf("p%d: %d rows, want %d; %s", par, len(got), len(want), d)
				}
			}
		})
	}
}
