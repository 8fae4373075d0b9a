package queries

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// The Debezium Avro schemas of an orders table: v2 adds a column (an
// ALTER TABLE mid-stream); placed is a PostgreSQL timestamp, which
// Debezium writes as microseconds named by connect.name.
const (
	dbzOrderValueV1 = `{"type":"record","name":"Value","namespace":"pg.public.orders","fields":[
		{"name":"id","type":"long"},{"name":"customer","type":"string"},{"name":"amount","type":"double"},
		{"name":"placed","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}}]}`
	dbzOrderValueV2 = `{"type":"record","name":"Value","namespace":"pg.public.orders","fields":[
		{"name":"id","type":"long"},{"name":"customer","type":"string"},{"name":"amount","type":"double"},
		{"name":"placed","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}},
		{"name":"coupon","type":["null","string"],"default":null}]}`
	dbzOrderKey = `{"type":"record","name":"Key","namespace":"pg.public.orders","fields":[{"name":"id","type":"long"}]}`
)

func dbzOrderEnvelope(v string) string {
	return `{"type":"record","name":"Envelope","namespace":"pg.public.orders","fields":[
		{"name":"before","type":["null",` + v + `],"default":null},
		{"name":"after","type":["null","pg.public.orders.Value"],"default":null},
		{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
			{"name":"version","type":"string"},{"name":"ts_ms","type":"long"},{"name":"db","type":"string"},{"name":"table","type":"string"}]}},
		{"name":"op","type":"string"},
		{"name":"ts_ms","type":["null","long"],"default":null},
		{"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[{"name":"id","type":"string"}]}],"default":null}]}`
}

type dbzOrderRow struct {
	ID       int64   `avro:"id"`
	Customer string  `avro:"customer"`
	Amount   float64 `avro:"amount"`
	Placed   int64   `avro:"placed"`
	Coupon   *string `avro:"coupon"`
}

type dbzOrderEvent struct {
	Before *dbzOrderRow `avro:"before"`
	After  *dbzOrderRow `avro:"after"`
	Source struct {
		Version string `avro:"version"`
		TsMs    int64  `avro:"ts_ms"`
		DB      string `avro:"db"`
		Table   string `avro:"table"`
	} `avro:"source"`
	Op   string `avro:"op"`
	TsMs *int64 `avro:"ts_ms"`
	Tx   *struct {
		ID string `avro:"id"`
	} `avro:"transaction"`
}

// wire is v in the Confluent wire format of schema s, id.
func wire(t *testing.T, s string, id int, v any) []byte {
	t.Helper()
	b, err := avro.Marshal(avro.MustParse(s), v)
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), b...)
}

