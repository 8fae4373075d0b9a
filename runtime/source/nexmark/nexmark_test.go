package nexmark

import (
	"reflect"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

var kinds = []Kind{Person, Auction, Bid}

func TestParseKind(t *testing.T) {
	for _, k := range kinds {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Fatalf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
		if got, err := ParseKind(strings.ToUpper(k.String())); err != nil || got != k {
			t.Fatalf("ParseKind(upper %q) = %v, %v", k.String(), got, err)
		}
	}
	for _, bad := range []string{"", "bids", "people", "auctions!"} {
		_, err := ParseKind(bad)
		if err == nil {
			t.Fatalf("ParseKind(%q): want error", bad)
		}
		if !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Fatalf("ParseKind(%q) error %q does not name the text", bad, err)
		}
	}
}

func TestColumns(t *testing.T) {
	want := map[Kind]string{
		Person:  "id name email_address credit_card city state date_time extra",
		Auction: "id item_name description initial_bid reserve date_time expires seller category extra",
		Bid:     "auction bidder price channel url date_time extra",
	}
	for _, k := range kinds {
		cols := Columns(k)
		var names []string
		for _, c := range cols {
			names = append(names, c.Name)
			switch {
			case c.Name == "date_time" || c.Name == "expires":
				if c.Type != plan.TypeTimestamp {
					t.Errorf("%s.%s: type %v", k, c.Name, c.Type)
				}
			case c.Type != plan.TypeBigint && c.Type != plan.TypeVarchar:
				t.Errorf("%s.%s: type %v", k, c.Name, c.Type)
			}
		}
		if got := strings.Join(names, " "); got != want[k] {
			t.Errorf("Columns(%s) = %s, want %s", k, got, want[k])
		}
		// Every value Fill produces has its column's type.
		g := New(Config{})
		for idx := range uint64(20) {
			row := g.Fill(k, idx, nil, nil)
			for i, v := range row {
				if v.K != cols[i].Type {
					t.Fatalf("%s[%d].%s = %v, type %v want %v", k, idx, cols[i].Name, v, v.K, cols[i].Type)
				}
			}
		}
		cols[0].Name = "mutated"
		if Columns(k)[0].Name == "mutated" {
			t.Fatalf("Columns(%s) shares its backing array", k)
		}
	}
}

func TestDeterminism(t *testing.T) {
	cfg := Config{Seed: 42}
	g1, g2 := New(cfg), New(cfg)
	other := New(Config{Seed: 43})
	for _, k := range kinds {
		differs := false
		for idx := range uint64(500) {
			a := g1.Fill(k, idx, nil, nil)
			b := g1.Fill(k, idx, nil, nil)
			c := g2.Fill(k, idx, nil, make(plan.Row, 3))
			if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a, c) {
				t.Fatalf("%s %d not deterministic:\n%v\n%v\n%v", k, idx, a, b, c)
			}
			// A projection yields the same values as the full row.
			cols := []int{len(a) - 1, 0, 2, 2}
			p := g2.Fill(k, idx, cols, nil)
			for i, ci := range cols {
				if p[i] != a[ci] {
					t.Fatalf("%s %d: projected col %d = %v, full row has %v", k, idx, ci, p[i], a[ci])
				}
			}
			if !reflect.DeepEqual(a, other.Fill(k, idx, nil, nil)) {
				differs = true
			}
		}
		if !differs {
			t.Errorf("%s: seed does not change events", k)
		}
	}
}

func TestMixAndCounts(t *testing.T) {
	g := New(Config{})
	const total = 5000
	var got [3]uint64
	for n := uint64(0); n < total; n++ {
		k := KindOf(n)
		idx := got[k]
		if en := g.EventNumber(k, idx); en != n {
			t.Fatalf("EventNumber(%s, %d) = %d, want %d", k, idx, en, n)
		}
		for _, kk := range kinds {
			if c := Count(kk, n); c != got[kk] {
				t.Fatalf("Count(%s, %d) = %d, want %d", kk, n, c, got[kk])
			}
		}
		got[k]++
	}
	if got != [3]uint64{100, 300, 4600} {
		t.Fatalf("mix over %d events = %v, want 1:3:46", total, got)
	}
	for i, k := range kinds {
		if c := Count(k, total); c != got[i] {
			t.Fatalf("Count(%s, %d) = %d, want %d", k, total, c, got[i])
		}
	}
}

