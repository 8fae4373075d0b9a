package e2e

// Change topics through the real binary (issue 22): a Debezium topic of
// an orders table (debezium_json: a snapshot, then inserts, updates and
// deletes, each delete followed by its tombstone, and deletes of ids
// never seen), an upsert topic of the same history (upsert_json, a
// tombstone per delete) and a JSON stream of payments, read as PRIMARY KEY
// tables and a stream by a running aggregate (revenue per customer) over
// each change topic and by a join of the payments with the Debezium
// orders (the join's rows, and an aggregation over it), under SIGKILLs.
//
// The oracle is the table's state: the changes below a checkpoint's
// offsets applied in order (each id's changes go to one partition, so
// their order is the partition's), joined with the payments below its
// offsets, computed here from what the test produced.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

// The change topics and the stream, with their partitions.
const (
	cdcOrdersTopic   = "pg.public.orders"
	cdcUpsertTopic   = "orders_upsert"
	cdcPaymentsTopic = "payments"
	cdcOrdersParts   = 3
	cdcUpsertParts   = 2
	cdcPaymentsParts = 2
)

// cdcDDL are the tables: orders (Debezium, dead letters in orders.dlq),
// orders_u (upsert), payments (a JSON stream).
func cdcDDL(addr string) string {
	return fmt.Sprintf(`CREATE TABLE orders (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, _source_ts_ms TIMESTAMP(3), PRIMARY KEY (id))
  ENGINE=kafka CONNECTION='%[1]s'
  ENGINE_ATTRIBUTE='{"topic": "%[2]s", "format": "debezium_json", "event_time": "_source_ts_ms", "dead_letter_topic": "orders.dlq"}';
CREATE TABLE orders_u (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, PRIMARY KEY (id))
  ENGINE=kafka CONNECTION='%[1]s'
  ENGINE_ATTRIBUTE='{"topic": "%[3]s", "format": "upsert_json", "dead_letter_topic": "orders_u.dlq"}';
CREATE TABLE payments (pay_id BIGINT NOT NULL, order_id BIGINT NOT NULL, paid DOUBLE NOT NULL, ts TIMESTAMP(3) NOT NULL)
  ENGINE=kafka CONNECTION='%[1]s'
  ENGINE_ATTRIBUTE='{"topic": "%[4]s", "format": "json", "event_time": "ts", "watermark_delay": "2s"}'`,
		addr, cdcOrdersTopic, cdcUpsertTopic, cdcPaymentsTopic)
}

// cdcOrder is a row of the orders table.
type cdcOrder struct {
	customer string
	amount   float64 // a multiple of 0.25: sums are exact
}

// cdcChange is one change of the orders table's history.
type cdcChange struct {
	op  byte // 'r', 'c', 'u', 'd'
	id  int64
	row cdcOrder // after, for r, c, u
}

// cdcHistory is a random history of the orders table, applied to state
// as it is made: a snapshot of snapshot rows, then changes inserts,
// updates (moving orders between customers) and deletes, and deletes of
// ids never seen. Ids are never reused.
func cdcHistory(rng *rand.Rand, state map[int64]cdcOrder, nextID *int64, snapshot, changes int) []cdcChange {
	customers := []string{"ann", "bob", "cy", "dee", "eve"}
	pick := func() cdcOrder {
		return cdcOrder{customer: customers[rng.IntN(len(customers))], amount: float64(1+rng.IntN(4000)) / 4}
	}
	var out []cdcChange
	add := func(op byte) {
		id := *nextID
		*nextID++
		o := pick()
		state[id] = o
		out = append(out, cdcChange{op: op, id: id, row: o})
	}
	for range snapshot {
		add('r')
	}
	for range changes {
		ids := slices.Sorted(maps.Keys(state))
		switch k := rng.IntN(10); {
		case k < 4 || len(ids) == 0:
			add('c')
		case k < 7:
			id := ids[rng.IntN(len(ids))]
			o := pick()
			state[id] = o
			out = append(out, cdcChange{op: 'u', id: id, row: o})
		case k < 9:
			id := ids[rng.IntN(len(ids))]
			delete(state, id)
			out = append(out, cdcChange{op: 'd', id: id})
		default:
			out = append(out, cdcChange{op: 'd', id: 1_000_000 + *nextID + int64(rng.IntN(1000))})
		}
	}
	return out
}

