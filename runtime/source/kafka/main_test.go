package kafka

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// waitFor bounds every wait of the tests.
const waitFor = 10 * time.Second

// newCluster starts an in-process broker on 127.0.0.1, closed when the
// test ends, and returns its address.
func newCluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

func testCtx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return c
}

// freePort is a loopback port nothing listens on (now).
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// newProducer makes a client producing to the partition each record
// names, closed when the test ends.
func newProducer(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newTxProducer makes a transactional producer.
func newTxProducer(t testing.TB, addr, txID string) *kgo.Client {
	return newProducer(t, addr, kgo.TransactionalID(txID), kgo.TransactionTimeout(30*time.Second))
}

// produce writes records and waits for them; it returns them with their
// offsets set.
func produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return recs
}

// mk makes a record of topic t, partition p; ts 0 lets the producer
// stamp it.
func mk(topic string, p int32, key, value string, ts int64) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: []byte(value)}
	if ts != 0 {
		r.Timestamp = time.UnixMilli(ts)
	}
	return r
}

// tomb makes a tombstone (a nil value).
func tomb(topic string, p int32, key string, ts int64) *kgo.Record {
	r := mk(topic, p, key, "", ts)
	r.Value = nil
	return r
}

func newConsumer(t testing.TB, addr, topic string) *Consumer {
	t.Helper()
	c, err := New(Config{Brokers: []string{addr}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func start(t testing.TB, c *Consumer, from map[int32]int64) {
	t.Helper()
	if err := c.Start(from); err != nil {
		t.Fatal(err)
	}
}

func startOffsets(t testing.TB, c *Consumer, latest bool) map[int32]int64 {
	t.Helper()
	o, err := c.StartOffsets(testCtx(t), latest)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func endOffsets(t testing.TB, c *Consumer) map[int32]int64 {
	t.Helper()
	o, err := c.EndOffsets(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// pollUntil polls (at most max records a call) and collects copies of
// the records until done says so; it waits on Ready between empty polls
// and fails after waitFor.
func pollUntil(t testing.TB, c *Consumer, max int, what string, done func(got []Record) bool) []Record {
	t.Helper()
	var got []Record
	deadline := time.Now().Add(waitFor)
	for !done(got) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: gave up after %s with %d records %v, Position %v, Problem %v", what, waitFor, len(got), recsString(got), c.Position(), c.Problem())
		}
		n := c.Poll(max, func(r *Record) { got = append(got, *r) })
		if max > 0 && n > max {
			t.Fatalf("Poll(%d) handed out %d records", max, n)
		}
		if n == 0 {
			select {
			case <-c.Ready():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return got
}

// readTo polls until Position reaches ends in every partition of ends.
func readTo(t testing.TB, c *Consumer, max int, ends map[int32]int64) []Record {
	t.Helper()
	return pollUntil(t, c, max, fmt.Sprintf("reading to %v", ends), func([]Record) bool {
		pos := c.Position()
		for p, e := range ends {
			if pos[p] < e {
				return false
			}
		}
		return true
	})
}

func recsString(rs []Record) string {
	var b bytes.Buffer
	for _, r := range rs {
		v := "<nil>"
		if r.Value != nil {
			v = fmt.Sprintf("%q", r.Value)
		}
		fmt.Fprintf(&b, "[p%d@%d %q=%s ts %d] ", r.Partition, r.Offset, r.Key, v, r.Timestamp)
	}
	return b.String()
}

// byPartition groups records by partition, in the order handed out.
func byPartition(rs []Record) map[int32][]Record {
	m := map[int32][]Record{}
	for _, r := range rs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// checkRecords checks that got holds exactly the produced records want,
// in offset order per partition, with their keys, values (nil for a
// tombstone) and timestamps.
func checkRecords(t testing.TB, got []Record, want []*kgo.Record) {
	t.Helper()
	w := append([]*kgo.Record(nil), want...)
	sort.SliceStable(w, func(i, j int) bool {
		if w[i].Partition != w[j].Partition {
			return w[i].Partition < w[j].Partition
		}
		return w[i].Offset < w[j].Offset
	})
	g := byPartition(got)
	var flat []Record
	parts := make([]int32, 0, len(g))
	for p := range g {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		flat = append(flat, g[p]...)
	}
	if len(flat) != len(w) {
		t.Fatalf("got %d records, want %d:\ngot  %s\nwant %s", len(flat), len(w), recsString(flat), recsString(fromKgo(w)))
	}
	for i, r := range flat {
		x := w[i]
		if r.Partition != x.Partition || r.Offset != x.Offset || !bytes.Equal(r.Key, x.Key) ||
			!bytes.Equal(r.Value, x.Value) || (r.Value == nil) != (x.Value == nil) || r.Timestamp != x.Timestamp.UnixMilli() {
			t.Fatalf("record %d (in partition order): got %s, want %s\ngot  %s\nwant %s", i, recsString(flat[i:i+1]), recsString(fromKgo(w[i:i+1])), recsString(flat), recsString(fromKgo(w)))
		}
	}
}

func fromKgo(rs []*kgo.Record) []Record {
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()}
	}
	return out
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if bo, ok := b[p]; !ok || bo != o {
			return false
		}
	}
	return true
}
