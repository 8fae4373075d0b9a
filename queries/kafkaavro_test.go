package queries

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/runtime"
)

// Two versions of the Avro bids: v2 adds an optional bidder.
const (
	avroBidV1 = `{"type":"record","name":"Bid","fields":[
		{"name":"auction","type":"long"},
		{"name":"price","type":"double"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	avroBidV2 = `{"type":"record","name":"Bid","fields":[
		{"name":"auction","type":"long"},
		{"name":"price","type":"double"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"bidder","type":["null","string"],"default":null}]}`
)

type avroBid struct {
	Auction int64   `avro:"auction"`
	Price   float64 `avro:"price"`
	TS      int64   `avro:"ts"`
	Bidder  *string `avro:"bidder"`
}

// TestKafkaAvroSource reads a topic of Avro records written through a
// Schema Registry (two schema versions, and undecodable records) into a
// windowed view, whose rows equal the counts and sums of the records the
// test produced; and a topic of plain Avro with an inline schema. CREATE
// TABLE refuses columns that do not fit the registry's latest schema.
func TestKafkaAvroSource(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	defer reg.Close()
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, s := range []string{avroBidV1, avroBidV2} {
		ss, err := cl.CreateSchema(ctx, "bids-value", sr.Schema{Schema: s, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		ids[s] = ss.ID
	}
	// frame is the Confluent wire format, written here by hand.
	frame := func(schema string, v avroBid) []byte {
		var p any = v
		if schema == avroBidV1 {
			p = struct {
				Auction int64   `avro:"auction"`
				Price   float64 `avro:"price"`
				TS      int64   `avro:"ts"`
			}{v.Auction, v.Price, v.TS}
		}
		b, err := avro.Marshal(avro.MustParse(schema), p)
		if err != nil {
			t.Fatal(err)
		}
		return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(ids[schema])), b...)
	}
	want := map[[2]int64]bidAgg{} // (window start, auction)
	rng := rand.New(rand.NewSource(22))
	var values [][]byte
	names := []string{"ann", "bo"}
	for i := range 400 {
		b := avroBid{Auction: rng.Int63n(4), Price: float64(rng.Int63n(1000)) / 4, TS: 1_700_000_000_000 + rng.Int63n(60_000)}
		schema := avroBidV1
		if i%2 == 1 {
			schema = avroBidV2
			if i%3 != 0 {
				b.Bidder = &names[i%2]
			}
		}
		values = append(values, frame(schema, b))
		k := [2]int64{b.TS / 10_000 * 10_000, b.Auction}
		a := want[k]
		a.n++
		a.sum += b.Price
		if b.Bidder != nil {
			a.withBidder++
		}
		want[k] = a
	}
	produce(t, addr, "bids", "", true, values...)
	good := frame(avroBidV1, avroBid{1, 2, 1_700_000_000_000, nil})
	produce(t, addr, "bids", "", true,
		[]byte(`{"auction": 1}`), // JSON: no magic byte
		append(binary.BigEndian.AppendUint32([]byte{0}, 4242), good[5:]...), // an id the registry does not know
		good[:len(good)-3], // truncated
	)

	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	create := func(cols, attrs string) error {
		_, err := e.Exec(ctx, fmt.Sprintf(`CREATE TABLE bids (%s) ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='%s'`, cols, addr, attrs))
		return err
	}
	attrs := fmt.Sprintf(`{"topic": "bids", "format": "avro", "schema_registry": %q, "event_time": "ts", "watermark_delay": "60s", "dead_letter_topic": "bids.dlq"}`, reg.URL())
	for _, c := range []struct{ cols, attrs, want string }{
		{"auction VARCHAR(16), ts TIMESTAMP(3)", attrs, "CREATE TABLE bids: subject bids-value (latest version, schema id 2): field auction is Avro long, which does not fit column auction VARCHAR"},
		{"auction BIGINT, ts TIMESTAMP(3), bidder BIGINT", attrs, "field bidder is Avro [null, string], which does not fit column bidder BIGINT"},
		{"auction BIGINT, ts TIMESTAMP(3)", strings.Replace(attrs, `"topic": "bids"`, `"topic": "bids", "subject": "nope-value"`, 1), "subject nope-value is not in the schema registry"},
	} {
		if err := create(c.cols, c.attrs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CREATE TABLE bids (%s): %v, want %q", c.cols, err, c.want)
		}
	}
	if err := create("auction BIGINT NOT NULL, price DOUBLE, ts TIMESTAMP(3) NOT NULL, bidder VARCHAR(16), _partition BIGINT, _key VARCHAR(16)", attrs); err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE VIEW v AS SELECT window_start, auction, COUNT(*) AS n, SUM(price) AS s, COUNT(bidder) AS nb FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
		CREATE VIEW meta AS SELECT _partition, COUNT(*) AS n, COUNT(_key) AS nk FROM bids GROUP BY _partition`)

	// Plain Avro with an inline schema.
	plainSchema := `{"type":"record","name":"P","fields":[{"name":"k","type":"string"},{"name":"x","type":"int"}]}`
	var plain [][]byte
	wantX := map[string]int64{}
	for i := range 50 {
		k := fmt.Sprint("k", i%5)
		b, err := avro.Marshal(avro.MustParse(plainSchema), map[string]any{"k": k, "x": int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, b)
		wantX[k] += int64(i)
	}
	produce(t, addr, "plain", "", true, plain...)
	exec(t, e, fmt.Sprintf(`CREATE TABLE plain (k VARCHAR(16), x BIGINT) ENGINE=kafka CONNECTION='%s'
		ENGINE_ATTRIBUTE='{"topic": "plain", "format": "avro", "avro_schema": %s}';
		CREATE VIEW pv AS SELECT k, SUM(x) AS sx FROM plain GROUP BY k`, addr, strings.ReplaceAll(fmt.Sprintf("%q", plainSchema), `\`, `\\`)))

	checkBidAggs(t, e, want)
	q, err := e.Query("v")
	if err != nil {
		t.Fatal(err)
	}
	if q.Counters["bad_records"] != 3 || len(q.RecentBadRecords) != 3 {
		t.Fatalf("bad records: %d %v", q.Counters["bad_records"], q.RecentBadRecords)
	}
	var msgs []string
	for _, b := range q.RecentBadRecords {
		msgs = append(msgs, b.Error)
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{"not the Schema Registry magic byte 0", "schema id 4242 is not in the schema registry", "not a valid Avro record of its schema: truncated"} {
		if !strings.Contains(all, w) {
			t.Errorf("bad records lack %q:\n%s", w, all)
		}
	}
	if dlq := readCommitted(t, addr, "bids.dlq"); len(dlq) != 3 {
		t.Fatalf("dead-letter topic: %d records", len(dlq))
	}
	// The metadata columns are the records': every record has a key
	// (produce's), and the three partitions hold the 400 records.
	_, rows, err := e.Results("meta", true)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range rows {
		if r[0].I < 0 || r[0].I > 2 || r[1].I != r[2].I {
			t.Fatalf("metadata columns: %v", rows)
		}
		total += r[1].I
	}
	if len(rows) != 3 || total != int64(len(values)) {
		t.Fatalf("metadata columns: %v", rows)
	}
	_, rows, err = e.Results("pv", true)
	if err != nil {
		t.Fatal(err)
	}
	gotX := map[string]int64{}
	for _, r := range rows {
		gotX[r[0].S] = r[1].I
	}
	if fmt.Sprint(gotX) != fmt.Sprint(wantX) {
		t.Fatalf("inline Avro: %v, want %v", gotX, wantX)
	}
}

// TestKafkaAvroRegistryOutage: while the registry answers 503 the query
// is retrying and no record is lost or counted bad; once it answers,
// every record is read once.
func TestKafkaAvroRegistryOutage(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(2), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	reg := srfake.New()
	defer reg.Close()
	var down atomic.Bool
	down.Store(true)
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() && strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	id, _, err := reg.RegisterSchema("bids-value", sr.Schema{Schema: avroBidV2, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	var values [][]byte
	for i := range 100 {
		b := avroBid{Auction: int64(i % 7), Price: 1, TS: 1_700_000_000_000 + int64(i)}
		v, err := avro.Marshal(avro.MustParse(avroBidV2), b)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), v...))
		want[b.Auction]++
	}
	produce(t, addr, "bids", "", true, values...)
	ctx := context.Background()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	exec(t, e, fmt.Sprintf(`CREATE TABLE bids (auction BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=kafka CONNECTION='%s'
		ENGINE_ATTRIBUTE='{"topic": "bids", "format": "avro", "schema_registry": %q}';
		CREATE VIEW v AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction`, addr, reg.URL()))
	deadline := time.Now().Add(20 * time.Second)
	for {
		q, err := e.Query("v")
		if err != nil {
			t.Fatal(err)
		}
		if q.State == runtime.StateRetrying && strings.Contains(q.Error, "is unavailable") {
			if q.Counters["bad_records"] != 0 {
				t.Fatalf("bad records while the registry is down: %d %v", q.Counters["bad_records"], q.RecentBadRecords)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never retrying: state %q error %q", q.State, q.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
	down.Store(false)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for _, r := range rows {
		got[r[0].I] = r[1].I
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the outage %v, want %v", got, want)
	}
	q, _ := e.Query("v")
	if q.Counters["bad_records"] != 0 || q.State != runtime.StateRunning {
		t.Fatalf("after the outage: state %q, %d bad records", q.State, q.Counters["bad_records"])
	}
}

// CREATE TABLE IF NOT EXISTS of a table that exists creates nothing, so it
// asks the registry nothing: it succeeds while the registry is down.
func TestKafkaAvroIfNotExistsAsksNothing(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	if _, _, err := reg.RegisterSchema("bids-value", sr.Schema{Schema: avroBidV2, Type: sr.TypeAvro}); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	var down atomic.Bool
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		asked.Add(1)
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	ddl := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS bids (auction BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=kafka CONNECTION='127.0.0.1:1'
		ENGINE_ATTRIBUTE='{"topic": "bids", "format": "avro", "schema_registry": %q}'`, reg.URL())
	exec(t, e, ddl)
	if asked.Load() == 0 {
		t.Fatal("the first CREATE TABLE did not check the registry")
	}
	down.Store(true)
	asked.Store(0)
	exec(t, e, ddl)
	if n := asked.Load(); n != 0 {
		t.Fatalf("CREATE TABLE IF NOT EXISTS of an existing table made %d registry requests", n)
	}
	// Without IF NOT EXISTS the table's existence is the error, still.
	if _, err := e.Exec(context.Background(), strings.Replace(ddl, "IF NOT EXISTS ", "", 1)); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("CREATE TABLE of an existing table: %v, want already exists", err)
	}
}

// bidAgg is a row of the bid views' aggregates.
type bidAgg struct {
	n, withBidder int64
	sum           float64
}

// checkBidAggs checkpoints e and checks view v (window_start, auction,
// COUNT(*), SUM(price), COUNT(bidder)) against want.
func checkBidAggs(t *testing.T, e *Engine, want map[[2]int64]bidAgg) {
	t.Helper()
	if _, err := e.Checkpoint(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]int64]bidAgg{}
	for _, r := range rows {
		got[[2]int64{r[0].I, r[1].I}] = bidAgg{n: r[2].I, sum: r[3].F(), withBidder: r[4].I}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("view\n%v\nwant\n%v", got, want)
	}
}