// cdcDebeziumSchema is the JSON converter's schema of the snapshot's
// values (the rest are written without the wrapper).
const cdcDebeziumSchema = `{"type":"struct","name":"pg.public.orders.Envelope","fields":[
{"type":"struct","optional":true,"field":"before","fields":[{"type":"int64","field":"id"},{"type":"string","field":"customer"},{"type":"double","field":"amount"}]},
{"type":"struct","optional":true,"field":"after","fields":[{"type":"int64","field":"id"},{"type":"string","field":"customer"},{"type":"double","field":"amount"}]},
{"type":"struct","field":"source","fields":[{"type":"int64","field":"ts_ms"}]},{"type":"string","field":"op"},{"type":"int64","field":"ts_ms"}]}`

// debeziumKey is a Debezium record key with its schema wrapper.
func debeziumKey(id int64) string {
	return fmt.Sprintf(`{"schema":{"type":"struct","fields":[{"type":"int64","field":"id"}]},"payload":{"id":%d}}`, id)
}

// debeziumValue is the change event of c at source time ts: before and
// after as PostgreSQL without REPLICA IDENTITY FULL writes them (a delete's
// before holds the key only), fields no column reads among them.
func debeziumValue(c cdcChange, prev cdcOrder, ts int64) string {
	row := func(o cdcOrder) string {
		return fmt.Sprintf(`{"id":%d,"customer":%q,"amount":%v,"notes":"ignored"}`, c.id, o.customer, o.amount)
	}
	before, after := "null", "null"
	switch c.op {
	case 'u':
		before, after = row(prev), row(c.row)
	case 'r', 'c':
		after = row(c.row)
	case 'd':
		before = fmt.Sprintf(`{"id":%d,"customer":null,"amount":null}`, c.id)
	}
	v := fmt.Sprintf(`{"before":%s,"after":%s,"source":{"ts_ms":%d,"db":"shop","table":"orders","lsn":%d},"op":"%c","ts_ms":%d,"transaction":null}`,
		before, after, ts, ts*7, c.op, ts+3)
	if c.op == 'r' {
		v = `{"schema":` + cdcDebeziumSchema + `,"payload":` + v + `}`
	}
	return v
}

// cdcEvent is a record produced into one of the topics, as the oracle
// reads it: a change of an order (op 0: one that changes nothing, a
// tombstone after a delete), or a payment.
type cdcEvent struct {
	part int32
	off  int64
	op   byte // 'r', 'c', 'u', 'd', 0
	id   int64
	row  cdcOrder
	pay  Row  // a payment (the payments topic)
	bad  bool // a bad record
}

// cdcStep is one Send into one topic: its records and their events
// (events[i] is recs[i]'s).
type cdcStep struct {
	topic  string
	txn    kafkatest.Txn
	recs   []kafkatest.Record
	events []cdcEvent
}

// cdcLog is what has been produced (committed): per topic, the events in
// production order. Safe for concurrent use.
type cdcLog struct {
	mu      sync.Mutex
	events  map[string][]cdcEvent
	aborted int
}

func (l *cdcLog) add(s cdcStep, sent []kafkatest.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.txn == kafkatest.Abort {
		l.aborted += len(sent)
		return
	}
	if l.events == nil {
		l.events = map[string][]cdcEvent{}
	}
	for i, r := range sent {
		e := s.events[i]
		e.part, e.off = r.Partition, r.Offset
		l.events[s.topic] = append(l.events[s.topic], e)
	}
}

// below returns topic's events below offsets (partition -> next offset;
// nil: all) in production order.
func (l *cdcLog) below(topic string, offsets map[int32]int64) []cdcEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []cdcEvent
	for _, e := range l.events[topic] {
		if offsets == nil || e.off < offsets[e.part] {
			out = append(out, e)
		}
	}
	return out
}

// cdcState applies the changes among events in order: the table's rows.
func cdcState(events []cdcEvent) map[int64]cdcOrder {
	state := map[int64]cdcOrder{}
	for _, e := range events {
		switch e.op {
		case 'r', 'c', 'u':
			state[e.id] = e.row
		case 'd':
			delete(state, e.id)
		}
	}
	return state
}