// TestKafkaDebeziumAvroSource: a debezium_avro topic (a snapshot, then
// inserts, updates, deletes with tombstones, deletes of keys never seen;
// the Value schema evolving halfway) and an upsert_avro topic of the same
// history, read as PRIMARY KEY tables into SELECT customer, SUM(amount)
// ... GROUP BY customer: the revenue per customer equals the oracle's from
// the table state the changes make, at a checkpoint and after a restart.
// Bad records are counted and named; CREATE TABLE refuses columns or a
// key that do not fit the latest schemas.
func TestKafkaDebeziumAvroSource(t *testing.T) {
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
	create := func(subject, schema string) int {
		ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	env1, env2 := dbzOrderEnvelope(dbzOrderValueV1), dbzOrderEnvelope(dbzOrderValueV2)
	keyID := create("pg.public.orders-key", dbzOrderKey)
	v1 := create("pg.public.orders-value", env1)
	upKeyID := create("orders-upsert-key", `"long"`)
	upSchema := `{"type":"record","name":"Order","fields":[{"name":"customer","type":"string"},{"name":"amount","type":"double"}]}`
	upID := create("orders-upsert-value", upSchema)

	ts := int64(1_700_000_000_000)
	// dbz is changes as Debezium's Avro converter writes them, in
	// envelope version env (id); each delete followed by its tombstone,
	// its before holding the key only (REPLICA IDENTITY DEFAULT).
	coupon := map[int64]bool{} // the oracle: whose latest version has a coupon
	dbz := func(changes []orderChange, env string, id int, withCoupon bool) []keyed {
		var out []keyed
		for _, ch := range changes {
			ts += 10
			key := wire(t, dbzOrderKey, keyID, struct {
				ID int64 `avro:"id"`
			}{ch.id})
			e := dbzOrderEvent{Op: string(ch.op), TsMs: &ts}
			e.Source.Version, e.Source.TsMs, e.Source.DB, e.Source.Table = "2.7.0", ts-3, "shop", "orders"
			row := func(o order) *dbzOrderRow {
				r := &dbzOrderRow{ID: ch.id, Customer: o.Customer, Amount: o.Amount, Placed: (ts - 3 - 2000) * 1000}
				if withCoupon && ch.id%2 == 0 {
					r.Coupon = &o.Customer
				}
				return r
			}
			coupon[ch.id] = ch.op != 'd' && withCoupon && ch.id%2 == 0
			switch ch.op {
			case 'r', 'c':
				e.After = row(ch.row)
			case 'u':
				e.Before, e.After = row(ch.before), row(ch.row)
			case 'd':
				e.Before = &dbzOrderRow{ID: ch.id}
			}
			out = append(out, keyed{key, wire(t, env, id, e)})
			if ch.op == 'd' {
				out = append(out, keyed{key, nil})
			}
		}
		return out
	}
	upsert := func(changes []orderChange) []keyed {
		var out []keyed
		for _, ch := range changes {
			key := wire(t, `"long"`, upKeyID, ch.id)
			if ch.op == 'd' {
				out = append(out, keyed{key, nil})
				continue
			}
			out = append(out, keyed{key, wire(t, upSchema, upID, struct {
				Customer string  `avro:"customer"`
				Amount   float64 `avro:"amount"`
			}{ch.row.Customer, ch.row.Amount})})
		}
		return out
	}

	rng := rand.New(rand.NewSource(23))
	state := map[int64]order{}
	nextID := int64(1)
	first := orderHistory(rng, state, &nextID, 30, 120)
	produceKeyed(t, addr, "pg.public.orders", dbz(first, env1, v1, false))
	produceKeyed(t, addr, "orders-upsert", upsert(first))
	// Bad records: an envelope with an empty op, a key that is not the
	// row's.
	badKey := wire(t, dbzOrderKey, keyID, struct {
		ID int64 `avro:"id"`
	}{6})
	produceKeyed(t, addr, "pg.public.orders", []keyed{
		{badKey, wire(t, env1, v1, dbzOrderEvent{After: &dbzOrderRow{ID: 6, Customer: "ann", Amount: 1}})},
		{badKey, wire(t, env1, v1, dbzOrderEvent{Op: "c", After: &dbzOrderRow{ID: 7, Customer: "ann", Amount: 1}})},
	})
	want1 := revenue(state)

	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	attrs := fmt.Sprintf(`{"topic": "pg.public.orders", "format": "debezium_avro", "schema_registry": %q, "event_time": "_source_ts_ms", "dead_letter_topic": "orders.dlq"}`, reg.URL())
	for _, c := range []struct{ cols, want string }{
		{"id BIGINT, customer BIGINT, _source_ts_ms TIMESTAMP(3), PRIMARY KEY (id)", "after: field customer is Avro string, which does not fit column customer BIGINT"},
		{"id BIGINT, customer VARCHAR(16), _source_ts_ms TIMESTAMP(3), PRIMARY KEY (id, customer)", "key subject pg.public.orders-key (latest version, schema id 1): the key has no field for PRIMARY KEY column customer (fields: id)"},
	} {
		if _, err := e.Exec(ctx, fmt.Sprintf(`CREATE TABLE bad (%s) ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='%s'`, c.cols, addr, attrs)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CREATE TABLE bad (%s): %v, want %q", c.cols, err, c.want)
		}
	}
	exec(t, e, fmt.Sprintf(`CREATE TABLE orders (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, placed TIMESTAMP(3), coupon VARCHAR(16), _source_ts_ms TIMESTAMP(3), PRIMARY KEY (id))
			ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='%s';
		CREATE TABLE orders_u (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, PRIMARY KEY (id))
			ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='{"topic": "orders-upsert", "format": "upsert_avro", "schema_registry": %q}';
		CREATE VIEW rev AS SELECT customer, SUM(amount) AS revenue FROM orders GROUP BY customer;
		CREATE VIEW rev_u AS SELECT customer, SUM(amount) AS revenue FROM orders_u GROUP BY customer;
		CREATE VIEW times AS SELECT COUNT(*) AS n, COUNT(coupon) AS coupons FROM orders
			WHERE placed = DATE_SUB(_source_ts_ms, INTERVAL 2 SECOND)`, addr, attrs, addr, reg.URL()))
	checkRevenue(t, e, "first part", want1)
	q, err := e.Query("rev")
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, b := range q.RecentBadRecords {
		errs = append(errs, b.Error)
	}
	sort.Strings(errs)
	if want := "a Debezium envelope without op\ncolumn id: the record key has 6, the value 7 (they must be equal)"; q.Counters["bad_records"] != 2 || strings.Join(errs, "\n") != want {
		t.Fatalf("bad records %d:\n%s\nwant\n%s", q.Counters["bad_records"], strings.Join(errs, "\n"), want)
	}
	e.Close(ctx)

	// The Value schema evolves (a coupon column) while the engine is down;
	// after the restart every change applies once, in either version.
	v2 := create("pg.public.orders-value", env2)
	rest := orderHistory(rng, state, &nextID, 0, 150)
	// The first changes of the rest still in v1, then v2's with coupons.
	produceKeyed(t, addr, "pg.public.orders", append(dbz(rest[:20], env1, v1, false), dbz(rest[20:], env2, v2, true)...))
	produceKeyed(t, addr, "orders-upsert", upsert(rest))
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	checkRevenue(t, e, "after the restart", revenue(state))
	// placed is microseconds (MicroTimestamp), 2 s before source.ts_ms
	// in every row; coupon NULL in v1's rows.
	coupons := 0
	for id := range state {
		if coupon[id] {
			coupons++
		}
	}
	_, rows, err := e.Results("times", true)
	if err != nil || len(rows) != 1 || rows[0][0].I != int64(len(state)) || rows[0][1].I != int64(coupons) || coupons == 0 {
		t.Fatalf("times: %v %v, want %d rows, %d with a coupon", rows, err, len(state), coupons)
	}
}
