package e2e

// Bad records of the Kafka formats through the real binary
// (TestKafkaFormatBadInput): RELIABILITY.md's table "Kafka records
// through the binary" lists them with the answers.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

// badCase is a bad record produced into a source topic and the reason its
// bad record must give.
type badCase struct {
	what   string
	rec    kafkatest.Record
	reason string
	sent   kafkatest.Record // as produced (offset)
}

// fbTable is a source table of the test with its view: its topic, its
// dead-letter topic, the bad records produced into it and the view's
// oracle over what was produced.
type fbTable struct {
	table, topic, dlq, view string
	bad                     []badCase
	expected                func() Result
}

// TestKafkaFormatBadInput: bad records of every format, between good
// ones, through the real binary with the broker in its own process: for
// each format of kafkaFormats its undecodable values (an unknown schema
// id, a truncated payload, a value without the wire header, ...);
// Debezium records without op, of an unknown op, a create without after,
// keys that are not the PRIMARY KEY or not the row's; upsert records
// without a key, with a key that is not the PRIMARY KEY or not the
// value's. Each is counted in its query's bad_records once, named in
// recent_bad_records (partition, offset, a reason saying what is wrong),
// and sent to the table's dead-letter topic (read back: the key and value
// as produced, headers naming the error, topic, partition and offset);
// the queries stay running, and the good records produced after the bad
// ones reach the views, equal to the oracle.
func TestKafkaFormatBadInput(t *testing.T) {
	b := startBroker(t)
	srv := startServer(t)
	seed := testSeed(t, 580)
	var tables []*fbTable

	// The binary formats: a running aggregate over the bids columns.
	for _, f := range kafkaFormats {
		topic := "fb_" + f.name
		codec := f.start(t, topic)
		ft := &fbTable{table: topic, topic: topic, dlq: topic + ".dlq", view: topic + "_v"}
		rows := neverLate(genBids(seed, 120))
		var good []Row
		produce := func(rows []Row) {
			var recs []kafkatest.Record
			for i, r := range rows {
				v, read := codec.encode(t, r)
				recs = append(recs, kafkatest.Record{Partition: int32(i % 2), ValueBytes: v})
				good = append(good, read)
			}
			if _, err := b.Produce(topic, 2, recs, kafkatest.NoTxn); err != nil {
				t.Fatal(err)
			}
		}
		produce(rows[:40]) // the topic exists before the table
		srv.sql(t, strings.NewReplacer("TABLE bids", "TABLE "+ft.table, `"topic": "`+kafkaBidsTopic+`"`, `"topic": "`+topic+`"`).Replace(
			formatBidsDDL(b.Addr(), codec, `, "dead_letter_topic": "`+ft.dlq+`"`))+";\n"+
			"CREATE VIEW "+ft.view+" AS SELECT auction, COUNT(*) AS n, SUM(price) AS s, COUNT(channel) AS nc FROM "+ft.table+" GROUP BY auction")
		sample, _ := codec.encode(t, rows[0])
		for i, bv := range codec.bad(t, sample) {
			ft.bad = append(ft.bad, badCase{what: f.name + ": " + bv.what, rec: kafkatest.Record{Partition: int32(i % 2), Key: kafkatest.Str(fmt.Sprint("bad", i)), ValueBytes: bv.value}, reason: bv.reason})
		}
		produceBad(t, b, topic, ft.bad)
		codec.evolve(t)
		produce(rows[40:])
		q := Query{GroupBy: []string{"auction"}, Aggs: []Agg{{As: "n", Func: CountStar}, {As: "s", Func: Sum, Arg: colRef("price")}, {As: "nc", Func: Count, Arg: colRef("channel")}}}
		ft.expected = func() Result { return Evaluate(Source{}, q, good) }
		tables = append(tables, ft)
	}

	// The change formats: revenue per customer over a history, bad records
	// in the middle of it.
	rng := rand.New(rand.NewPCG(seed, 0xbad))
	state := map[int64]cdcOrder{}
	nextID := int64(1)
	w := newCDCWriter()
	log := &cdcLog{}
	send := func(s cdcStep, parts int) {
		sent, err := b.Produce(s.topic, parts, s.recs, s.txn)
		if err != nil {
			t.Fatal(err)
		}
		log.add(s, sent)
	}
	first := cdcHistory(rng, state, &nextID, 15, 30)
	send(w.debezium(first, kafkatest.NoTxn), cdcOrdersParts)
	send(w.upsert(first), cdcUpsertParts)
	srv.sql(t, cdcDDL(b.Addr()))
	for _, v := range cdcViews[:2] {
		srv.sql(t, "CREATE VIEW "+v.name+" AS "+v.sql)
	}
	env := func(id, afterID int64, op string) *string {
		o := ""
		if op != "" {
			o = `,"op":"` + op + `"`
		}
		after := fmt.Sprintf(`{"id":%d,"customer":"ann","amount":1}`, afterID)
		if op == "c-" {
			o, after = `,"op":"c"`, "null"
		}
		return kafkatest.Str(fmt.Sprintf(`{"before":null,"after":%s,"source":{"ts_ms":%d}%s,"ts_ms":%d}`, after, w.ts, o, w.ts))
	}
	rev := &fbTable{table: "orders", topic: cdcOrdersTopic, dlq: "orders.dlq", view: "rev", bad: []badCase{
		{what: "Debezium: an envelope without op", rec: kafkatest.Record{Partition: 0, Key: kafkatest.Str(debeziumKey(3)), Value: env(3, 3, "")}, reason: "a Debezium envelope without op"},
		{what: "Debezium: an unknown op", rec: kafkatest.Record{Partition: 1, Key: kafkatest.Str(debeziumKey(4)), Value: env(4, 4, "x")}, reason: `a Debezium event of unknown op "x"`},
		{what: "Debezium: a create without after", rec: kafkatest.Record{Partition: 2, Key: kafkatest.Str(debeziumKey(5)), Value: env(5, 5, "c-")}, reason: `a Debezium event of op "c" without after`},
		{what: "Debezium: a key field that is not the PRIMARY KEY", rec: kafkatest.Record{Partition: 0, Key: kafkatest.Str(`{"sku":6}`), Value: env(6, 6, "c")}, reason: "record key field sku is not a PRIMARY KEY column (id)"},
		{what: "Debezium: a key that is not the row's", rec: kafkatest.Record{Partition: 1, Key: kafkatest.Str(`{"id":6}`), Value: env(6, 7, "c")}, reason: "column id: the record key has 6, the value 7 (they must be equal)"},
	}}
	revU := &fbTable{table: "orders_u", topic: cdcUpsertTopic, dlq: "orders_u.dlq", view: "rev_u", bad: []badCase{
		{what: "upsert: a record without a key", rec: kafkatest.Record{Partition: 0, Value: kafkatest.Str(`{"customer":"ann","amount":1}`)}, reason: "a record without a key: an upsert_json record's key is its PRIMARY KEY (id)"},
		{what: "upsert: a key field that is not the PRIMARY KEY", rec: kafkatest.Record{Partition: 1, Key: kafkatest.Str(`{"sku":1}`), Value: kafkatest.Str(`{"customer":"ann","amount":1}`)}, reason: "record key field sku is not a PRIMARY KEY column (id)"},
		{what: "upsert: a key that is not the value's", rec: kafkatest.Record{Partition: 0, Key: kafkatest.Str(`8`), Value: kafkatest.Str(`{"id":9,"customer":"ann","amount":1}`)}, reason: "column id: the record key has 8, the value 9 (they must be equal)"},
	}}
	produceBad(t, b, rev.topic, rev.bad)
	produceBad(t, b, revU.topic, revU.bad)
	rest := cdcHistory(rng, state, &nextID, 0, 40)
	send(w.debezium(rest, kafkatest.NoTxn), cdcOrdersParts)
	send(w.upsert(rest), cdcUpsertParts)
	in, _ := log.input(nil)
	rev.expected = func() Result { return revenueRows(in.orders) }
	revU.expected = func() Result { return revenueRows(in.upserted) }
	tables = append(tables, rev, revU)

	for _, ft := range tables {
		srv.waitRunning(t, ft.view)
	}
	srv.checkpoint(t)
	for _, ft := range tables {
		t.Run(ft.table, func(t *testing.T) { checkBadRecords(t, srv, b, ft) })
	}
}

