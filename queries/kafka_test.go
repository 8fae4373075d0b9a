package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/planner/plan"
)

// kafkaBid is one record value of the test topic.
type kafkaBid struct {
	Auction int64 `json:"auction"`
	Price   int64 `json:"price"`
	TS      int64 `json:"ts"`
}

// produce writes values into topic: committed (in a transaction, or not)
// or aborted.
func produce(t *testing.T, addr, topic string, txn string, commit bool, values ...[]byte) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.AllowAutoTopicCreation()}
	if txn != "" {
		opts = append(opts, kgo.TransactionalID(txn))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if txn != "" {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(len(v))), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if txn != "" {
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
}

// readCommitted returns the latest value per key of topic, read
// read_committed to its end (nil value: a tombstone).
func readCommitted(t *testing.T, addr, topic string) map[string][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]byte{}
	idle := 0
	// Three empty polls of a second each end the read: a full CI run on
	// two cores once stalled the in-process broker past three of 300 ms
	// (the sink topic read back 11 of its 30 keys).
	for idle < 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out[string(r.Key)] = r.Value; n++ })
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out
}

// TestKafkaSourceAndSink reads a multi-partition topic (committed,
// transactional, aborted and undecodable records) into a view and into an
// exactly-once Kafka sink, through a restart: the view's counts equal the
// committed, decodable records exactly once; the sink topic, read
// read_committed, holds the view's rows.
func TestKafkaSourceAndSink(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	rng := rand.New(rand.NewSource(9))
	want := map[[2]int64]int64{} // (window start, auction) -> count
	batch := func(n int) [][]byte {
		var vs [][]byte
		for i := 0; i < n; i++ {
			b := kafkaBid{Auction: rng.Int63n(5), Price: rng.Int63n(100), TS: rng.Int63n(60000)}
			v, _ := json.Marshal(b)
			vs = append(vs, v)
		}
		return vs
	}
	count := func(vs [][]byte) {
		for _, v := range vs {
			var b kafkaBid
			json.Unmarshal(v, &b)
			want[[2]int64{b.TS / 10000 * 10000, b.Auction}]++
		}
	}
	first := batch(300)
	produce(t, addr, "bids", "", true, first...)
	count(first)
	produce(t, addr, "bids", "", true, []byte(`{"auction": "x"}`), []byte(`not json`))
	aborted := batch(50)
	produce(t, addr, "bids", "t1", false, aborted...)

	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, fmt.Sprintf(`CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL, _partition BIGINT, _offset BIGINT)
		ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='{"topic": "bids", "event_time": "ts", "watermark_delay": "60s", "dead_letter_topic": "bids.dlq"}';
		CREATE VIEW v AS SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
		CREATE TABLE k_out (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, n BIGINT,
			PRIMARY KEY (window_start, window_end, auction)) ENGINE=kafka CONNECTION='%s'
			ENGINE_ATTRIBUTE='{"topic": "counts", "delivery": "exactly_once"}';
		INSERT INTO k_out SELECT window_start, window_end, auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '10s'), auction`, addr, addr))
	check := func(what string) {
		t.Helper()
		if _, err := e.Checkpoint(ctx, ""); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		_, rows, err := e.Results("v", true)
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]int64]int64{}
		for _, r := range rows {
			got[[2]int64{r[0].I, r[2].I}] = r[3].I
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: view\n%v\nwant\n%v", what, got, want)
		}
		sink := readCommitted(t, addr, "counts")
		if len(sink) != len(want) {
			t.Fatalf("%s: sink topic has %d keys, want %d", what, len(sink), len(want))
		}
		for k, n := range want {
			key := fmt.Sprintf(`{"window_start":%q,"window_end":%q,"auction":%d}`, plan.FormatTime(k[0]), plan.FormatTime(k[0]+10000), k[1])
			var row map[string]any
			if err := json.Unmarshal(sink[key], &row); err != nil || row["n"] != float64(n) {
				t.Fatalf("%s: sink key %s = %s, want n=%d", what, key, sink[key], n)
			}
		}
	}
	check("first")
	q, err := e.Query("v")
	if err != nil {
		t.Fatal(err)
	}
	if q.Counters["bad_records"] != 2 || len(q.RecentBadRecords) != 2 {
		t.Fatalf("bad records: %d %v", q.Counters["bad_records"], q.RecentBadRecords)
	}
	// The two undecodable records are in the dead-letter topic (each view
	// and sink query reading bids sends its own copy).
	dlq := readCommitted(t, addr, "bids.dlq")
	if len(dlq) != 2 || string(dlq["8"]) != "not json" {
		t.Fatalf("dead-letter topic: %q", dlq)
	}
	var total int64
	for k, off := range q.Offsets {
		if !strings.HasPrefix(k, "bids[") {
			t.Fatalf("offsets key %q", k)
		}
		total += off
	}
	// 300 + 2 records, 50 aborted with their markers: every partition is
	// read to its end, so the lag is 0.
	for k, lag := range q.Lag {
		if lag != 0 {
			t.Fatalf("lag of %s: %d", k, lag)
		}
	}
	if len(q.Offsets) != 3 || total < 302 {
		t.Fatalf("offsets %v", q.Offsets)
	}
	e.Close(ctx)

	// More records, while the engine is down, then a restart: each read once.
	second := batch(200)
	produce(t, addr, "bids", "t2", true, second...)
	count(second)
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	check("after the restart")
}
