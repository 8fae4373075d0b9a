package nexmark

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// Kind is a Nexmark event kind.
type Kind int

const (
	Person Kind = iota
	Auction
	Bid
)

// ParseKind parses "person", "auction" or "bid" (case-insensitive).
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "person":
		return Person, nil
	case "auction":
		return Auction, nil
	case "bid":
		return Bid, nil
	}
	return 0, fmt.Errorf("nexmark: unknown event kind %q (want person, auction or bid)", s)
}

func (k Kind) String() string {
	switch k {
	case Person:
		return "person"
	case Auction:
		return "auction"
	case Bid:
		return "bid"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Standard column positions, in the order of Columns.
const (
	PersonID = iota
	PersonName
	PersonEmailAddress
	PersonCreditCard
	PersonCity
	PersonState
	PersonDateTime
	PersonExtra
	numPersonCols
)

const (
	AuctionID = iota
	AuctionItemName
	AuctionDescription
	AuctionInitialBid
	AuctionReserve
	AuctionDateTime
	AuctionExpires
	AuctionSeller
	AuctionCategory
	AuctionExtra
	numAuctionCols
)

const (
	BidAuction = iota
	BidBidder
	BidPrice
	BidChannel
	BidURL
	BidDateTime
	BidExtra
	numBidCols
)

var (
	personSchema = plan.Schema{
		{Name: "id", Type: plan.TypeBigint, NotNull: true},
		{Name: "name", Type: plan.TypeVarchar, NotNull: true},
		{Name: "email_address", Type: plan.TypeVarchar, NotNull: true},
		{Name: "credit_card", Type: plan.TypeVarchar, NotNull: true},
		{Name: "city", Type: plan.TypeVarchar, NotNull: true},
		{Name: "state", Type: plan.TypeVarchar, NotNull: true},
		{Name: "date_time", Type: plan.TypeTimestamp, NotNull: true},
		{Name: "extra", Type: plan.TypeVarchar, NotNull: true},
	}
	auctionSchema = plan.Schema{
		{Name: "id", Type: plan.TypeBigint, NotNull: true},
		{Name: "item_name", Type: plan.TypeVarchar, NotNull: true},
		{Name: "description", Type: plan.TypeVarchar, NotNull: true},
		{Name: "initial_bid", Type: plan.TypeBigint, NotNull: true},
		{Name: "reserve", Type: plan.TypeBigint, NotNull: true},
		{Name: "date_time", Type: plan.TypeTimestamp, NotNull: true},
		{Name: "expires", Type: plan.TypeTimestamp, NotNull: true},
		{Name: "seller", Type: plan.TypeBigint, NotNull: true},
		{Name: "category", Type: plan.TypeBigint, NotNull: true},
		{Name: "extra", Type: plan.TypeVarchar, NotNull: true},
	}
	bidSchema = plan.Schema{
		{Name: "auction", Type: plan.TypeBigint, NotNull: true},
		{Name: "bidder", Type: plan.TypeBigint, NotNull: true},
		{Name: "price", Type: plan.TypeBigint, NotNull: true},
		{Name: "channel", Type: plan.TypeVarchar, NotNull: true},
		{Name: "url", Type: plan.TypeVarchar, NotNull: true},
		{Name: "date_time", Type: plan.TypeTimestamp, NotNull: true},
		{Name: "extra", Type: plan.TypeVarchar, NotNull: true},
	}
)

// Columns returns the standard columns of kind k, in standard order. The
// result is a fresh copy the caller may modify. It panics on an invalid kind.
func Columns(k Kind) plan.Schema {
	var s plan.Schema
	switch k {
	case Person:
		s = personSchema
	case Auction:
		s = auctionSchema
	case Bid:
		s = bidSchema
	default:
		panic(fmt.Sprintf("nexmark: invalid kind %d", int(k)))
	}
	return append(plan.Schema(nil), s...)
}

func numCols(k Kind) int {
	switch k {
	case Person:
		return numPersonCols
	case Auction:
		return numAuctionCols
	case Bid:
		return numBidCols
	}
	panic(fmt.Sprintf("nexmark: invalid kind %d", int(k)))
}

// Standard generator parameters (Beam/Flink nexmark defaults).
const (
	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	totalProportion   = personProportion + auctionProportion + bidProportion

	firstPersonID   = 1000
	firstAuctionID  = 1000
	firstCategoryID = 10
	numCategories   = 5

	// A hot seller/bidder/auction is chosen with probability 1 - 1/ratio.
	hotAuctionRatio = 2
	hotSellersRatio = 4
	hotBiddersRatio = 4
	// Hot ids are the first (second for bidders) of the latest batch of this size.
	hotBatch = 100

	numInFlightAuctions = 100
	numActivePeople     = 1000

	avgPersonByteSize  = 200
	avgAuctionByteSize = 500
	avgBidByteSize     = 100

	hotChannelsRatio = 2
	numChannels      = 10000

	// DefaultEventsPerSecond is used when Config.EventsPerSecond <= 0.
	DefaultEventsPerSecond = 10000
	// DefaultBaseTime is 2015-07-15T00:00:00Z in epoch ms, used when
	// Config.BaseTime is 0.
	DefaultBaseTime int64 = 1436918400000
)

// Config parameterizes a Generator.
type Config struct {
	EventsPerSecond int64  // drives event timestamps (default 10000 if <= 0)
	BaseTime        int64  // ms of event 0 (default: 2015-07-15T00:00:00Z if 0)
	Seed            uint64 // selects the pseudo-random sequence
}

// Generator produces Nexmark events as a pure function of their event
// number. It is immutable and safe for concurrent use.
type Generator struct {
	seed uint64
	eps  uint64
	base int64
}

// New returns a generator for cfg, applying defaults.
func New(cfg Config) *Generator {
	g := &Generator{seed: cfg.Seed, eps: DefaultEventsPerSecond, base: DefaultBaseTime}
	if cfg.EventsPerSecond > 0 {
		g.eps = uint64(cfg.EventsPerSecond)
	}
	if cfg.BaseTime != 0 {
		g.base = cfg.BaseTime
	}
	return g
}

// KindOf returns the kind of global event n.
func KindOf(n uint64) Kind {
	switch off := n % totalProportion; {
	case off < personProportion:
		return Person
	case off < personProportion+auctionProportion:
		return Auction
	}
	return Bid
}

// EventNumber is the global event number of the idx-th (0-based) event of
// kind k.
func (g *Generator) EventNumber(k Kind, idx uint64) uint64 { return eventNumber(k, idx) }

func eventNumber(k Kind, idx uint64) uint64 {
	switch k {
	case Person:
		return idx/personProportion*totalProportion + idx%personProportion
	case Auction:
		return idx/auctionProportion*totalProportion + personProportion + idx%auctionProportion
	case Bid:
		return idx/bidProportion*totalProportion + personProportion + auctionProportion + idx%bidProportion
	}
	panic(fmt.Sprintf("nexmark: invalid kind %d", int(k)))
}

// Count returns how many events of kind k are among the first n global
// events (event numbers 0..n-1).
func Count(k Kind, n uint64) uint64 {
	epochs, off := n/totalProportion, n%totalProportion
	var lo, per uint64
	switch k {
	case Person:
		lo, per = 0, personProportion
	case Auction:
		lo, per = personProportion, auctionProportion
	case Bid:
		lo, per = personProportion+auctionProportion, bidProportion
	default:
		panic(fmt.Sprintf("nexmark: invalid kind %d", int(k)))
	}
	c := epochs * per
	if off > lo {
		c += min(off-lo, per)
	}
	return c
}

// EventTime is the event time (epoch ms) of global event n:
// BaseTime + floor(n * 1000 / EventsPerSecond), computed exactly.
func (g *Generator) EventTime(n uint64) int64 {
	return g.base + int64(mulDiv(n, 1000, g.eps))
}

// Due returns how many global events are due at wall time now (ms) for a
// generator started at wall time start emitting eventsPerSecond (default
// 10000 if <= 0): the number of events n whose offset floor(n*1000/eps) from
// start is <= now-start. It is consistent with EventTime for BaseTime = start.
func Due(start, now, eventsPerSecond int64) uint64 {
	if now < start {
		return 0
	}
	eps := uint64(DefaultEventsPerSecond)
	if eventsPerSecond > 0 {
		eps = uint64(eventsPerSecond)
	}
	// count = ceil((elapsed+1) * eps / 1000)
	elapsed := uint64(now-start) + 1
	hi, lo := bits.Mul64(elapsed, eps)
	lo, carry := bits.Add64(lo, 999, 0)
	hi += carry
	if hi >= 1000 {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, 1000)
	return q
}

// mulDiv returns floor(a*b/c), saturating on overflow.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return 1<<63 - 1
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// Fill writes the idx-th event of kind k into dst: dst[i] is the value of
// standard column cols[i] (an index into Columns(k)); a nil cols means all
// columns in standard order. dst is resliced to the number of columns,
// allocating only when its capacity is too small, and returned. Fill panics
// on an invalid kind or column index.
func (g *Generator) Fill(k Kind, idx uint64, cols []int, dst plan.Row) plan.Row {
	n := len(cols)
	if cols == nil {
		n = numCols(k)
	}
	if cap(dst) < n {
		dst = make(plan.Row, n)
	} else {
		dst = dst[:n]
	}
	switch k {
	case Person:
		g.fillPerson(idx, cols, dst)
	case Auction:
		g.fillAuction(idx, cols, dst)
	case Bid:
		g.fillBid(idx, cols, dst)
	default:
		panic(fmt.Sprintf("nexmark: invalid kind %d", int(k)))
	}
	return dst
}
