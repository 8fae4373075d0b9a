package queries

import (
	"context"
	"encoding/json"
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

// TestKafkaAvroSink: an exactly-once Kafka sink in format avro, fed by
// INSERT INTO ... SELECT of a windowed aggregation: the sink topic, read
// read_committed and decoded through sr.Serde with the schemas the
// registry holds for the records' ids (hamba/avro), equals the view of the
// same query and the counts the test computed from what it produced.
func TestKafkaAvroSink(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	reg := srfake.New()
	defer reg.Close()
	// Subjects of the topic "late" are unavailable while down is set.
	var down atomic.Bool
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() && strings.Contains(r.URL.Path, "/subjects/late-") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})

	type agg struct {
		n   int64
		sum int64
	}
	want := map[[2]int64]agg{} // (window start, auction)
	rng := rand.New(rand.NewSource(22))
	var values [][]byte
	for range 300 {
		b := kafkaBid{Auction: rng.Int63n(5), Price: rng.Int63n(100), TS: rng.Int63n(60000)}
		v, _ := json.Marshal(b)
		values = append(values, v)
		k := [2]int64{b.TS / 10000 * 10000, b.Auction}
		a := want[k]
		a.n++
		a.sum += b.Price
		want[k] = a
	}
	produce(t, addr, "bids", "", true, values...)

	ctx := context.Background()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond,
		SinkLimits: runtime.SinkLimits{BackoffMax: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	exec(t, e, fmt.Sprintf(`CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL)
		ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='{"topic": "bids", "event_time": "ts", "watermark_delay": "60s"}';
		CREATE VIEW v AS SELECT window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS s, AVG(price) AS a FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
		CREATE TABLE k_out (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, n BIGINT NOT NULL, s BIGINT, a DOUBLE,
			PRIMARY KEY (window_start, window_end, auction)) ENGINE=kafka CONNECTION='%s'
			ENGINE_ATTRIBUTE='{"topic": "counts", "delivery": "exactly_once", "format": "avro", "schema_registry": %q}';
		INSERT INTO k_out SELECT window_start, window_end, auction, COUNT(*), SUM(price), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction`, addr, addr, reg.URL()))
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}

	// The view, and the test's own counts.
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	view := map[string]string{}
	for _, r := range rows {
		k := fmt.Sprintf("%d/%d/%d", r[0].I, r[1].I, r[2].I)
		view[k] = fmt.Sprintf("n=%d s=%d a=%g", r[3].I, r[4].I, r[5].F())
		w := want[[2]int64{r[0].I, r[2].I}]
		if r[1].I != r[0].I+10000 || r[3].I != w.n || r[4].I != w.sum {
			t.Fatalf("view row %v, want n=%d s=%d", r, w.n, w.sum)
		}
	}
	if len(view) != len(want) {
		t.Fatalf("view has %d rows, want %d", len(view), len(want))
	}

	// The sink topic, through the registry.
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	seen := map[int]bool{}
	decode := func(b []byte) map[string]any {
		t.Helper()
		id, _, err := serde.DecodeID(b)
		if err != nil {
			t.Fatalf("record %x: %v", b, err)
		}
		if !seen[id] {
			seen[id] = true
			s, err := cl.SchemaByID(ctx, id)
			if err != nil || s.Type != sr.TypeAvro {
				t.Fatalf("schema id %d: %v %v", id, s.Type, err)
			}
			sch := avro.MustParse(s.Schema)
			serde.Register(id, map[string]any{}, sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(sch, b, v) }))
		}
		var m map[string]any
		if err := serde.Decode(b, &m); err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		return m
	}
	// unwrap reads a ["null", T] union's value as hamba gives it.
	unwrap := func(v any) any {
		if m, ok := v.(map[string]any); ok {
			for _, x := range m {
				return x
			}
		}
		return v
	}
	ms := func(v any) int64 { return unwrap(v).(time.Time).UnixMilli() }
	sinkRows := func(topic string) map[string]string {
		t.Helper()
		got := map[string]string{}
		for kb, vb := range readCommitted(t, addr, topic) {
			k, v := decode([]byte(kb)), decode(vb)
			key := fmt.Sprintf("%d/%d/%d", ms(k["window_start"]), ms(k["window_end"]), unwrap(k["auction"]))
			if ms(v["window_start"]) != ms(k["window_start"]) || unwrap(v["auction"]) != unwrap(k["auction"]) {
				t.Fatalf("record key %v, value %v", k, v)
			}
			got[key] = fmt.Sprintf("n=%d s=%d a=%g", v["n"], unwrap(v["s"]), unwrap(v["a"]))
		}
		return got
	}
	if got := sinkRows("counts"); fmt.Sprint(got) != fmt.Sprint(view) {
		t.Fatalf("sink topic through the registry\n%v\nwant the view's\n%v", got, view)
	}
	if len(seen) != 2 {
		t.Fatalf("records carry %d schema ids, want 2 (key and value)", len(seen))
	}
	for _, subj := range []string{"counts-value", "counts-key"} {
		if !reg.SubjectExists(subj) {
			t.Fatalf("subject %s not registered", subj)
		}
	}

	// A registry that cannot be asked when the sink opens: INSERT INTO
	// goes ahead and the query is retrying; once the
	// registry answers, the sink catches up with the view.
	down.Store(true)
	exec(t, e, fmt.Sprintf(`CREATE TABLE late (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, n BIGINT NOT NULL, s BIGINT, a DOUBLE,
			PRIMARY KEY (window_start, window_end, auction)) ENGINE=kafka CONNECTION='%s'
			ENGINE_ATTRIBUTE='{"topic": "late", "delivery": "exactly_once", "format": "avro", "schema_registry": %q}';
		INSERT INTO late SELECT window_start, window_end, auction, COUNT(*), SUM(price), AVG(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction`, addr, reg.URL()))
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	infos, err := e.Checkpoint(short, "late")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if s := infos[0].Sinks["late"].(map[string]any); s["committed"] != false || !strings.Contains(s["error"].(string), "is unavailable") {
		t.Fatalf("sink reported %v with the registry down", s)
	}
	if q, _ := e.Query("late"); q.State != runtime.StateRetrying || !strings.Contains(q.Error, "schema registry") || !strings.Contains(q.Error, "late-value") {
		t.Fatalf("state %q error %q, want retrying with the registry's error", q.State, q.Error)
	}
	down.Store(false)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := sinkRows("late"); fmt.Sprint(got) != fmt.Sprint(view) {
		t.Fatalf("sink topic after the outage\n%v\nwant the view's\n%v", got, view)
	}
	if q, _ := e.Query("late"); q.State != runtime.StateRunning {
		t.Fatalf("state %q after the registry came back", q.State)
	}

	// INSERT INTO a sink whose subject's latest schema cannot take its
	// records (register false) is refused, naming subject and field.
	reg.SeedSchema("strict-key", 1, 90, sr.Schema{Type: sr.TypeAvro, Schema: `{"type":"record","name":"K","fields":[{"name":"auction","type":"long"}]}`})
	reg.SeedSchema("strict-value", 1, 91, sr.Schema{Type: sr.TypeAvro, Schema: `{"type":"record","name":"V","fields":[{"name":"auction","type":"long"},{"name":"n","type":"string"}]}`})
	exec(t, e, fmt.Sprintf(`CREATE TABLE strict (auction BIGINT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (auction)) ENGINE=kafka CONNECTION='%s'
		ENGINE_ATTRIBUTE='{"topic": "strict", "delivery": "at_least_once", "format": "avro", "schema_registry": %q, "register": "false"}'`, addr, reg.URL()))
	_, err = e.Exec(ctx, `INSERT INTO strict SELECT auction, COUNT(*) FROM bids GROUP BY auction`)
	if err == nil || !strings.Contains(err.Error(), "subject strict-value") || !strings.Contains(err.Error(), "field n is string, which column n (BIGINT) cannot be written as") {
		t.Fatalf("INSERT INTO strict: %v", err)
	}
}
