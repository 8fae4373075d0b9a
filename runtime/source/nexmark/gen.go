package nexmark

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	"github.com/streamsql/streamsql/planner/plan"
)

// ---- counter-based randomness ----

const golden = 0x9e3779b97f4a7c15

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// draws is the random source of one event: draw slot i is the i-th output of
// a splitmix64 stream seeded with the event key, computed by random access so
// each column can be produced independently of which other columns are asked.
type draws uint64

func (g *Generator) key(n uint64) draws { return draws(mix64((g.seed ^ n) + golden)) }

func (d draws) u64(slot uint64) uint64 { return mix64(uint64(d) + (slot+1)*golden) }

// intn returns a uniform value in [0, n) (n > 0).
func (d draws) intn(slot, n uint64) uint64 {
	hi, _ := bits.Mul64(d.u64(slot), n)
	return hi
}

// float returns a uniform value in [0, 1).
func (d draws) float(slot uint64) float64 { return float64(d.u64(slot)>>11) * 0x1p-53 }

// price is the standard nextPrice: round(10^(6u) * 100).
func (d draws) price(slot uint64) int64 {
	return int64(math.Floor(math.Exp(d.float(slot)*6*math.Ln10)*100 + 0.5))
}

// ---- text pools ----

const (
	poolSize  = 1 << 16
	poolSlack = 1024             // longest substring ever taken from a pool
	poolSeed  = 0x6e65786d61726b // fixed: pool contents never change
)

var (
	// letterPool holds random lowercase letters (standard nextExactString).
	letterPool = makePool(poolSeed, false)
	// textPool holds random lowercase letters with a space at probability
	// 1/13 (standard nextString).
	textPool = makePool(poolSeed+1, true)
)

func makePool(seed uint64, spaces bool) string {
	b := make([]byte, poolSize+poolSlack)
	s := seed
	for i := range b {
		s += golden
		r := mix64(s)
		if spaces && r%13 == 0 {
			b[i] = ' '
			continue
		}
		b[i] = 'a' + byte((r>>32)%26)
	}
	return string(b)
}

// text is the standard nextString(maxLen): 3 + uniform(maxLen-3) characters
// of text, trimmed. It uses slots slot and slot+1.
func (d draws) text(slot uint64, maxLen int) string {
	l := 3 + d.intn(slot, uint64(maxLen-3))
	off := d.intn(slot+1, poolSize)
	return strings.TrimSpace(textPool[off : off+l])
}

// extra is the standard nextExtra: padding so that current + len(extra)
// averages avg. It uses slots slot and slot+1.
func (d draws) extra(slot uint64, current, avg int) string {
	if current > avg {
		return ""
	}
	want := avg - current
	delta := (2*want + 5) / 10 // round(want * 0.2)
	size := want - delta
	if delta > 0 {
		size += int(d.intn(slot, uint64(2*delta)))
	}
	off := d.intn(slot+1, poolSize)
	return letterPool[off : off+uint64(size)]
}

// ---- fixed lookup tables ----

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}

	// personNames[i*len(lastNames)+j] = firstNames[i] + " " + lastNames[j].
	personNames = func() []string {
		out := make([]string, 0, len(firstNames)*len(lastNames))
		for _, f := range firstNames {
			for _, l := range lastNames {
				out = append(out, f+" "+l)
			}
		}
		return out
	}()

	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

type channel struct{ name, url string }

// channelTables returns the hot channels with their URLs and the numChannels
// generated channels "channel-N", each with a fixed pseudo-random URL that
// carries "&channel_id=..." nine times in ten. Built once, then immutable.
var channelTables = sync.OnceValues(func() ([]channel, []channel) {
	hot := make([]channel, len(hotChannels))
	for i, name := range hotChannels {
		hot[i] = channel{name, baseURL(mix64(poolSeed ^ 0xc0ffee ^ uint64(i)))}
	}
	gen := make([]channel, numChannels)
	for i := range gen {
		seed := mix64(poolSeed + uint64(i)*golden)
		url := baseURL(seed)
		if mix64(seed^0x5eed)%10 > 0 {
			id := int64(int32(bits.Reverse32(uint32(i))))
			if id < 0 {
				id = -id
			}
			url += "&channel_id=" + strconv.FormatInt(id, 10)
		}
		gen[i] = channel{"channel-" + strconv.Itoa(i), url}
	}
	return hot, gen
})