func countBad(events []cdcEvent) int {
	n := 0
	for _, e := range events {
		if e.bad {
			n++
		}
	}
	return n
}

// cdcInput is the input of the views at one point: the orders table's
// state from the Debezium topic and from the upsert topic, the payments.
type cdcInput struct {
	orders, upserted map[int64]cdcOrder
	payments         []Row
}

// cdcView is a view of these tests and its oracle.
type cdcView struct {
	name, sql string
	tables    []string // the tables it reads (whose offsets its checkpoints record)
	expected  func(in cdcInput) Result
}

// revenueRows is the oracle of SELECT customer, SUM(amount) AS revenue,
// COUNT(*) AS n ... GROUP BY customer over a table state: a customer
// without orders has no row.
func revenueRows(state map[int64]cdcOrder) Result {
	rows := make([]Row, 0, len(state))
	for id, o := range state {
		rows = append(rows, Row{"id": id, "customer": o.customer, "amount": o.amount})
	}
	q := Query{GroupBy: []string{"customer"}, Aggs: []Agg{{As: "revenue", Func: Sum, Arg: colRef("amount")}, {As: "n", Func: CountStar}}}
	return Evaluate(Source{}, q, rows)
}

// paymentJoin is the oracle of payments JOIN (SELECT * FROM orders) ON
// order_id = id: each payment with the current row of its order, none
// for an order without one (never inserted, or deleted).
func paymentJoin(in cdcInput) []Row {
	var out []Row
	for _, p := range in.payments {
		if o, ok := in.orders[p["order_id"].(int64)]; ok {
			out = append(out, Row{"pay_id": p["pay_id"], "order_id": p["order_id"], "paid": p["paid"], "customer": o.customer, "amount": o.amount})
		}
	}
	return out
}

const cdcJoinFrom = `FROM payments p JOIN (SELECT * FROM orders) AS o ON p.order_id = o.id`

var cdcViews = []cdcView{
	{name: "rev", tables: []string{"orders"},
		sql:      `SELECT /*+ SET_VAR(parallelism=2) */ customer, SUM(amount) AS revenue, COUNT(*) AS n FROM orders GROUP BY customer`,
		expected: func(in cdcInput) Result { return revenueRows(in.orders) }},
	{name: "rev_u", tables: []string{"orders_u"},
		sql:      `SELECT /*+ SET_VAR(parallelism=1) */ customer, SUM(amount) AS revenue, COUNT(*) AS n FROM orders_u GROUP BY customer`,
		expected: func(in cdcInput) Result { return revenueRows(in.upserted) }},
	{name: "pay_join", tables: []string{"orders", "payments"},
		sql: `SELECT /*+ SET_VAR(parallelism=2) SET_VAR(state_ttl='1h') */ p.pay_id, p.order_id, p.paid, o.customer, o.amount ` + cdcJoinFrom,
		expected: func(in cdcInput) Result {
			return Result{Columns: []string{"pay_id", "order_id", "paid", "customer", "amount"}, Rows: paymentJoin(in)}
		}},
	{name: "pay_customer", tables: []string{"orders", "payments"},
		sql: `SELECT /*+ SET_VAR(parallelism=1) SET_VAR(state_ttl='1h') */ o.customer, SUM(p.paid) AS paid, COUNT(*) AS n ` + cdcJoinFrom + ` GROUP BY o.customer`,
		expected: func(in cdcInput) Result {
			q := Query{GroupBy: []string{"customer"}, Aggs: []Agg{{As: "paid", Func: Sum, Arg: colRef("paid")}, {As: "n", Func: CountStar}}}
			return Evaluate(Source{}, q, paymentJoin(in))
		}},
}

// cdcTopicOf is the topic a table reads.
var cdcTopicOf = map[string]string{"orders": cdcOrdersTopic, "orders_u": cdcUpsertTopic, "payments": cdcPaymentsTopic}

// input is the views' input below offsets (as a checkpoint records them:
// "orders[0]" -> next offset; nil: everything produced).
func (l *cdcLog) input(offsets map[string]int64) (cdcInput, string) {
	parts := func(table string) map[int32]int64 {
		if offsets == nil {
			return nil
		}
		return partitionValues(offsets, table, cdcTopicOf[table])
	}
	in := cdcInput{
		orders:   cdcState(l.below(cdcOrdersTopic, parts("orders"))),
		upserted: cdcState(l.below(cdcUpsertTopic, parts("orders_u"))),
	}
	for _, e := range l.below(cdcPaymentsTopic, parts("payments")) {
		in.payments = append(in.payments, e.pay)
	}
	return in, fmt.Sprintf("%d orders, %d upserted orders, %d payments", len(in.orders), len(in.upserted), len(in.payments))
}

