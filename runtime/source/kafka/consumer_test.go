package kafka

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestNewChecksConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no brokers", Config{Topic: "t"}, "no brokers"},
		{"no port", Config{Brokers: []string{"localhost"}, Topic: "t"}, `"localhost" is not host:port`},
		{"bad port", Config{Brokers: []string{"a:1", "b:x"}, Topic: "t"}, `"b:x" is not host:port`},
		{"port 0", Config{Brokers: []string{"a:0"}, Topic: "t"}, `"a:0" is not host:port`},
		{"no host", Config{Brokers: []string{":9092"}, Topic: "t"}, `":9092" is not host:port`},
		{"no topic", Config{Brokers: []string{"a:1"}}, `topic "": empty`},
		{"bad topic", Config{Brokers: []string{"a:1"}, Topic: "a b"}, `' ' is not allowed`},
		{"dot topic", Config{Brokers: []string{"a:1"}, Topic: ".."}, "not a valid topic name"},
		{"long topic", Config{Brokers: []string{"a:1"}, Topic: strings.Repeat("t", 250)}, "longer than 249"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New(%+v): %v, want an error containing %q", c.cfg, err, c.want)
			}
		})
	}
	c, err := New(Config{Brokers: []string{"127.0.0.1:9092", "[::1]:9093"}, Topic: "bids.v1_x-y"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.ClientID != DefaultClientID || c.Position() != nil || c.Problem() != nil || c.Poll(10, func(*Record) { t.Fatal("a record before Start") }) != 0 {
		t.Fatalf("new consumer: client id %q, Position %v, Problem %v", c.cfg.ClientID, c.Position(), c.Problem())
	}
	c.Close()
	c.Close()
	if err := c.Start(map[int32]int64{0: 0}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if _, err := c.Partitions(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Partitions after Close: %v", err)
	}

	b, err := ParseBrokers(" a:1, b:2 ,")
	if err != nil || !reflect.DeepEqual(b, []string{"a:1", "b:2"}) {
		t.Fatalf("ParseBrokers: %v %v", b, err)
	}
	for _, conn := range []string{"", " , ", "a", "a:1,b", "kafka://a:1"} {
		if b, err := ParseBrokers(conn); err == nil {
			t.Fatalf("ParseBrokers(%q) = %v, want an error", conn, b)
		}
	}
}

func TestStartChecksPositions(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	c := newConsumer(t, addr, "t")
	for _, from := range []map[int32]int64{nil, {}, {-1: 0}, {0: -2}} {
		if err := c.Start(from); err == nil {
			t.Fatalf("Start(%v) succeeded", from)
		}
	}
	if _, err := c.Partitions(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(map[int32]int64{0: 0, 1: 0}); err == nil || !strings.Contains(err.Error(), "partition 1 does not exist") {
		t.Fatalf("Start with a partition the topic lacks: %v", err)
	}
	start(t, c, map[int32]int64{0: 0})
	if err := c.Start(map[int32]int64{0: 0}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second Start: %v", err)
	}
}

func TestPartitionsAndStartOffsets(t *testing.T) {
	cl, addr := newCluster(t, kfake.SeedTopics(3, "t"))
	p := newProducer(t, addr)
	produce(t, p, mk("t", 0, "a", "1", 0), mk("t", 0, "b", "2", 0), mk("t", 0, "c", "3", 0), mk("t", 2, "d", "4", 0), mk("t", 2, "e", "5", 0))
	c := newConsumer(t, addr, "t")
	parts, err := c.Partitions(testCtx(t))
	if err != nil || !reflect.DeepEqual(parts, []int32{0, 1, 2}) {
		t.Fatalf("Partitions: %v %v", parts, err)
	}
	if o := startOffsets(t, c, false); !equalOffsets(o, map[int32]int64{0: 0, 1: 0, 2: 0}) {
		t.Fatalf("earliest: %v", o)
	}
	if o := startOffsets(t, c, true); !equalOffsets(o, map[int32]int64{0: 3, 1: 0, 2: 2}) {
		t.Fatalf("latest: %v", o)
	}
	if err := cl.DeleteRecords("t", 0, 2); err != nil {
		t.Fatal(err)
	}
	if o := startOffsets(t, c, false); !equalOffsets(o, map[int32]int64{0: 2, 1: 0, 2: 0}) {
		t.Fatalf("earliest after deleting records: %v", o)
	}
	if o := endOffsets(t, c); !equalOffsets(o, map[int32]int64{0: 3, 1: 0, 2: 2}) {
		t.Fatalf("EndOffsets: %v", o)
	}
	// Starting at latest reads only what comes next.
	start(t, c, startOffsets(t, c, true))
	if n := c.Poll(0, func(r *Record) { t.Fatalf("record %+v before any was produced", *r) }); n != 0 {
		t.Fatalf("Poll = %d", n)
	}
	next := produce(t, p, mk("t", 1, "f", "6", 0))
	checkRecords(t, pollUntil(t, c, 0, "the next record", func(g []Record) bool { return len(g) == 1 }), next)
}

func TestUnknownTopic(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	c := newConsumer(t, addr, "nope")
	if _, err := c.Partitions(testCtx(t)); !errors.Is(err, ErrUnknownTopic) || !errors.Is(err, kerr.UnknownTopicOrPartition) ||
		!strings.Contains(err.Error(), "Kafka topic nope (brokers "+addr+")") {
		t.Fatalf("Partitions of a missing topic: %v", err)
	}
	for _, latest := range []bool{false, true} {
		if _, err := c.StartOffsets(testCtx(t), latest); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("StartOffsets(latest %v) of a missing topic: %v", latest, err)
		}
	}
	if _, err := c.EndOffsets(testCtx(t)); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("EndOffsets of a missing topic: %v", err)
	}
}

// TestRecords reads keys, values, empty values, tombstones and
// timestamps from several partitions, a few records per Poll: each
// record once, in order per partition.
func TestRecords(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(3, "t"))
	p := newProducer(t, addr)
	var want []*kgo.Record
	for i := 0; i < 30; i++ {
		part := int32(i % 3)
		var r *kgo.Record
		switch {
		case i%7 == 3:
			r = tomb("t", part, fmt.Sprintf("k%d", i%5), 1_700_000_000_000+int64(i))
		case i%11 == 5:
			r = mk("t", part, "", "", 1_700_000_000_000+int64(i)) // empty key and value: not a tombstone
		default:
			r = mk("t", part, fmt.Sprintf("k%d", i%5), fmt.Sprintf(`{"n":%d}`, i), 1_700_000_000_000+int64(i))
		}
		want = append(want, r)
	}
	// In several produce calls, so that partitions hold several batches.
	for i := 0; i < len(want); i += 4 {
		produce(t, p, want[i:min(i+4, len(want))]...)
	}
	c := newConsumer(t, addr, "t")
	start(t, c, startOffsets(t, c, false))
	ends := endOffsets(t, c)
	if !equalOffsets(ends, map[int32]int64{0: 10, 1: 10, 2: 10}) {
		t.Fatalf("EndOffsets: %v", ends)
	}
	got := readTo(t, c, 4, ends)
	checkRecords(t, got, want)
	if pos := c.Position(); !equalOffsets(pos, ends) {
		t.Fatalf("Position %v, want %v", pos, ends)
	}
	if n := c.Poll(0, func(r *Record) { t.Fatalf("extra record %+v", *r) }); n != 0 {
		t.Fatalf("Poll after the end = %d", n)
	}
	if err := c.Problem(); err != nil {
		t.Fatalf("Problem: %v", err)
	}
}