// baseURL is the standard bid URL shape with three random path segments of
// 3..4 characters (letters, '_' at probability 1/13).
func baseURL(seed uint64) string {
	var sb strings.Builder
	sb.WriteString("https://www.nexmark.com/")
	s := seed
	next := func() uint64 { s += golden; return mix64(s) }
	for range 3 {
		for l := 3 + next()%2; l > 0; l-- {
			if r := next(); r%13 == 0 {
				sb.WriteByte('_')
			} else {
				sb.WriteByte('a' + byte((r>>32)%26))
			}
		}
		sb.WriteByte('/')
	}
	sb.WriteString("item.htm?query=1")
	return sb.String()
}

// ---- id choice ----

// nextPersonID is a random base-0 person id among the numActivePeople most
// recent people of epoch e (persons 0..e exist).
func (d draws) nextPersonID(slot, e uint64) uint64 {
	numPeople := e + 1
	active := min(numPeople, numActivePeople)
	return numPeople - active + d.intn(slot, active)
}

// nextAuctionID is a random base-0 auction id among the numInFlightAuctions
// most recent auctions up to last (inclusive).
func (d draws) nextAuctionID(slot, last uint64) uint64 {
	lo := uint64(0)
	if last > numInFlightAuctions {
		lo = last - numInFlightAuctions
	}
	return lo + d.intn(slot, last-lo+1)
}

// Skip, as a column of Fill's cols, leaves that column NULL without
// generating it (a reader fills only the columns its query reads).
const Skip = -1

func badColumn(k Kind, c int) {
	panic(fmt.Sprintf("nexmark: invalid %s column index %d", k, c))
}

// ---- bids ----

// Draw slots of a bid.
const (
	bsHotAuction = iota
	bsAuction
	bsHotBidder
	bsBidder
	bsPrice
	bsHotChannel
	bsChannel
	bsExtra // 2 slots
)

func (g *Generator) fillBid(idx uint64, cols []int, dst plan.Row) {
	n := eventNumber(Bid, idx)
	d := g.key(n)
	e := n / totalProportion
	for i := range dst {
		c := i
		if cols != nil {
			c = cols[i]
		}
		switch c {
		case BidAuction:
			lastAuction := e*auctionProportion + auctionProportion - 1
			var a uint64
			if d.intn(bsHotAuction, hotAuctionRatio) > 0 {
				a = lastAuction / hotBatch * hotBatch
			} else {
				a = d.nextAuctionID(bsAuction, lastAuction)
			}
			dst[i] = plan.Int(firstAuctionID + int64(a))
		case BidBidder:
			var p uint64
			if d.intn(bsHotBidder, hotBiddersRatio) > 0 {
				// Second person of the latest batch, so hot bidders and hot
				// sellers differ; never one not yet generated.
				p = min(e/hotBatch*hotBatch+1, e)
			} else {
				p = d.nextPersonID(bsBidder, e)
			}
			dst[i] = plan.Int(firstPersonID + int64(p))
		case BidPrice:
			dst[i] = plan.Int(d.price(bsPrice))
		case BidChannel, BidURL:
			ch := d.channel()
			if c == BidChannel {
				dst[i] = plan.Str(ch.name)
			} else {
				dst[i] = plan.Str(ch.url)
			}
		case BidDateTime:
			dst[i] = plan.Time(g.EventTime(n))
		case BidExtra:
			dst[i] = plan.Str(d.extra(bsExtra, 8+8+8+8, avgBidByteSize))
		case Skip:
			dst[i] = plan.Null
		default:
			badColumn(Bid, c)
		}
	}
}

func (d draws) channel() *channel {
	hot, gen := channelTables()
	if d.intn(bsHotChannel, hotChannelsRatio) > 0 {
		return &hot[d.intn(bsChannel, uint64(len(hot)))]
	}
	return &gen[d.intn(bsChannel, numChannels)]
}

// ---- auctions ----

// Draw slots of an auction.
const (
	asHotSeller = iota
	asSeller
	asCategory
	asInitialBid
	asReserve
	asExpires
	asName      // 2 slots
	asDesc  = 8 // 2 slots
	asExtra = 10
)

// numEventsForAuctions is how many events it takes to generate
// numInFlightAuctions auctions; it sets the average auction length.
const numEventsForAuctions = numInFlightAuctions * totalProportion / auctionProportion