func TestIDsAndReferences(t *testing.T) {
	g := New(Config{Seed: 7})
	if id := g.Fill(Person, 0, []int{PersonID}, nil)[0].I; id != 1000 {
		t.Fatalf("first person id %d", id)
	}
	if id := g.Fill(Auction, 0, []int{AuctionID}, nil)[0].I; id != 1000 {
		t.Fatalf("first auction id %d", id)
	}
	for idx := range uint64(300) {
		if id := g.Fill(Person, idx, []int{PersonID}, nil)[0].I; id != 1000+int64(idx) {
			t.Fatalf("person %d id %d", idx, id)
		}
		if id := g.Fill(Auction, idx, []int{AuctionID}, nil)[0].I; id != 1000+int64(idx) {
			t.Fatalf("auction %d id %d", idx, id)
		}
	}

	// Auctions: seller exists, category in range, prices positive, expires later.
	for idx := range uint64(3000) {
		n := g.EventNumber(Auction, idx)
		people := int64(Count(Person, n))
		row := g.Fill(Auction, idx, nil, nil)
		if s := row[AuctionSeller].I - 1000; s < 0 || s >= people || s < people-numActivePeople {
			t.Fatalf("auction %d seller %d with %d people", idx, s+1000, people)
		}
		if c := row[AuctionCategory].I; c < 10 || c >= 10+numCategories {
			t.Fatalf("auction %d category %d", idx, c)
		}
		if row[AuctionInitialBid].I <= 0 || row[AuctionReserve].I <= row[AuctionInitialBid].I {
			t.Fatalf("auction %d prices %v %v", idx, row[AuctionInitialBid], row[AuctionReserve])
		}
		if row[AuctionExpires].I <= row[AuctionDateTime].I {
			t.Fatalf("auction %d expires %v <= %v", idx, row[AuctionExpires], row[AuctionDateTime])
		}
	}

	// Bids reference generated, recent auctions and people only.
	hotAuctions, hotBidders := 0, 0
	const bids = 50000
	for idx := range uint64(bids) {
		n := g.EventNumber(Bid, idx)
		auctions, people := int64(Count(Auction, n)), int64(Count(Person, n))
		row := g.Fill(Bid, idx, nil, nil)
		a, b := row[BidAuction].I-1000, row[BidBidder].I-1000
		if a < 0 || a >= auctions || a < auctions-1-numInFlightAuctions {
			t.Fatalf("bid %d (event %d) auction %d with %d auctions", idx, n, a+1000, auctions)
		}
		if b < 0 || b >= people || b < people-numActivePeople {
			t.Fatalf("bid %d (event %d) bidder %d with %d people", idx, n, b+1000, people)
		}
		if a%hotBatch == 0 {
			hotAuctions++
		}
		if b%hotBatch == 1 {
			hotBidders++
		}
		if row[BidPrice].I <= 0 {
			t.Fatalf("bid %d price %v", idx, row[BidPrice])
		}
		if row[BidChannel].S == "" || !strings.HasPrefix(row[BidURL].S, "https://www.nexmark.com/") {
			t.Fatalf("bid %d channel %v url %v", idx, row[BidChannel], row[BidURL])
		}
	}
	// Standard hot ratios: about half the bids on a hot auction, 3/4 by a hot bidder.
	if f := float64(hotAuctions) / bids; f < 0.45 || f > 0.6 {
		t.Errorf("hot auction fraction %.3f", f)
	}
	if f := float64(hotBidders) / bids; f < 0.7 || f > 0.8 {
		t.Errorf("hot bidder fraction %.3f", f)
	}
}

func TestEventTime(t *testing.T) {
	g := New(Config{})
	if got := g.EventTime(0); got != DefaultBaseTime {
		t.Fatalf("EventTime(0) = %d", got)
	}
	if plan.FormatTime(DefaultBaseTime) != "2015-07-15T00:00:00.000Z" {
		t.Fatalf("default base time %s", plan.FormatTime(DefaultBaseTime))
	}
	prev := g.EventTime(0)
	for n := uint64(1); n < 100000; n++ {
		tm := g.EventTime(n)
		if tm < prev {
			t.Fatalf("EventTime(%d) = %d < %d", n, tm, prev)
		}
		prev = tm
	}
	// 10000 events/s: exactly 1 s per 10000 events, no drift.
	if d := g.EventTime(1e9) - g.EventTime(0); d != 1e8 {
		t.Fatalf("1e9 events span %d ms", d)
	}
	g3 := New(Config{EventsPerSecond: 3, BaseTime: 5})
	for n, want := range []int64{5, 5 + 333, 5 + 666, 5 + 1000, 5 + 1333} {
		if got := g3.EventTime(uint64(n)); got != want {
			t.Fatalf("3/s EventTime(%d) = %d, want %d", n, got, want)
		}
	}
	// Rows carry the event time.
	for _, k := range kinds {
		for idx := range uint64(10) {
			dt := Columns(k).Index("date_time")
			if got := g.Fill(k, idx, []int{dt}, nil)[0].I; got != g.EventTime(g.EventNumber(k, idx)) {
				t.Fatalf("%s %d date_time %d", k, idx, got)
			}
		}
	}
}