// TestPollNeverBlocks: with nothing on the broker Poll returns 0 at
// once, and Ready stays quiet; a record arriving signals Ready.
func TestPollNeverBlocks(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(2, "t"))
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 0, 1: 0})
	for i := 0; i < 100; i++ {
		if n := c.Poll(10, func(r *Record) { t.Fatalf("record %+v from an empty topic", *r) }); n != 0 {
			t.Fatalf("Poll = %d", n)
		}
	}
	select {
	case <-c.Ready():
		t.Fatal("Ready signalled with nothing produced")
	default:
	}
	p := newProducer(t, addr)
	want := produce(t, p, mk("t", 1, "k", "v", 0))
	if !waitReady(c) {
		t.Fatalf("Ready not signalled within %s of a record (Problem %v)", waitFor, c.Problem())
	}
	// Ready fires from kgo's buffering hook, which may run just before
	// the fetch is pollable: poll (never blocking) until it is there.
	var got []Record
	for deadline := time.Now().Add(waitFor); len(got) == 0 && time.Now().Before(deadline); {
		if c.Poll(10, func(r *Record) { got = append(got, *r) }) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(got) != 1 {
		t.Fatalf("Poll after Ready: %d records, want 1", len(got))
	}
	checkRecords(t, got, want)
	if pos := c.Position(); !equalOffsets(pos, map[int32]int64{0: 0, 1: 1}) {
		t.Fatalf("Position %v", pos)
	}
}