// cdcWriter writes changes as the two change topics carry them.
type cdcWriter struct {
	ts   int64              // the last source time (ms)
	prev map[int64]cdcOrder // each id's row, for an update's before
}

func newCDCWriter() *cdcWriter { return &cdcWriter{ts: baseTime, prev: map[int64]cdcOrder{}} }

// debezium is changes as Debezium records (key with its schema wrapper,
// partitioned by id), each delete followed by its tombstone.
func (w *cdcWriter) debezium(changes []cdcChange, txn kafkatest.Txn) cdcStep {
	s := cdcStep{topic: cdcOrdersTopic, txn: txn}
	for _, c := range changes {
		w.ts += 10
		key := kafkatest.Str(debeziumKey(c.id))
		part := int32(c.id % cdcOrdersParts)
		s.recs = append(s.recs, kafkatest.Record{Partition: part, Key: key, Value: kafkatest.Str(debeziumValue(c, w.prev[c.id], w.ts))})
		s.events = append(s.events, cdcEvent{op: c.op, id: c.id, row: c.row})
		if c.op == 'd' {
			s.recs = append(s.recs, kafkatest.Record{Partition: part, Key: key})
			s.events = append(s.events, cdcEvent{})
		}
		if txn != kafkatest.Abort {
			w.prev[c.id] = c.row
		}
	}
	return s
}

// upsert is changes as upsert records: the id as a bare number, the row
// (with the id in a third of them), a tombstone per delete.
func (w *cdcWriter) upsert(changes []cdcChange) cdcStep {
	s := cdcStep{topic: cdcUpsertTopic, txn: kafkatest.NoTxn}
	for _, c := range changes {
		r := kafkatest.Record{Partition: int32(c.id % cdcUpsertParts), Key: kafkatest.Str(strconv.FormatInt(c.id, 10))}
		if c.op != 'd' {
			v := fmt.Sprintf(`{"customer":%q,"amount":%v}`, c.row.customer, c.row.amount)
			if c.id%3 == 0 { // the key column in the value too, equal to the key's
				v = fmt.Sprintf(`{"id":%d,"customer":%q,"amount":%v}`, c.id, c.row.customer, c.row.amount)
			}
			r.Value = kafkatest.Str(v)
		}
		s.recs = append(s.recs, r)
		s.events = append(s.events, cdcEvent{op: c.op, id: c.id, row: c.row})
	}
	return s
}