// produceBad produces the bad records of cases into topic and notes
// where they went.
func produceBad(t *testing.T, b *kafkatest.Broker, topic string, cases []badCase) {
	t.Helper()
	recs := make([]kafkatest.Record, len(cases))
	for i, c := range cases {
		recs[i] = c.rec
	}
	sent, err := b.Produce(topic, 0, recs, kafkatest.NoTxn)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		cases[i].sent = sent[i]
	}
}

// checkBadRecords checks ft's view after a checkpoint that read every
// record: running, equal to the oracle (the good records after the bad
// ones in), each bad record counted once, in recent_bad_records with its
// reason and in the dead-letter topic as it was produced.
func checkBadRecords(t *testing.T, srv *server, b *kafkatest.Broker, ft *fbTable) {
	got := srv.results(t, ft.view)
	want := ft.expected()
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: results differ from the oracle over the good records (%d rows served, %d expected): %s", ft.view, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	q := srv.query(t, ft.view)
	if q.State != "running" {
		t.Errorf("%s: state %q (error %q), want running", ft.view, q.State, queryError(q))
	}
	if n, ok := findMember(q.raw, "bad_records"); !ok || jsonText(n) != strconv.Itoa(len(ft.bad)) {
		t.Errorf("%s: bad_records = %v (found %v), want %d", ft.view, n, ok, len(ft.bad))
	}
	recent := map[[2]int64]string{}
	list, _ := findMember(q.raw, "recent_bad_records")
	entries, _ := list.([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		p, _ := strconv.ParseInt(jsonText(m["partition"]), 10, 64)
		off, _ := strconv.ParseInt(jsonText(m["offset"]), 10, 64)
		msg, _ := m["error"].(string)
		recent[[2]int64{p, off}] = msg
	}
	// The dead letters are sent asynchronously: wait for them (bounded).
	var dead map[[2]int64]kafkatest.Record
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		dead = deadLetters(t, b, ft.dlq, ft.topic)
		if len(dead) >= len(ft.bad) || time.Now().After(deadline) {
			break
		}
	}
	if len(dead) != len(ft.bad) {
		t.Errorf("%s: %d records in the dead-letter topic %s, want %d", ft.view, len(dead), ft.dlq, len(ft.bad))
	}
	for _, c := range ft.bad {
		at := [2]int64{int64(c.sent.Partition), c.sent.Offset}
		msg, ok := recent[at]
		switch {
		case !ok:
			t.Errorf("%s: %s at [%d]@%d: not in recent_bad_records %v", ft.view, c.what, at[0], at[1], entries)
		case !strings.Contains(msg, c.reason):
			t.Errorf("%s: %s at [%d]@%d: recent_bad_records says %q, want it to say %q", ft.view, c.what, at[0], at[1], msg, c.reason)
		default:
			t.Logf("%s: %s: %s", ft.view, c.what, msg)
		}
		d, ok := dead[at]
		switch {
		case !ok:
			t.Errorf("%s: %s at [%d]@%d: not in the dead-letter topic %s", ft.view, c.what, at[0], at[1], ft.dlq)
		case !bytes.Equal(d.KeyData(), c.rec.KeyData()) || !bytes.Equal(d.ValueData(), c.rec.ValueData()):
			t.Errorf("%s: %s: dead letter %v, want the key and value produced %v", ft.view, c.what, d, c.rec)
		case !strings.Contains(d.Headers["streamsql-error"], c.reason):
			t.Errorf("%s: %s: dead letter's streamsql-error %q, want it to say %q", ft.view, c.what, d.Headers["streamsql-error"], c.reason)
		}
	}
}