func waitReady(c *Consumer) bool {
	select {
	case <-c.Ready():
		return true
	case <-time.After(waitFor):
		return false
	}
}

// TestExactResume consumes part of a topic, closes, and resumes a new
// consumer at the Position taken: the rest, nothing twice, nothing
// missing.
func TestExactResume(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(2, "t"))
	p := newProducer(t, addr)
	var all []*kgo.Record
	for i := 0; i < 40; i++ {
		all = append(all, mk("t", int32(i%2), fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), 1_700_000_000_000+int64(i)))
	}
	produce(t, p, all[:30]...)

	c1 := newConsumer(t, addr, "t")
	start(t, c1, startOffsets(t, c1, false))
	first := pollUntil(t, c1, 4, "the first 13 records", func(g []Record) bool { return len(g) >= 13 })
	pos := c1.Position()
	for part, rs := range byPartition(first) {
		if last := rs[len(rs)-1].Offset; pos[part] != last+1 {
			t.Fatalf("Position %v after handing out up to offset %d of partition %d", pos, last, part)
		}
	}
	c1.Close()
	if n := c1.Poll(0, func(*Record) { t.Fatal("a record after Close") }); n != 0 {
		t.Fatalf("Poll after Close = %d", n)
	}
	produce(t, p, all[30:]...)

	c2 := newConsumer(t, addr, "t")
	start(t, c2, pos)
	rest := readTo(t, c2, 5, endOffsets(t, c2))
	checkRecords(t, append(first, rest...), all)
}

// TestReadyAfterRecords: Ready fires for records produced while the
// consumer waits on it, Poll then hands them out.
func TestReadyAfterRecords(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 0})
	p := newProducer(t, addr)
	var got []Record
	for i := 0; i < 3; i++ {
		want := produce(t, p, mk("t", 0, "k", fmt.Sprint(i), 0))
		if !waitReady(c) {
			t.Fatalf("round %d: Ready not signalled", i)
		}
		got = got[:0]
		// The signal may come from a record already handed out: poll
		// until this one is here.
		got = pollUntil(t, c, 0, "the new record", func(g []Record) bool { return len(g) == 1 })
		checkRecords(t, got, want)
	}
}

func TestProblemJoins(t *testing.T) {
	m := multiError{errors.New("a"), &OffsetOutOfRangeError{Partition: 1, Offset: 2, LogStart: 5, LogEnd: 9}, errors.New("c"), errors.New("d"), errors.New("e"), errors.New("f")}
	if s := m.Error(); s != "a; partition 1: offset 2 is below the log start 5 (deleted by retention); c; d; and 2 more" {
		t.Fatalf("%q", s)
	}
	var oe *OffsetOutOfRangeError
	if !errors.As(m, &oe) || !errors.Is(m, kerr.OffsetOutOfRange) {
		t.Fatal("errors.As/Is do not see through multiError")
	}
}
