package kafka

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// newCluster starts an in-process broker (kfake listens on 127.0.0.1), closed when the
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

// The sink table of most tests.
var testColumns = plan.Schema{
	{Name: "id", Type: plan.TypeBigint, NotNull: true},
	{Name: "name", Type: plan.TypeVarchar},
	{Name: "price", Type: plan.TypeDouble},
	{Name: "ts", Type: plan.TypeTimestamp},
	{Name: "ok", Type: plan.TypeBoolean},
	{Name: "qty", Type: plan.TypeBigint},
}

func testSpec(addr, topic string, exactlyOnce bool, attrs ...string) sink.Spec {
	a := map[string]string{"topic": topic}
	for i := 0; i+1 < len(attrs); i += 2 {
		a[attrs[i]] = attrs[i+1]
	}
	return sink.Spec{
		Table:       "kafka_out",
		Engine:      "kafka",
		Connection:  addr,
		Attrs:       a,
		Columns:     testColumns,
		PrimaryKey:  []int{0},
		SinkID:      "inst/7/" + topic,
		ExactlyOnce: exactlyOnce,
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// open makes and opens a publisher, closed when the test ends.
func open(t testing.TB, spec sink.Spec) *Publisher {
	t.Helper()
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.Open(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return p
}

func committed(t testing.TB, p *Publisher) uint64 {
	t.Helper()
	n, err := p.Committed(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func commit(t testing.TB, p *Publisher, epoch uint64, changes ...sink.Change) {
	t.Helper()
	if err := p.CommitEpoch(ctx(t), epoch, changes); err != nil {
		t.Fatalf("commit epoch %d: %v", epoch, err)
	}
}

func row(id int64, name string, price float64, ts int64, ok bool, qty int64) plan.Row {
	return plan.Row{plan.Int(id), plan.Str(name), plan.Float(price), plan.Time(ts), plan.Bool(ok), plan.Int(qty)}
}

func upsert(r plan.Row) sink.Change { return sink.Change{Key: plan.Row{r[0]}, Row: r} }
func del(id int64) sink.Change      { return sink.Change{Key: plan.Row{plan.Int(id)}} }

// rec is a record read back: key, value (nil: tombstone).
type rec struct {
	part  int32
	key   string
	value *string
}

func (r rec) String() string {
	if r.value == nil {
		return r.key + " => <tombstone>"
	}
	return r.key + " => " + *r.value
}

// readTopic reads every record of topic, in each partition's order,
// partitions in turn, up to the high watermark it sees first. With
// committed, it reads as a read_committed consumer, and fails if an open
// transaction holds the read back for more than a few seconds.
func readTopic(t testing.TB, addr, topic string, committed bool) []rec {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(c, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset - 1
			from[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	rd, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	byPart := map[int32][]rec{}
	for len(want) > 0 {
		fs := rd.PollFetches(c)
		if c.Err() != nil {
			t.Fatalf("reading %s (committed %v): partitions %v not read to their end: %v", topic, committed, want, c.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("reading %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if w, ok := want[r.Partition]; ok && r.Offset >= w {
				delete(want, r.Partition)
			}
			if r.Attrs.IsControl() {
				return
			}
			x := rec{part: r.Partition, key: string(r.Key)}
			if r.Value != nil {
				v := string(r.Value)
				x.value = &v
			}
			byPart[r.Partition] = append(byPart[r.Partition], x)
		})
	}
	var parts []int32
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var out []rec
	for _, p := range parts {
		out = append(out, byPart[p]...)
	}
	return out
}

// latest is the last value per key of recs (a tombstone removes the key).
func latest(recs []rec) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		if r.value == nil {
			delete(m, r.key)
		} else {
			m[r.key] = *r.value
		}
	}
	return m
}

// jsonRow is the value of a row of testColumns as the sink writes it.
func jsonRow(id int64, name string, price float64, ts int64, ok bool, qty int64) string {
	p := fmt.Sprint(price)
	switch {
	case math.IsNaN(price):
		p = `"NaN"`
	case math.IsInf(price, 1):
		p = `"Infinity"`
	case math.IsInf(price, -1):
		p = `"-Infinity"`
	}
	return fmt.Sprintf(`{"id":%d,"name":%q,"price":%s,"ts":%q,"ok":%v,"qty":%d}`, id, name, p, plan.FormatTime(ts), ok, qty)
}

func jsonKey(id int64) string { return fmt.Sprintf(`{"id":%d}`, id) }
