package queries

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// keyed is one record of a change topic: its key and value (nil: a
// tombstone).
type keyed struct{ key, value []byte }

// produceKeyed writes records into topic, partitioned by their keys (so
// each key's changes stay in order).
func produceKeyed(t *testing.T, addr, topic string, recs []keyed) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, r := range recs {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: r.key, Value: r.value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// order is a row of the orders table.
type order struct {
	Customer string
	Amount   float64
}

// orderChanges is a random history of an orders table: a snapshot of n
// rows, then inserts, updates and deletes (and deletes of keys never
// seen), each applied to state, the oracle.
type orderChange struct {
	op     byte // 'r', 'c', 'u', 'd'
	id     int64
	row    order
	before order
}

func orderHistory(rng *rand.Rand, state map[int64]order, nextID *int64, snapshot, changes int) []orderChange {
	customers := []string{"ann", "bob", "cy", "dee"}
	pick := func() order {
		return order{Customer: customers[rng.Intn(len(customers))], Amount: float64(rng.Intn(1000)) / 4}
	}
	var out []orderChange
	for i := 0; i < snapshot; i++ {
		id := *nextID
		*nextID++
		o := pick()
		state[id] = o
		out = append(out, orderChange{op: 'r', id: id, row: o})
	}
	for i := 0; i < changes; i++ {
		ids := make([]int64, 0, len(state))
		for id := range state {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		switch k := rng.Intn(10); {
		case k < 4 || len(ids) == 0:
			id := *nextID
			*nextID++
			o := pick()
			state[id] = o
			out = append(out, orderChange{op: 'c', id: id, row: o})
		case k < 7:
			id := ids[rng.Intn(len(ids))]
			o := pick()
			out = append(out, orderChange{op: 'u', id: id, row: o, before: state[id]})
			state[id] = o
		case k < 9:
			id := ids[rng.Intn(len(ids))]
			out = append(out, orderChange{op: 'd', id: id, before: state[id]})
			delete(state, id)
		default:
			out = append(out, orderChange{op: 'd', id: 1_000_000 + int64(i)}) // never seen: changes nothing
		}
	}
	return out
}

// revenue is the oracle of SELECT customer, SUM(amount) ... GROUP BY
// customer over state.
func revenue(state map[int64]order) map[string]float64 {
	out := map[string]float64{}
	for _, o := range state {
		out[o.Customer] += o.Amount
	}
	return out
}

const debeziumOrderSchema = `{"type":"struct","name":"pg.public.orders.Envelope","fields":[
	{"type":"struct","optional":true,"field":"before","fields":[{"type":"int64","field":"id"},{"type":"string","field":"customer"},{"type":"double","field":"amount"}]},
	{"type":"struct","optional":true,"field":"after","fields":[{"type":"int64","field":"id"},{"type":"string","field":"customer"},{"type":"double","field":"amount"}]},
	{"type":"struct","field":"source","fields":[{"type":"int64","field":"ts_ms"}]},{"type":"string","field":"op"},{"type":"int64","field":"ts_ms"}]}`

// debeziumRecords are the Debezium change events of changes, as the
// JSON converter writes them (keys with their schema wrapper; values of
// the snapshot with it, the rest without); each delete is followed by its tombstone. Deletes carry
// before's key only, as PostgreSQL without REPLICA IDENTITY FULL.
func debeziumRecords(changes []orderChange, ts *int64) []keyed {
	var out []keyed
	for _, c := range changes {
		*ts += 10
		// The key with its schema wrapper (key.converter.schemas.enable):
		// the same bytes for every change of a row, so the same partition.
		key := fmt.Sprintf(`{"schema":{"type":"struct","fields":[{"type":"int64","field":"id"}]},"payload":{"id":%d}}`, c.id)
		row := func(o order) string {
			return fmt.Sprintf(`{"id":%d,"customer":%q,"amount":%v,"notes":"ignored"}`, c.id, o.Customer, o.Amount)
		}
		before, after := "null", "null"
		switch c.op {
		case 'u':
			after = row(c.row)
			before = row(c.before)
		case 'r', 'c':
			after = row(c.row)
		case 'd':
			before = fmt.Sprintf(`{"id":%d,"customer":null,"amount":null}`, c.id)
		}
		payload := fmt.Sprintf(`{"before":%s,"after":%s,"source":{"ts_ms":%d,"db":"shop","table":"orders"},"op":"%c","ts_ms":%d,"transaction":null}`,
			before, after, *ts, c.op, *ts+3)
		if c.op == 'r' {
			payload = `{"schema":` + debeziumOrderSchema + `,"payload":` + payload + `}`
		}
		out = append(out, keyed{[]byte(key), []byte(payload)})
		if c.op == 'd' {
			out = append(out, keyed{[]byte(key), nil})
		}
	}
	return out
}

// upsertRecords are changes as an upsert topic carries them: the row as
// the value, the id as the key (a bare number), a tombstone per delete.
func upsertRecords(changes []orderChange) []keyed {
	var out []keyed
	for _, c := range changes {
		key := []byte(fmt.Sprint(c.id))
		if c.op == 'd' {
			out = append(out, keyed{key, nil})
			continue
		}
		out = append(out, keyed{key, []byte(fmt.Sprintf(`{"customer":%q,"amount":%v}`, c.row.Customer, c.row.Amount))})
	}
	return out
}

// TestKafkaChangeSources: a Debezium topic (snapshot, inserts, updates,
// deletes with tombstones, deletes of keys never seen) and an upsert
// topic of the same history, read as PRIMARY KEY tables into a running
// aggregate; at a checkpoint after the first part, then after a restart
// and the rest, the revenue per customer equals the oracle's from the
// table state the changes make. Bad records are counted, named and
// dead-lettered; the query goes on.
func TestKafkaChangeSources(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	rng := rand.New(rand.NewSource(22))
	state := map[int64]order{}
	nextID, ts := int64(1), int64(1_700_000_000_000)

	first := orderHistory(rng, state, &nextID, 30, 120)
	produceKeyed(t, addr, "pg.public.orders", debeziumRecords(first, &ts))
	produceKeyed(t, addr, "orders-upsert", upsertRecords(first))
	// Bad records: an envelope without op, a key that is not the row's;
	// an upsert without a key, a key that does not match the value.
	produceKeyed(t, addr, "pg.public.orders", []keyed{
		{[]byte(`{"id":5}`), []byte(`{"before":null,"after":{"id":5,"customer":"ann","amount":1},"ts_ms":1}`)},
		{[]byte(`{"id":6}`), []byte(`{"before":null,"after":{"id":7,"customer":"ann","amount":1},"op":"c","source":{"ts_ms":1}}`)},
	})
	produceKeyed(t, addr, "orders-upsert", []keyed{
		{nil, []byte(`{"customer":"ann","amount":1}`)},
		{[]byte(`8`), []byte(`{"id":9,"customer":"ann","amount":1}`)},
	})
	want1 := revenue(state)

	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, fmt.Sprintf(`CREATE TABLE orders (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, _source_ts_ms TIMESTAMP(3), PRIMARY KEY (id))
			ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='{"topic": "pg.public.orders", "format": "debezium_json", "event_time": "_source_ts_ms", "dead_letter_topic": "orders.dlq"}';
		CREATE TABLE orders_u (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, PRIMARY KEY (id))
			ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='{"topic": "orders-upsert", "format": "upsert_json"}';
		CREATE VIEW rev AS SELECT customer, SUM(amount) AS revenue FROM orders GROUP BY customer;
		CREATE VIEW rev_u AS SELECT customer, SUM(amount) AS revenue FROM orders_u GROUP BY customer`, addr, addr))
	checkRevenue(t, e, "first part", want1)
	for view, wantErrs := range map[string][]string{
		"rev":   {"a Debezium envelope without op", "column id: the record key has 6, the value 7 (they must be equal)"},
		"rev_u": {"a record without a key: an upsert_json record's key is its PRIMARY KEY (id)", "column id: the record key has 8, the value 9 (they must be equal)"},
	} {
		q, err := e.Query(view)
		if err != nil {
			t.Fatal(err)
		}
		if q.Counters["bad_records"] != 2 || len(q.RecentBadRecords) != 2 {
			t.Fatalf("%s: bad records %d %v", view, q.Counters["bad_records"], q.RecentBadRecords)
		}
		var errs []string
		for _, b := range q.RecentBadRecords {
			errs = append(errs, b.Error)
		}
		sort.Strings(errs)
		if strings.Join(errs, "\n") != strings.Join(wantErrs, "\n") {
			t.Fatalf("%s: bad records\n%s\nwant\n%s", view, strings.Join(errs, "\n"), strings.Join(wantErrs, "\n"))
		}
	}
	dlq := readCommitted(t, addr, "orders.dlq")
	if len(dlq) != 2 || dlq[`{"id":5}`] == nil || dlq[`{"id":6}`] == nil {
		t.Fatalf("dead-letter topic: %q", dlq)
	}
	e.Close(ctx)

	// The rest while the engine is down, then a restart from the
	// checkpoint: every change applied once.
	rest := orderHistory(rng, state, &nextID, 0, 150)
	produceKeyed(t, addr, "pg.public.orders", debeziumRecords(rest, &ts))
	produceKeyed(t, addr, "orders-upsert", upsertRecords(rest))
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	checkRevenue(t, e, "after the restart", revenue(state))
}

// TestKafkaUpsertTableAsOf: an upsert topic is the table side of a join
// AS OF the stream's time: each bid gets the version of its key valid at
// its time (none after the key's tombstone), as the oracle computes from
// the records produced.
func TestKafkaUpsertTableAsOf(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	type version struct {
		k, p, vt int64
		del      bool
	}
	versions := []version{{1, 10, 1000, false}, {2, 7, 2000, false}, {1, 20, 5000, false}, {2, 0, 8000, true}, {3, 30, 9000, false}}
	var recs []keyed
	for _, v := range versions {
		r := keyed{key: []byte(fmt.Sprint(v.k))}
		if !v.del {
			r.value = []byte(fmt.Sprintf(`{"p": %d, "vt": %d}`, v.p, v.vt))
		}
		recs = append(recs, r)
	}
	// The tombstone's time is its record's: produce it with vt 8000.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("prices"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, r := range recs {
		rec := &kgo.Record{Key: r.key, Value: r.value, Timestamp: time.UnixMilli(versions[i].vt)}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, fmt.Sprintf(`CREATE TABLE prices (k BIGINT, p BIGINT, vt TIMESTAMP(3), PRIMARY KEY (k))
			ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='{"topic": "prices", "format": "upsert_json", "event_time": "vt", "idle_timeout": "100ms"}';
		CREATE TABLE bids (id BIGINT, k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE VIEW j AS SELECT b.id, s.k, s.p FROM bids b JOIN prices s AS OF TIMESTAMP b.ts ON b.k = s.k`, addr))
	bids := [][3]int64{{1, 1, 1500}, {2, 1, 6000}, {3, 2, 3000}, {4, 2, 8500}, {5, 3, 9500}, {6, 1, 500}, {7, 4, 9000}}
	var want []string
	for _, b := range bids {
		ingest(t, e, "bids", fmt.Sprintf(`{"id": %d, "k": %d, "ts": %d}`, b[0], b[1], b[2]))
		// The oracle: the key's last version at or before the bid's time.
		var cur *version
		for i := range versions {
			if v := &versions[i]; v.k == b[1] && v.vt <= b[2] {
				cur = v
			}
		}
		if cur != nil && !cur.del {
			want = append(want, fmt.Sprintf("%d|%d|%d", b[0], cur.k, cur.p))
		}
	}
	sort.Strings(want)
	got := waitRows(t, e, "j", len(want))
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("join\n%v\nwant\n%v", got, want)
	}
}

// checkRevenue checkpoints e and checks views rev and rev_u (customer,
// SUM(amount)) against want; a customer whose orders are all gone may
// have no group or a 0.
func checkRevenue(t *testing.T, e *Engine, what string, want map[string]float64) {
	t.Helper()
	if _, err := e.Checkpoint(context.Background(), ""); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, view := range []string{"rev", "rev_u"} {
		_, rows, err := e.Results(view, true)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, r := range rows {
			got[r[0].S] = r[1].F()
		}
		for k, v := range got {
			if _, ok := want[k]; !ok && v == 0 {
				delete(got, k)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: view %s\n%v\nwant\n%v", what, view, got, want)
		}
	}
}