func TestDue(t *testing.T) {
	if Due(100, 99, 1000) != 0 {
		t.Fatal("due before start")
	}
	for _, eps := range []int64{1, 3, 7, 1000, 10000, 1234567} {
		g := New(Config{EventsPerSecond: eps, BaseTime: 100})
		for now := int64(100); now < 3100; now += 37 {
			due := Due(100, now, eps)
			// Exactly the events with EventTime <= now are due.
			if due > 0 && g.EventTime(due-1) > now {
				t.Fatalf("eps %d now %d: due %d but event %d at %d", eps, now, due, due-1, g.EventTime(due-1))
			}
			if g.EventTime(due) <= now {
				t.Fatalf("eps %d now %d: due %d but event %d at %d", eps, now, due, due, g.EventTime(due))
			}
		}
	}
	if Due(0, 1000, 0) != Due(0, 1000, DefaultEventsPerSecond) {
		t.Fatal("Due default rate")
	}
}

func TestAverageSizes(t *testing.T) {
	g := New(Config{Seed: 3})
	const samples = 4000
	avg := func(k Kind, size func(plan.Row) int) float64 {
		total := 0
		for idx := range uint64(samples) {
			total += size(g.Fill(k, idx, nil, nil))
		}
		return float64(total) / samples
	}
	check := func(k Kind, got float64, want float64) {
		if got < want*0.97 || got > want*1.03 {
			t.Errorf("%s average size %.1f, want about %.0f", k, got, want)
		} else {
			t.Logf("%s average size %.1f (standard %.0f)", k, got, want)
		}
	}
	check(Person, avg(Person, func(r plan.Row) int {
		return 8 + len(r[PersonName].S) + len(r[PersonEmailAddress].S) + len(r[PersonCreditCard].S) +
			len(r[PersonCity].S) + len(r[PersonState].S) + len(r[PersonExtra].S)
	}), avgPersonByteSize)
	check(Auction, avg(Auction, func(r plan.Row) int {
		return 8 + len(r[AuctionItemName].S) + len(r[AuctionDescription].S) + 5*8 + len(r[AuctionExtra].S)
	}), avgAuctionByteSize)
	check(Bid, avg(Bid, func(r plan.Row) int { return 4*8 + len(r[BidExtra].S) }), avgBidByteSize)
}

func TestFillDst(t *testing.T) {
	g := New(Config{})
	buf := make(plan.Row, 0, 16)
	row := g.Fill(Bid, 5, []int{BidPrice}, buf)
	if len(row) != 1 || &row[:1][0] != &buf[:1][0] {
		t.Fatal("Fill did not reuse dst capacity")
	}
	if allocs := testing.AllocsPerRun(100, func() { g.Fill(Bid, 12345, nil, buf) }); allocs != 0 {
		t.Fatalf("Fill(Bid) allocates %.1f times per row", allocs)
	}
	for _, k := range kinds {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: bad column index did not panic", k)
				}
			}()
			g.Fill(k, 0, []int{99}, nil)
		}()
	}
}

func BenchmarkFillBid(b *testing.B) {
	g := New(Config{Seed: 1})
	dst := make(plan.Row, numBidCols)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = g.Fill(Bid, uint64(i), nil, dst)
	}
}

func BenchmarkFillAuction(b *testing.B) {
	g := New(Config{Seed: 1})
	dst := make(plan.Row, numAuctionCols)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = g.Fill(Auction, uint64(i), nil, dst)
	}
}

func BenchmarkFillPerson(b *testing.B) {
	g := New(Config{Seed: 1})
	dst := make(plan.Row, numPersonCols)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = g.Fill(Person, uint64(i), nil, dst)
	}
}