// genCDCSteps makes the three topics' records: rounds of a slice of the
// history into the Debezium topic (in a committed transaction every third
// round; every fifth round an aborted transaction of changes that never
// happened before it) and into the upsert topic, then payments of orders
// (existing, deleted and never seen ids). Bad records: a Debezium envelope
// without op and one whose key is not its row's; an upsert record without
// a key and one whose key is not its value's id.
func genCDCSteps(seed uint64, rounds int) []cdcStep {
	rng := rand.New(rand.NewPCG(seed, 0xcdc))
	state := map[int64]cdcOrder{}
	nextID := int64(1)
	w := newCDCWriter()
	payID := int64(1)
	var steps []cdcStep
	for round := range rounds {
		snapshot, changes := 0, 12
		if round == 0 {
			snapshot, changes = 40, 0
		}
		if round%5 == 4 {
			// Changes that never happened: aborted.
			junkID := nextID + 500_000
			junk := cdcHistory(rng, maps.Clone(state), &junkID, 0, 6)
			steps = append(steps, w.debezium(junk, kafkatest.Abort))
		}
		hist := cdcHistory(rng, state, &nextID, snapshot, changes)
		txn := kafkatest.NoTxn
		if round%3 == 2 {
			txn = kafkatest.Commit
		}
		d := w.debezium(hist, txn)
		u := w.upsert(hist)
		if round%4 == 1 {
			badOp := kafkatest.Record{Partition: int32(rng.IntN(cdcOrdersParts)), Key: kafkatest.Str(`{"id":5}`),
				Value: kafkatest.Str(`{"before":null,"after":{"id":5,"customer":"ann","amount":1},"source":{"ts_ms":1},"ts_ms":1}`)}
			badKey := kafkatest.Record{Partition: int32(rng.IntN(cdcOrdersParts)), Key: kafkatest.Str(`{"id":6}`),
				Value: kafkatest.Str(`{"before":null,"after":{"id":7,"customer":"ann","amount":1},"op":"c","source":{"ts_ms":1},"ts_ms":1}`)}
			d.recs = append(d.recs, badOp, badKey)
			d.events = append(d.events, cdcEvent{bad: true}, cdcEvent{bad: true})
			noKey := kafkatest.Record{Partition: 0, Value: kafkatest.Str(`{"customer":"ann","amount":1}`)}
			wrongKey := kafkatest.Record{Partition: 1, Key: kafkatest.Str(`8`), Value: kafkatest.Str(`{"id":9,"customer":"ann","amount":1}`)}
			u.recs = append(u.recs, noKey, wrongKey)
			u.events = append(u.events, cdcEvent{bad: true}, cdcEvent{bad: true})
		}
		steps = append(steps, d, u)
		pay := cdcStep{topic: cdcPaymentsTopic, txn: kafkatest.NoTxn}
		for range 8 {
			w.ts += 5
			p := Row{"pay_id": payID, "order_id": 1 + rng.Int64N(nextID+3), "paid": float64(1+rng.IntN(200)) / 2, "ts": Timestamp(w.ts)}
			payID++
			v := fmt.Sprintf(`{"pay_id":%d,"order_id":%d,"paid":%v,"ts":%d}`, p["pay_id"], p["order_id"], p["paid"], w.ts)
			pay.recs = append(pay.recs, kafkatest.Record{Partition: int32(p["pay_id"].(int64) % cdcPaymentsParts), Value: kafkatest.Str(v)})
			pay.events = append(pay.events, cdcEvent{pay: p})
		}
		steps = append(steps, pay)
	}
	return steps
}

// cdcLoad produces steps, each with its topic's producer, and adds them
// to log: runKills' load.
type cdcLoad struct {
	*produceLoad
	log *cdcLog
}

func startCDCLoad(t *testing.T, producers map[string]*kafkatest.Producer, log *cdcLog, steps []cdcStep, pause time.Duration) *cdcLoad {
	return &cdcLoad{log: log, produceLoad: startProduceLoad(t, len(steps), "steps", pause, func(i int) error {
		s := steps[i]
		sent, err := producers[s.topic].Send(s.recs, s.txn)
		if err == nil {
			log.add(s, sent)
		}
		return err
	})}
}

// checkCDCPrefix checks view v mid-stream: its committed results equal
// the oracle over exactly the records below the offsets its committed
// checkpoint recorded for each table it reads. It reports false when
// there was no stable committed checkpoint to check.
func checkCDCPrefix(t *testing.T, srv *server, v cdcView, l *cdcLoad) bool {
	t.Helper()
	id, got, offsets, ok := stableCommitted(t, srv, v.name)
	if !ok {
		return false
	}
	for _, table := range v.tables {
		if len(partitionValues(offsets, table, cdcTopicOf[table])) == 0 {
			t.Errorf("%s: checkpoint %d recorded offsets %v: none per partition of %s", v.name, id, offsets, table)
			return true
		}
	}
	l.sendMu.Lock()
	in, what := l.log.input(offsets)
	l.sendMu.Unlock()
	want := v.expected(in)
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: committed results at checkpoint %d (offsets %v) differ from the oracle over %s (%d rows served, %d expected): %s",
			v.name, id, offsets, what, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	return true
}