func (g *Generator) fillAuction(idx uint64, cols []int, dst plan.Row) {
	n := eventNumber(Auction, idx)
	d := g.key(n)
	e := n / totalProportion
	t := g.EventTime(n)
	var name, desc string
	var haveText bool
	text := func() {
		if !haveText {
			name, desc, haveText = d.text(asName, 20), d.text(asDesc, 100), true
		}
	}
	for i := range dst {
		c := i
		if cols != nil {
			c = cols[i]
		}
		switch c {
		case AuctionID:
			dst[i] = plan.Int(firstAuctionID + int64(idx))
		case AuctionItemName:
			text()
			dst[i] = plan.Str(name)
		case AuctionDescription:
			text()
			dst[i] = plan.Str(desc)
		case AuctionInitialBid:
			dst[i] = plan.Int(d.price(asInitialBid))
		case AuctionReserve:
			dst[i] = plan.Int(d.price(asInitialBid) + d.price(asReserve))
		case AuctionDateTime:
			dst[i] = plan.Time(t)
		case AuctionExpires:
			horizon := g.EventTime(n+numEventsForAuctions) - t
			dst[i] = plan.Time(t + 1 + int64(d.intn(asExpires, uint64(max(2*horizon, 1)))))
		case AuctionSeller:
			var p uint64
			if d.intn(asHotSeller, hotSellersRatio) > 0 {
				p = e / hotBatch * hotBatch
			} else {
				p = d.nextPersonID(asSeller, e)
			}
			dst[i] = plan.Int(firstPersonID + int64(p))
		case AuctionCategory:
			dst[i] = plan.Int(firstCategoryID + int64(d.intn(asCategory, numCategories)))
		case AuctionExtra:
			text()
			dst[i] = plan.Str(d.extra(asExtra, 8+len(name)+len(desc)+8+8+8+8+8, avgAuctionByteSize))
		case Skip:
			dst[i] = plan.Null
		default:
			badColumn(Auction, c)
		}
	}
}

// ---- people ----

// Draw slots of a person.
const (
	psName      = iota
	psEmailUser     // 2 slots
	psEmailHost = 3 // 2 slots
	psCard      = 5 // 4 slots
	psCity      = 9
	psState     = 10
	psExtra     = 11 // 2 slots
)

const creditCardLen = 19 // "dddd dddd dddd dddd"

func (g *Generator) fillPerson(idx uint64, cols []int, dst plan.Row) {
	n := eventNumber(Person, idx)
	d := g.key(n)
	for i := range dst {
		c := i
		if cols != nil {
			c = cols[i]
		}
		switch c {
		case PersonID:
			dst[i] = plan.Int(firstPersonID + int64(idx))
		case PersonName:
			dst[i] = plan.Str(d.personName())
		case PersonEmailAddress:
			user, host := d.emailParts()
			dst[i] = plan.Str(user + "@" + host + ".com")
		case PersonCreditCard:
			dst[i] = plan.Str(d.creditCard())
		case PersonCity:
			dst[i] = plan.Str(usCities[d.intn(psCity, uint64(len(usCities)))])
		case PersonState:
			dst[i] = plan.Str(usStates[d.intn(psState, uint64(len(usStates)))])
		case PersonDateTime:
			dst[i] = plan.Time(g.EventTime(n))
		case PersonExtra:
			user, host := d.emailParts()
			size := 8 + len(d.personName()) + len(user) + 1 + len(host) + 4 + creditCardLen +
				len(usCities[d.intn(psCity, uint64(len(usCities)))]) +
				len(usStates[d.intn(psState, uint64(len(usStates)))])
			dst[i] = plan.Str(d.extra(psExtra, size, avgPersonByteSize))
		case Skip:
			dst[i] = plan.Null
		default:
			badColumn(Person, c)
		}
	}
}

func (d draws) personName() string {
	return personNames[d.intn(psName, uint64(len(personNames)))]
}

func (d draws) emailParts() (user, host string) {
	return d.text(psEmailUser, 7), d.text(psEmailHost, 5)
}

func (d draws) creditCard() string {
	var b [creditCardLen]byte
	for grp := range uint64(4) {
		v := d.intn(psCard+grp, 10000)
		p := grp * 5
		b[p] = '0' + byte(v/1000)
		b[p+1] = '0' + byte(v/100%10)
		b[p+2] = '0' + byte(v/10%10)
		b[p+3] = '0' + byte(v%10)
		if grp < 3 {
			b[p+4] = ' '
		}
	}
	return string(b[:])
}