// checkCDCFinal checkpoints and checks every view against the oracle over
// everything produced, its bad_records against the bad records of the
// tables it reads, and its offsets against the topics' ends.
func checkCDCFinal(t *testing.T, srv *server, b *kafkatest.Broker, log *cdcLog, stage string) {
	t.Helper()
	srv.checkpoint(t)
	in, what := log.input(nil)
	ends := map[string]map[int32]int64{}
	for table, topic := range cdcTopicOf {
		ends[table] = topicEnds(t, b, topic)
	}
	t.Run(stage, func(t *testing.T) {
		for _, v := range cdcViews {
			t.Run(v.name, func(t *testing.T) {
				got := srv.results(t, v.name)
				want := v.expected(in)
				if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
					t.Errorf("results differ from the oracle over %s (%d rows served, %d expected): %s", what, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
				}
				q := srv.query(t, v.name)
				if q.State != "running" {
					t.Errorf("state %q (error %q), want running", q.State, queryError(q))
				}
				bad := 0
				for _, table := range v.tables {
					bad += countBad(log.below(cdcTopicOf[table], nil))
				}
				if n, ok := findMember(q.raw, "bad_records"); !ok || jsonText(n) != strconv.Itoa(bad) {
					t.Errorf("bad_records = %v (found %v), want %d", n, ok, bad)
				}
				offs, _ := findMember(q.raw, "offsets")
				m, _ := offs.(map[string]any)
				for _, table := range v.tables {
					if got := partitionValues(m, table, cdcTopicOf[table]); !maps.Equal(got, ends[table]) {
						t.Errorf("offsets of %s %v, want the topic's ends %v (offsets: %v)", table, got, ends[table], offs)
					}
				}
			})
		}
	})
}

// TestKafkaChangeCrash: the Debezium topic, the upsert topic and the
// payments stream produced in rounds (committed transactions and aborted
// ones among them, bad records of both change formats) while views over
// them checkpoint every 200ms and the server is SIGKILLed
// (STREAMSQL_CRASH_KILLS, default 3) and restarted: the revenue per
// customer over each change topic, the payments joined with the Debezium
// orders and an aggregation over that join. Before each kill every view
// is checked against the oracle over exactly the records below its
// committed checkpoint's offsets; at the end every view equals the oracle
// over everything (the table's final state), bad_records counts each bad
// record once, and the offsets are the topics' ends.
func TestKafkaChangeCrash(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 570)
	b := startBroker(t)
	producers := map[string]*kafkatest.Producer{
		cdcOrdersTopic:   newProducer(t, b, cdcOrdersTopic, cdcOrdersParts),
		cdcUpsertTopic:   newProducer(t, b, cdcUpsertTopic, cdcUpsertParts),
		cdcPaymentsTopic: newProducer(t, b, cdcPaymentsTopic, cdcPaymentsParts),
	}
	steps := genCDCSteps(seed, max(30, kills*10))
	log := &cdcLog{}
	// The snapshot round is in before the tables exist.
	for _, s := range steps[:3] {
		sent, err := producers[s.topic].Send(s.recs, s.txn)
		if err != nil {
			t.Fatal(err)
		}
		log.add(s, sent)
	}
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, cdcDDL(b.Addr()))
	var names []string
	for _, v := range cdcViews {
		srv.sql(t, "CREATE VIEW "+v.name+" AS "+v.sql)
		names = append(names, v.name)
	}
	srv.waitRunning(t, names...)
	load := startCDCLoad(t, producers, log, steps[3:], 2*kafkaChunkPause)

	rng := rand.New(rand.NewPCG(seed, 0xdeb))
	checks := 0
	kst := runKills(t, srv, load, kills, rng, crashHooks{beforeKill: func(int) {
		for _, v := range cdcViews {
			if checkCDCPrefix(t, srv, v, load) {
				checks++
			}
		}
	}})
	load.wait(t)
	srv.waitRunning(t, names...)
	checkCDCFinal(t, srv, b, log, "final")

	// Witnesses: the history takes rows back from every view.
	in, what := log.input(nil)
	deleted, updated := 0, 0
	for _, e := range log.below(cdcOrdersTopic, nil) {
		switch e.op {
		case 'd':
			deleted++
		case 'u':
			updated++
		}
	}
	joined := len(paymentJoin(in))
	if deleted == 0 || updated == 0 || joined == 0 || joined == len(in.payments) {
		t.Errorf("test bug: %d deletes, %d updates, %d of %d payments joined: the history does not take rows back", deleted, updated, joined, len(in.payments))
	}
	t.Logf("kills=%d (under load %d) mid-stream checks=%d; %s; %d deletes, %d updates, %d payments joined, %d aborted records; elapsed=%v",
		kills, kst.underLoad, checks, what, deleted, updated, joined, log.aborted, time.Since(begin).Round(time.Millisecond))
}
