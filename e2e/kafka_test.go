package e2e

// Kafka sources and sinks end to end, against a Kafka broker in a process
// of its own (internal/kafkatest: kfake, with produce and read_committed
// consume commands), so that the server can be SIGKILLed while the broker
// lives on, and the broker stopped and started again on its data
// directory.
//
// Sources: a table named bids with ENGINE=kafka (bidsDDL's columns and
// watermark, plus the record's metadata columns) reads a topic of three
// partitions into which records are produced outside transactions and in
// committed and aborted ones, with undecodable records among them. The
// rows are generated never late (every row's time is within the watermark
// delay of the largest time before it), so the watermark's minimum over
// partitions, in whatever order the partitions are read, makes no row
// late, and every view's committed results must equal the oracle over the
// committed, decodable rows in production order.
//
// Sinks: a Kafka table with a "delivery" fed by INSERT INTO ... SELECT. Its
// topic is read read_committed and turned into rows (the latest value per
// key, a tombstone deleting it), compared with the oracle by diffResult;
// exactly-once sinks also have their progress topic checked (each epoch
// once, increasing, the last one what POST /v1/checkpoints waited for).
//
// This file: the helpers, the source test, the sink test and the
// statements that must be refused. kafka_crash_test.go: SIGKILL under
// load (source offsets, sinks in both delivery modes), the sink's fault
// points, and the broker going away.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

// startBroker starts a Kafka broker for the calling test alone, closed
// when the test ends (its log printed if the test failed).
func startBroker(t testing.TB) *kafkatest.Broker {
	t.Helper()
	b, err := kafkatest.Start(t.TempDir())
	if err != nil {
		t.Fatalf("starting the Kafka broker: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kafka broker log (tail):\n%s", b.Log())
		}
		b.Close()
	})
	return b
}

// consumeTopic reads every record of topic (control records included);
// an error fails t.
func consumeTopic(t testing.TB, b *kafkatest.Broker, topic string, readCommitted bool) []kafkatest.Record {
	t.Helper()
	recs, err := b.Consume(topic, readCommitted)
	if err != nil {
		t.Fatalf("reading Kafka topic %s (read_committed %v): %v", topic, readCommitted, err)
	}
	return recs
}

// The source topic of the tests and its partitions. The topic's name is
// not the table's, so that the names the server shows offsets under tell
// which it uses.
const (
	kafkaBidsTopic      = "bids_topic"
	kafkaBidsPartitions = 3
)

// kafkaBidsDDL is a Kafka source table named bids reading topic at addr:
// bidsDDL's columns and watermark (bidsSource), the record's metadata
// columns, and extra ENGINE_ATTRIBUTE members (`, "idle_timeout": "1s"`).
func kafkaBidsDDL(addr, topic, extra string) string {
	return `CREATE TABLE bids (
  auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL,
  channel VARCHAR(32), ts TIMESTAMP(3) NOT NULL,
  _partition BIGINT, _offset BIGINT, _key VARCHAR(255), _timestamp TIMESTAMP(3)
) ENGINE=kafka CONNECTION='` + addr + `'
  ENGINE_ATTRIBUTE='{"topic": "` + topic + `", "format": "json", "start": "earliest", "event_time": "ts", "watermark_delay": "2s", "allowed_lateness": "1s"` + extra + `}'`
}

// metaView reads the metadata columns of the Kafka source: append-only,
// so a row read twice or missed shows.
var metaView = viewDef{
	base: "meta", kind: appendOnly,
	sql: `SELECT {hint} _partition, _offset, _key, _timestamp, auction, price, ts FROM bids`,
	query: Query{Project: []Column{
		{As: "_partition", Expr: colRef("_partition")}, {As: "_offset", Expr: colRef("_offset")},
		{As: "_key", Expr: colRef("_key")}, {As: "_timestamp", Expr: colRef("_timestamp")},
		{As: "auction", Expr: colRef("auction")}, {As: "price", Expr: colRef("price")}, {As: "ts", Expr: colRef("ts")},
	}},
}

// kafkaSourceViews are the views over the Kafka source: a tumble with
// every aggregate, sessions with HAVING, a running aggregate, an
// append-only query and the metadata columns, in changes mode (the
// end of input is no watermark in Kafka), at parallelism 1 and 2.
func kafkaSourceViews() []viewInstance {
	p1, p2 := variants[0], variants[1]
	return []viewInstance{
		bidInstance("tumble_auction", p2), bidInstance("session_bidder", p1), bidInstance("running_auction", p2),
		bidInstance("passthrough", p1), {name: "meta_p2", def: metaView, v: p2},
	}
}

// neverLate keeps the rows whose time is above the largest time kept
// before them minus the watermark delay: read in any interleaving of any
// split of them, none is late.
func neverLate(rows []Row) []Row {
	var out []Row
	var top int64
	for _, r := range rows {
		if ts := tsOf(r); len(out) == 0 || ts > top-bidsSource.WatermarkDelay {
			out = append(out, r)
			top = max(top, ts)
		}
	}
	return out
}

// badValues are record values the source cannot decode into a row: not
// JSON, not an object, a BIGINT given as text, a NOT NULL column missing.
var badValues = []string{
	`{"auction": 1, "bidder": 2, "price"`,
	`[1, 2, 3]`,
	`{"auction": "seven", "bidder": 2, "price": 3, "ts": "2024-01-01T00:00:00.000Z"}`,
	`{"auction": 1, "bidder": 2, "price": 3}`,
}

// kafkaChunk is one Send of records into the source topic.
type kafkaChunk struct {
	seq  int // its place among the chunks generated
	txn  kafkatest.Txn
	recs []kafkatest.Record
	rows []Row // rows[i] is recs[i]'s row; nil for an undecodable record
}

// genKafkaChunks cuts about n never-late bids into chunks of size records
// spread over the source topic's partitions: 40% produced outside
// transactions, 40% in committed transactions, 20% in aborted ones; a
// third of the chunks carry an undecodable record too (badValues in turn). Values are the rows
// as JSON (wireRows: some timestamps as epoch milliseconds), keys "a<auction>"
// for two records in three (none for the rest), record timestamps within
// a second after the row's time.
func genKafkaChunks(seed uint64, n, size int) []kafkaChunk {
	rng := rand.New(rand.NewPCG(seed, 0x6b61666b61))
	rows := neverLate(genBids(seed, n))
	var out []kafkaChunk
	nbad := 0
	for start := 0; start < len(rows); start += size {
		part := rows[start:min(start+size, len(rows))]
		c := kafkaChunk{seq: len(out), txn: []kafkatest.Txn{kafkatest.NoTxn, kafkatest.Commit}[rng.IntN(2)]}
		if rng.IntN(5) == 0 {
			c.txn = kafkatest.Abort
		}
		for i, w := range wireRows(part, start) {
			v, err := json.Marshal(w)
			if err != nil {
				panic(err)
			}
			r := kafkatest.Record{Partition: int32(rng.IntN(kafkaBidsPartitions)), Value: kafkatest.Str(string(v)),
				Timestamp: int64(part[i]["ts"].(Timestamp)) + rng.Int64N(1000)}
			if rng.IntN(3) > 0 {
				r.Key = kafkatest.Str(fmt.Sprint("a", part[i]["auction"]))
			}
			c.recs, c.rows = append(c.recs, r), append(c.rows, part[i])
		}
		if rng.IntN(3) == 0 {
			at := rng.IntN(len(c.recs) + 1)
			bad := kafkatest.Record{Partition: int32(rng.IntN(kafkaBidsPartitions)), Key: kafkatest.Str("bad"),
				Value: kafkatest.Str(badValues[nbad%len(badValues)])}
			nbad++
			c.recs = slices.Insert(c.recs, at, bad)
			c.rows = slices.Insert(c.rows, at, Row(nil))
		}
		out = append(out, c)
	}
	return out
}

// kafkaLog is what has been produced into the source topic: the rows a
// query must read (committed and decodable, with their metadata columns)
// and the undecodable records committed. Safe for concurrent use.
//
// The oracle reads the rows in the order they were generated, whatever
// the order of the commits: each partition has its rows in that order, and
// the engine's watermark is the minimum over partitions, so no row is late
// for the engine either way; but for the oracle's one watermark a chunk
// committed late would be.
type kafkaLog struct {
	mu      sync.Mutex
	rows    []Row
	seq     []int // seq[i] is rows[i]'s chunk's
	bad     []kafkatest.Record
	aborted int // records in aborted transactions
}

// add records chunk c as produced (sent: the records with their offsets).
// An aborted chunk adds nothing but its count.
func (l *kafkaLog) add(c kafkaChunk, sent []kafkatest.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.txn == kafkatest.Abort {
		l.aborted += len(sent)
		return
	}
	for i, r := range sent {
		if c.rows[i] == nil {
			l.bad = append(l.bad, r)
			continue
		}
		row := maps.Clone(c.rows[i])
		row["_partition"], row["_offset"], row["_timestamp"] = int64(r.Partition), r.Offset, Timestamp(r.Timestamp)
		row["_key"] = nil
		if r.Key != nil {
			row["_key"] = *r.Key
		}
		l.rows, l.seq = append(l.rows, row), append(l.seq, c.seq)
	}
}

// inOrder returns the indexes of the rows in generation order.
func (l *kafkaLog) inOrder() []int {
	idx := make([]int, len(l.rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return l.seq[a] - l.seq[b] })
	return idx
}

// snapshot returns the rows (in generation order) and the number of bad
// records so far.
func (l *kafkaLog) snapshot() ([]Row, int) {
	return l.before(nil)
}

// before returns the rows below offsets (partition -> the next offset to
// read; nil: every row), in generation order, and how many bad records
// are.
func (l *kafkaLog) before(offsets map[int32]int64) ([]Row, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	below := func(p int32, off int64) bool { return offsets == nil || off < offsets[p] }
	var out []Row
	for _, i := range l.inOrder() {
		if r := l.rows[i]; below(int32(r["_partition"].(int64)), r["_offset"].(int64)) {
			out = append(out, r)
		}
	}
	bad := 0
	for _, r := range l.bad {
		if below(r.Partition, r.Offset) {
			bad++
		}
	}
	return out, bad
}

// produceChunk sends c with p and adds it to log; an error fails t.
func produceChunk(t testing.TB, p *kafkatest.Producer, log *kafkaLog, c kafkaChunk) {
	t.Helper()
	sent, err := p.Send(c.recs, c.txn)
	if err != nil {
		t.Fatal(err)
	}
	log.add(c, sent)
}

// newProducer starts a producer of topic (creating it with partitions
// partitions if missing), closed when the test ends.
func newProducer(t testing.TB, b *kafkatest.Broker, topic string, partitions int) *kafkatest.Producer {
	t.Helper()
	p, err := b.NewProducer(topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// topicEnds returns each partition's end offset (read_committed: after
// the last committed record or marker) of topic.
func topicEnds(t testing.TB, b *kafkatest.Broker, topic string) map[int32]int64 {
	t.Helper()
	ends := map[int32]int64{}
	for _, r := range consumeTopic(t, b, topic, true) {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

// partitionKey is a name under which the server shows a partition's
// offset or lag: <table or topic>[<partition>].
var partitionKey = regexp.MustCompile(`^(.+)\[(\d+)\]$`)

// partitionValues picks the per-partition entries of m (values decoded
// from JSON or int64) named after one of names: partition -> value.
func partitionValues[V any](m map[string]V, names ...string) map[int32]int64 {
	out := map[int32]int64{}
	for k, v := range m {
		sub := partitionKey.FindStringSubmatch(k)
		if sub == nil || !slices.Contains(names, sub[1]) {
			continue
		}
		p, _ := strconv.ParseInt(sub[2], 10, 32)
		n, err := strconv.ParseInt(jsonText(any(v)), 10, 64)
		if x, ok := any(v).(int64); ok {
			n, err = x, nil
		}
		if err == nil {
			out[int32(p)] = n
		}
	}
	return out
}

// findPartitionMap looks through a query's document for the first object
// named member (at any depth) holding per-partition entries of the bids
// table or its topic.
func findPartitionMap(doc any, member string) (map[int32]int64, bool) {
	switch d := doc.(type) {
	case map[string]any:
		if m, ok := d[member].(map[string]any); ok {
			if pv := partitionValues(m, "bids", kafkaBidsTopic); len(pv) > 0 {
				return pv, true
			}
		}
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if pv, ok := findPartitionMap(d[k], member); ok {
				return pv, true
			}
		}
	case []any:
		for _, v := range d {
			if pv, ok := findPartitionMap(v, member); ok {
				return pv, true
			}
		}
	}
	return nil, false
}

// findMember returns the first member named name in a query's document,
// at any depth (the top level first).
func findMember(doc any, name string) (any, bool) {
	switch d := doc.(type) {
	case map[string]any:
		if v, ok := d[name]; ok {
			return v, true
		}
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if v, ok := findMember(d[k], name); ok {
				return v, true
			}
		}
	case []any:
		for _, v := range d {
			if x, ok := findMember(v, name); ok {
				return x, true
			}
		}
	}
	return nil, false
}

// verifyKafka checkpoints, then checks every view over the Kafka source
// against the oracle over every row in log (verify), and what each query
// shows of the source (checkKafkaSourceQuery), under stage.
func (sc *scenario) verifyKafka(t *testing.T, stage string, b *kafkatest.Broker, log *kafkaLog, wantRecent bool) {
	t.Helper()
	sc.posted, _ = log.snapshot()
	sc.verify(t, stage)
	ends := topicEnds(t, b, kafkaBidsTopic)
	t.Run(stage+"_source_status", func(t *testing.T) {
		for _, name := range instanceNames(sc.views) {
			t.Run(name, func(t *testing.T) { checkKafkaSourceQuery(t, sc.srv, name, log.bad, ends, wantRecent) })
		}
	})
}

// checkKafkaSourceQuery checks what GET /v1/queries/{name} shows of a
// query that has read the whole topic: bad_records counts the bad records
// committed, recent_bad_records names some of them (partition, offset,
// error; with wantRecent there must be some: the process has seen them),
// the offsets per partition are the topic's end offsets and the lag per
// partition is 0.
func checkKafkaSourceQuery(t *testing.T, srv *server, name string, bad []kafkatest.Record, ends map[int32]int64, wantRecent bool) {
	t.Helper()
	q := srv.query(t, name)
	if v, ok := findMember(q.raw, "bad_records"); !ok || jsonText(v) != strconv.Itoa(len(bad)) {
		t.Errorf("bad_records = %v (found: %v), want %d", v, ok, len(bad))
	}
	recent, _ := findMember(q.raw, "recent_bad_records")
	list, _ := recent.([]any)
	if wantRecent && len(bad) > 0 && len(list) == 0 {
		t.Errorf("recent_bad_records = %v, want some of the %d bad records", recent, len(bad))
	}
	isBad := map[[2]int64]bool{}
	for _, r := range bad {
		isBad[[2]int64{int64(r.Partition), r.Offset}] = true
	}
	for _, e := range list {
		m, _ := e.(map[string]any)
		p, _ := strconv.ParseInt(jsonText(m["partition"]), 10, 64)
		off, _ := strconv.ParseInt(jsonText(m["offset"]), 10, 64)
		if !isBad[[2]int64{p, off}] {
			t.Errorf("recent_bad_records entry %v: partition %d offset %d is not a bad record", m, p, off)
		}
		if s, _ := m["error"].(string); s == "" {
			t.Errorf("recent_bad_records entry %v has no error", m)
		}
	}
	if offsets, ok := findPartitionMap(q.raw, "offsets"); !ok {
		t.Errorf("no per-partition offsets (\"offsets\": {\"bids[0]\": ...}) in %s", truncate(mustJSON(q.raw), 3000))
	} else if !maps.Equal(offsets, ends) {
		t.Errorf("offsets per partition %v, want the topic's end offsets %v", offsets, ends)
	}
	if lag, ok := findPartitionMap(q.raw, "lag"); !ok {
		t.Errorf("no per-partition lag (\"lag\": {\"bids[0]\": ...}) in %s", truncate(mustJSON(q.raw), 3000))
	} else {
		for p, n := range lag {
			if n != 0 {
				t.Errorf("lag of partition %d is %d, want 0: the query has read the whole topic", p, n)
			}
		}
		if len(lag) != len(ends) {
			t.Errorf("lag for %d partitions (%v), want %d", len(lag), lag, len(ends))
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// waitRetrying waits (up to within) until query name is in state retrying
// with an error matching re, and fails t otherwise.
func waitRetrying(t *testing.T, srv *server, name string, within time.Duration, re *regexp.Regexp) {
	t.Helper()
	q := waitQuery(t, srv, name, within, func(q queryInfo) bool { return q.State == "retrying" && queryError(q) != "" })
	switch {
	case q.State != "retrying":
		t.Errorf("%s is %q (error %q) after %v, want retrying", name, q.State, queryError(q), within)
	case !re.MatchString(queryError(q)):
		t.Errorf("%s retrying with error %q: it does not match %s", name, queryError(q), re)
	}
}

// kafkaSink is a streamsql table with ENGINE=kafka and a delivery, and the
// query that INSERTs into it.
type kafkaSink struct {
	sinkQuery
	topic string         // "" for the default, the sink's name
	attrs map[string]any // more ENGINE_ATTRIBUTE members
}

func (s kafkaSink) sinkTopic() string {
	if s.topic == "" {
		return s.name
	}
	return s.topic
}

func (s kafkaSink) progressTopic() string {
	if p, ok := s.attrs["progress_topic"].(string); ok {
		return p
	}
	return s.sinkTopic() + ".streamsql-progress"
}

// createSQL is the sink's CREATE TABLE for the broker at addr.
func (s kafkaSink) createSQL(addr string) string {
	attrs := map[string]any{"topic": s.sinkTopic(), "delivery": s.delivery}
	maps.Copy(attrs, s.attrs)
	return s.sinkQuery.createSQL("kafka", addr, attrs, false)
}

// kafkaBidSink is a sink k_<view>_<eo|alo> fed by view vi's SELECT.
func kafkaBidSink(vi viewInstance, delivery string) kafkaSink {
	return kafkaSink{sinkQuery: bidSinkQuery("k", vi, delivery)}
}

// decodeObject decodes a JSON object, numbers as json.Number, and returns
// its member names in order.
func decodeObject(s string) ([]string, map[string]any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object: %q", s)
	}
	var names []string
	m := map[string]any{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("%q: %v", s, err)
		}
		name := tok.(string)
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%q: member %s: %v", s, name, err)
		}
		names = append(names, name)
		m[name] = v
	}
	if _, err := d.Token(); err != nil {
		return nil, nil, fmt.Errorf("%q: %v", s, err)
	}
	if d.More() {
		return nil, nil, fmt.Errorf("%q: more after the object", s)
	}
	return names, m, nil
}

// sinkContents turns the data records of a sink topic (read_committed, in
// partition and offset order) into the sink's rows: the latest value per
// key, a tombstone deleting the key. Every key must be the row's key
// columns as a JSON object in key order, every value the row with the
// columns (cols) in table order, each key in one partition only. It returns
// the rows and every problem found.
func sinkContents(recs []kafkatest.Record, cols, key []string) ([]map[string]any, []string) {
	var problems []string
	latest := map[string]map[string]any{}
	partOf := map[string]int32{}
	for _, r := range recs {
		if r.Key == nil {
			problems = append(problems, fmt.Sprintf("record %v has no key", r))
			continue
		}
		names, k, err := decodeObject(*r.Key)
		if err != nil || !slices.Equal(names, key) {
			problems = append(problems, fmt.Sprintf("record %v: key members %q (%v), want %q", r, names, err, key))
			continue
		}
		ks := rowKey(key, k)
		if p, ok := partOf[ks]; ok && p != r.Partition {
			problems = append(problems, fmt.Sprintf("key %s in partitions %d and %d", *r.Key, p, r.Partition))
		}
		partOf[ks] = r.Partition
		if r.Value == nil {
			delete(latest, ks)
			continue
		}
		names, row, err := decodeObject(*r.Value)
		if err != nil || !slices.Equal(names, cols) {
			problems = append(problems, fmt.Sprintf("record %v: value members %q (%v), want %q", r, names, err, cols))
			continue
		}
		if rowKey(key, row) != ks {
			problems = append(problems, fmt.Sprintf("record %v: the key is not the value's key columns", r))
		}
		latest[ks] = row
	}
	rows := make([]map[string]any, 0, len(latest))
	for _, k := range slices.Sorted(maps.Keys(latest)) {
		rows = append(rows, latest[k])
	}
	return rows, problems
}

// kafkaProgressRecords decodes the records of a progress topic
// (read_committed, data records only): key the sink id, value
// {"sink_id", "epoch", "committed_at"}. It returns them in order with
// the problems found (progressProblems among them).
func kafkaProgressRecords(recs []kafkatest.Record) ([]progressRecord, []string) {
	var out []progressRecord
	var problems []string
	for _, r := range recs {
		var v struct {
			SinkID      string      `json:"sink_id"`
			Epoch       json.Number `json:"epoch"`
			CommittedAt string      `json:"committed_at"`
		}
		if r.Value == nil || json.Unmarshal([]byte(*r.Value), &v) != nil {
			problems = append(problems, fmt.Sprintf("progress record %v: value is not a progress object", r))
			continue
		}
		e, err := v.Epoch.Int64()
		if err != nil || e <= 0 || v.SinkID == "" || v.CommittedAt == "" || r.Key == nil || *r.Key != v.SinkID {
			problems = append(problems, fmt.Sprintf("progress record %v: want key = sink_id, a positive epoch and committed_at", r))
			continue
		}
		out = append(out, progressRecord{sinkID: v.SinkID, epoch: e})
	}
	return out, append(problems, progressProblems(out)...)
}

// kafkaScenario is a streamsql server with Kafka sinks on one broker.
type kafkaScenario struct {
	srv    *server
	broker *kafkatest.Broker
	sinks  []kafkaSink
}

// create sends every sink's CREATE TABLE and INSERT in one request and
// waits for the queries to run.
func (ks *kafkaScenario) create(t *testing.T, sinks ...kafkaSink) {
	t.Helper()
	var stmts []string
	for _, s := range sinks {
		stmts = append(stmts, s.createSQL(ks.broker.Addr()), s.insertSQL())
	}
	ks.sinks = append(ks.sinks, sinks...)
	runStatements(t, ks.srv, stmts, sinkNames(sinks)...)
}

func (ks *kafkaScenario) names() []string { return sinkNames(ks.sinks) }

func (ks *kafkaScenario) sink(name string) kafkaSink {
	return ks.sinks[slices.IndexFunc(ks.sinks, func(s kafkaSink) bool { return s.name == name })]
}

// verify checkpoints (which waits for every exactly-once sink to commit)
// and checks every sink's topic against the oracle over bids and
// auctions, one subtest per sink under stage.
func (ks *kafkaScenario) verify(t *testing.T, stage string, bids, auctions []Row) {
	t.Helper()
	ks.srv.checkpointAndCheck(t, stage, ks.names(), func(t *testing.T, name string, cp checkpointInfo) {
		ks.checkSink(t, ks.sink(name), cp, bids, auctions)
	})
}

// read reads sink s's topic read_committed and returns its columns and
// rows (sinkContents; its problems fail t).
func (ks *kafkaScenario) read(t *testing.T, s kafkaSink) ([]string, []map[string]any) {
	t.Helper()
	cols, _, key := s.columns()
	recs, err := ks.broker.Consume(s.sinkTopic(), true)
	if err != nil && !errors.Is(err, kafkatest.ErrNoTopic) {
		t.Fatalf("reading the topic of sink %s: %v", s.name, err)
	}
	rows, problems := sinkContents(kafkatest.Data(recs), cols, key)
	for _, p := range problems {
		t.Errorf("Kafka topic %s: %s", s.sinkTopic(), p)
	}
	return cols, rows
}

// progress checks the progress topic of exactly-once sink s and returns
// its epochs in commit order.
func (ks *kafkaScenario) progress(t *testing.T, s kafkaSink) []int64 {
	t.Helper()
	recs, problems := kafkaProgressRecords(kafkatest.Data(consumeTopic(t, ks.broker, s.progressTopic(), true)))
	for _, p := range problems {
		t.Errorf("Kafka progress topic %s: %s", s.progressTopic(), p)
	}
	epochs := make([]int64, len(recs))
	for i, r := range recs {
		epochs[i] = r.epoch
	}
	return epochs
}

// checkSink checks a sink after checkpoint cp: its query runs, its topic
// equals the oracle; for an exactly-once sink, the progress topic is sound
// and agrees with the checkpoint and the query.
func (ks *kafkaScenario) checkSink(t *testing.T, s kafkaSink, cp checkpointInfo, bids, auctions []Row) {
	t.Helper()
	q := ks.srv.query(t, s.name)
	if q.State != "running" {
		t.Errorf("state %q, want running (error: %s)", q.State, queryError(q))
	}
	cols, rows := ks.read(t, s)
	checkSinkRows(t, s.sinkQuery, "Kafka topic "+s.sinkTopic(), cols, rows, bids, auctions)
	if s.delivery == exactlyOnce {
		checkSinkEpochs(t, ks.srv, s.name, q, cp, ks.progress(t, s), "Kafka")
	}
}

// lastEpoch is the last epoch in sink s's progress topic (0: none).
func (ks *kafkaScenario) lastEpoch(t *testing.T, s kafkaSink) int64 {
	t.Helper()
	recs, err := ks.broker.Consume(s.progressTopic(), true)
	if err != nil {
		return 0
	}
	prs, _ := kafkaProgressRecords(kafkatest.Data(recs))
	if len(prs) == 0 {
		return 0
	}
	return prs[len(prs)-1].epoch
}

// checkCommittedPrefix checks an exactly-once sink mid-stream: its topic,
// read read_committed between two reads of its progress topic that found
// the same last epoch (kfake writes a transaction's markers in every
// partition at once), must equal the oracle over the input that epoch's
// checkpoint read (prefix; checkEpochPrefix). It reports false when there
// was nothing to check (no epoch yet, a commit between the reads five
// times, or that checkpoint not in the history of the running process).
func (ks *kafkaScenario) checkCommittedPrefix(t *testing.T, s kafkaSink, prefix logPrefix) bool {
	t.Helper()
	for range 5 {
		before := ks.lastEpoch(t, s)
		cols, rows := ks.read(t, s)
		if before != 0 && ks.lastEpoch(t, s) == before {
			return checkEpochPrefix(t, ks.srv, s.sinkQuery, "Kafka", before, cols, rows, prefix)
		}
	}
	return false
}

// txnID names one transaction of a producer: kfake bumps the producer
// epoch at the end of every transaction, so a producer id and epoch name
// one transaction.
type txnID struct {
	pid   int64
	epoch int16
}

// checkEpochStates groups every exactly-once sink's committed records by
// transaction and matches each transaction with its progress record: no
// record may be committed without one, and no transaction may hold two.
// Applying the transactions in epoch order, the state after each epoch
// whose checkpoint obs saw completed must equal the oracle over the input
// that checkpoint read (prefix; checkAtCheckpoint): each epoch's records
// are exactly the changes of its checkpoint. It returns how many epochs
// it checked.
func (ks *kafkaScenario) checkEpochStates(t *testing.T, obs cpObserver, prefix logPrefix) int {
	t.Helper()
	checked := 0
	for _, s := range exactlyOnceSinks(ks.sinks) {
		epochOf := map[txnID]int64{}
		var epochs []int64
		for _, r := range kafkatest.Data(consumeTopic(t, ks.broker, s.progressTopic(), true)) {
			prs, _ := kafkaProgressRecords([]kafkatest.Record{r})
			if len(prs) != 1 {
				continue // progress reports it
			}
			id := txnID{r.ProducerID, r.ProducerEpoch}
			if e, ok := epochOf[id]; ok {
				t.Errorf("%s: epochs %d and %d committed in one transaction (producer %d epoch %d)", s.name, e, prs[0].epoch, id.pid, id.epoch)
			}
			epochOf[id] = prs[0].epoch
			epochs = append(epochs, prs[0].epoch)
		}
		data := kafkatest.Data(consumeTopic(t, ks.broker, s.sinkTopic(), true))
		epochAt := make([]int64, len(data))
		for i, r := range data {
			e, ok := epochOf[txnID{r.ProducerID, r.ProducerEpoch}]
			if !ok {
				t.Errorf("%s: record %v committed in a transaction without a progress record (producer %d epoch %d)", s.name, r, r.ProducerID, r.ProducerEpoch)
			}
			epochAt[i] = e
		}
		cols, _, key := s.columns()
		for _, e := range epochs {
			c, ok := obs[s.name][e]
			if !ok || c.Status == "in_progress" {
				continue
			}
			var upTo []kafkatest.Record
			for i, r := range data {
				if epochAt[i] <= e {
					upTo = append(upTo, r)
				}
			}
			rows, _ := sinkContents(upTo, cols, key)
			if checkAtCheckpoint(t, s.sinkQuery, "Kafka", c, cols, rows, prefix) {
				checked++
			}
		}
	}
	return checked
}

// kafkaPrefix is the input of the Kafka source that a checkpoint had
// read: the rows of log below the offsets it recorded per partition.
func kafkaPrefix(log *kafkaLog) logPrefix {
	return func(c checkpointStat) ([]Row, string, error) {
		parts := partitionValues(c.Offsets, "bids", kafkaBidsTopic)
		if len(parts) == 0 {
			return nil, "", errNoOffsets
		}
		rows, _ := log.before(parts)
		return rows, fmt.Sprintf("the %d rows below its offsets %v", len(rows), parts), nil
	}
}

// abortedRecords counts the records of topic a read_committed read leaves
// out (those of aborted transactions).
func abortedRecords(t *testing.T, b *kafkatest.Broker, topic string) int {
	t.Helper()
	seen := map[[2]int64]bool{}
	for _, r := range consumeTopic(t, b, topic, true) {
		seen[[2]int64{int64(r.Partition), r.Offset}] = true
	}
	n := 0
	for _, r := range kafkatest.Data(consumeTopic(t, b, topic, false)) {
		if !seen[[2]int64{int64(r.Partition), r.Offset}] {
			n++
		}
	}
	return n
}

// countsSink is the example: a count per auction and 10s window
// of the Kafka source into a Kafka sink.
func countsSink(delivery string) kafkaSink {
	q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"auction"}, Aggs: []Agg{{As: "n", Func: CountStar}}}
	return kafkaSink{sinkQuery: sinkQuery{name: "k_counts", delivery: delivery,
		selectSQL: `SELECT window_start, window_end, auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '10s'), auction`,
		expected:  func(bids, _ []Row) Result { return Evaluate(bidsSource, q, bids) }}, topic: "counts"}
}

// TestKafkaSource: views over a Kafka source created before its topic
// exists (retrying, naming the topic, until it does), then records
// produced into three partitions (outside transactions, committed and
// aborted, undecodable ones among them): after POST /v1/checkpoints every
// view's committed results equal the oracle over the committed decodable
// rows, metadata columns included; bad_records counts the committed
// undecodable records, recent_bad_records names them; the query shows
// each partition's offset (the topic's end) and a lag of 0. The issue's
// Kafka-to-Kafka example (k_counts) equals the oracle too. Then a
// transaction left open in one partition while records go to the others:
// a checkpoint reads those and not the open ones (nor what follows them
// in their partition), and after the commit reads them all.
func TestKafkaSource(t *testing.T) {
	seed := testSeed(t, 500)
	b := startBroker(t)
	srv := startServer(t)
	srv.sql(t, kafkaBidsDDL(b.Addr(), kafkaBidsTopic, ""))
	sc := &scenario{srv: srv, views: kafkaSourceViews()}
	ks := &kafkaScenario{srv: srv, broker: b}
	counts := countsSink(exactlyOnce)
	var stmts []string
	for _, v := range sc.views {
		stmts = append(stmts, v.createSQL())
	}
	ks.sinks = append(ks.sinks, counts)
	srv.sql(t, strings.Join(append(stmts, counts.createSQL(b.Addr()), counts.insertSQL()), ";\n"))
	names := append(instanceNames(sc.views), counts.name)
	missing := regexp.MustCompile(`\b` + kafkaBidsTopic + `\b`)
	for _, name := range names {
		waitRetrying(t, srv, name, 15*time.Second, missing)
	}

	log := &kafkaLog{}
	p := newProducer(t, b, kafkaBidsTopic, kafkaBidsPartitions)
	chunks := genKafkaChunks(seed, 1600, 50)
	last := len(chunks) - 2 // the last two for the open transaction below
	for _, c := range chunks[:last] {
		produceChunk(t, p, log, c)
	}
	srv.waitRunning(t, names...)
	sc.verifyKafka(t, "all", b, log, true)
	ks.verify(t, "kafka_to_kafka", sc.posted, nil)
	t.Logf("%d rows, %d bad records, %d aborted records", len(log.rows), len(log.bad), log.aborted)

	// A transaction open in partition 0; records outside it in every
	// partition (in partition 0 after it: held back until it ends).
	open := chunks[last:]
	for i := range open[0].recs {
		open[0].recs[i].Partition = 0
	}
	openSent, err := p.Send(open[0].recs, kafkatest.Open)
	if err != nil {
		t.Fatal(err)
	}
	other := newProducer(t, b, kafkaBidsTopic, 0)
	open[1].txn = kafkatest.NoTxn
	produceChunk(t, other, log, open[1])
	held, _ := log.before(map[int32]int64{0: openSent[0].Offset, 1: 1 << 62, 2: 1 << 62})
	sc.posted = held
	sc.verify(t, "transaction_open")
	if _, err := p.Send(nil, kafkatest.Commit); err != nil {
		t.Fatal(err)
	}
	open[0].txn = kafkatest.Commit
	log.add(open[0], openSent)
	sc.verifyKafka(t, "transaction_committed", b, log, true)
	ks.verify(t, "kafka_to_kafka_final", sc.posted, nil)
}

// TestKafkaSourceIdle: a partition with no records for idle_timeout no
// longer holds the watermark back. Records go to two of the topic's
// three partitions; a view in on_window_close mode over a source with
// "idle_timeout": "1s" must come to serve every window that the minimum
// over the two written partitions of (largest time - watermark delay)
// has closed, each equal to the oracle's row for it (all of its rows are
// in); it may serve more (once every partition is idle the watermark
// follows the wall clock), never a row the oracle does not have, and the
// watermark it reports reaches that minimum. (Without idle_timeout the
// empty partition holds every window back.)
func TestKafkaSourceIdle(t *testing.T) {
	b := startBroker(t)
	log := &kafkaLog{}
	p := newProducer(t, b, kafkaBidsTopic, kafkaBidsPartitions)
	for _, c := range genKafkaChunks(testSeed(t, 505), 600, 50) {
		for i := range c.recs {
			c.recs[i].Partition %= 2
		}
		produceChunk(t, p, log, c)
	}
	rows, _ := log.snapshot()
	srv := startServer(t)
	srv.sql(t, kafkaBidsDDL(b.Addr(), kafkaBidsTopic, `, "idle_timeout": "1s"`))
	vi := bidInstance("tumble_auction", variants[3])
	sc := &scenario{srv: srv}
	sc.create(t, []viewInstance{vi})

	changes := Evaluate(bidsSource, vi.def.query, rows)
	top := map[int64]int64{} // partition -> largest time
	for _, r := range rows {
		p := r["_partition"].(int64)
		top[p] = max(top[p], tsOf(r))
	}
	wm := min(top[0], top[1]) - bidsSource.WatermarkDelay
	var closed []string
	for _, r := range changes.Rows {
		if int64(r["window_end"].(Timestamp))+bidsSource.AllowedLateness <= wm {
			closed = append(closed, rowKey(changes.Key, r))
		}
	}
	if len(closed) == 0 {
		t.Fatal("test bug: no window closed by the minimum watermark")
	}
	var got resultSet
	var missing []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got = srv.results(t, vi.name)
		served := map[string]bool{}
		for _, r := range got.Rows {
			served[rowKey(changes.Key, r)] = true
		}
		missing = missing[:0]
		for _, k := range closed {
			if !served[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			// The oracle's rows for the windows served.
			want := changes
			want.Rows = nil
			for _, r := range changes.Rows {
				if served[rowKey(changes.Key, r)] {
					want.Rows = append(want.Rows, r)
				}
			}
			if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
				t.Errorf("served windows differ from the oracle's: %s", formatDiffs(diffs, 5))
			}
			break
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of the %d windows closed by the watermark of the written partitions (%s) not served after 20s, e.g. %s: the empty partition holds the watermark back",
			len(missing), len(closed), Timestamp(wm), missing[0])
	}
	// The windows served need the watermark only past their ends; the
	// watermark itself reaches wm once the source has read the last
	// records of both partitions, which may be a fetch later.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		q := srv.query(t, vi.name)
		w, err := time.Parse(time.RFC3339Nano, jsonText(q.raw["watermark"]))
		if err == nil && w.UnixMilli() >= wm {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("watermark %v after 20s, want at least %s", q.raw["watermark"], Timestamp(wm))
			break
		}
	}
	t.Logf("%d rows in 2 of 3 partitions; %d windows closed by %s, %d served of %d", len(rows), len(closed), Timestamp(wm), len(got.Rows), len(changes.Rows))
}

// TestKafkaSinkResults: views of the main scenario over the HTTP table
// (a tumble with every aggregate, HOP with HAVING, merging sessions,
// sessions with HAVING, a running aggregate with HAVING, an append-only
// query keyed by _row_id) inserted into Kafka sinks in both delivery
// modes (exactly-once at parallelism 2, at-least-once at 1; one sink with
// its own progress topic and partition count). Half the rows, every topic
// checked; the rest; then rows that make groups pass HAVING and sessions,
// and rows that delete them (tombstones), checked after each. Nothing of
// an aborted transaction is read; each epoch is in its progress topic
// once.
func TestKafkaSinkResults(t *testing.T) {
	b := startBroker(t)
	rows := genBids(testSeed(t, 510), scenarioRows)
	srv := startServer(t)
	srv.sql(t, bidsDDL)
	ks := &kafkaScenario{srv: srv, broker: b}
	var sinks []kafkaSink
	for _, base := range []string{"tumble_auction", "hop_div", "session_auction", "session_bidder", "running_having", "passthrough"} {
		sinks = append(sinks, kafkaBidSink(bidInstance(base, variants[1]), exactlyOnce), kafkaBidSink(bidInstance(base, variants[0]), atLeastOnce))
	}
	sinks[0].attrs = map[string]any{"progress_topic": "tumble_progress", "partitions": 4, "transaction_timeout": "30s"}
	ks.create(t, sinks...)

	sc := &scenario{srv: srv}
	half := len(rows) / 2
	sc.post(t, rows[:half])
	ks.verify(t, "half", sc.posted, nil)
	sc.post(t, rows[half:])
	ks.verify(t, "all", sc.posted, nil)
	pass, fail := deleteProbe(sc.posted)
	sc.post(t, pass)
	ks.verify(t, "delete_probe_pass", sc.posted, nil)
	sc.post(t, fail)
	ks.verify(t, "delete_probe_fail", sc.posted, nil)
	obs := cpObserver{}
	obs.observe(t, srv, ks.names())
	t.Logf("the state after each of %d epochs checked", ks.checkEpochStates(t, obs, httpPrefix(sc.posted)))

	t.Run("topics", func(t *testing.T) {
		s := sinks[0]
		parts := map[int32]bool{}
		for _, r := range consumeTopic(t, b, s.sinkTopic(), false) {
			parts[r.Partition] = true
		}
		if len(parts) > 4 {
			t.Errorf("topic %s: records in %d partitions, want at most 4 (\"partitions\": 4)", s.sinkTopic(), len(parts))
		}
		for _, s := range sinks {
			tombstones := 0
			for _, r := range kafkatest.Data(consumeTopic(t, b, s.sinkTopic(), true)) {
				if r.Value == nil {
					tombstones++
				}
			}
			t.Logf("%s: %d tombstones; %d records of aborted transactions left out", s.name, tombstones, abortedRecords(t, b, s.sinkTopic()))
		}
	})
}

// TestKafkaRefusals: what Kafka tables must refuse, with a message naming
// the problem and nothing left behind: INSERT into a Kafka source (a table
// without a delivery), reading a Kafka sink (a view, a pull query), an
// unknown ENGINE_ATTRIBUTE key, a source key on a sink and a sink key on
// a source, a bad delivery, a bad format, no topic, no CONNECTION, a
// metadata column of the wrong type, an append-only query into a sink
// without _row_id.
func TestKafkaRefusals(t *testing.T) {
	b := startBroker(t)
	srv := startServer(t)
	addr := b.Addr()
	engine := func(attrs string) string {
		return "ENGINE=kafka CONNECTION='" + addr + "' ENGINE_ATTRIBUTE='" + attrs + "'"
	}
	srv.sql(t, strings.Replace(bidsDDL, "TABLE bids", "TABLE hbids", 1)+";\n"+
		"CREATE TABLE k_src (auction BIGINT, price BIGINT) "+engine(`{"topic": "src"}`)+";\n"+
		"CREATE TABLE k_out (auction BIGINT, n BIGINT, PRIMARY KEY (auction)) "+engine(`{"topic": "out", "delivery": "exactly_once"}`))
	noTable := func(t *testing.T, name string) {
		t.Helper()
		if st := srv.status(t, "/v1/tables/"+name); st != http.StatusNotFound {
			t.Errorf("GET /v1/tables/%s: status %d, want 404: the refused CREATE TABLE left a table", name, st)
		}
	}
	malformed := []int{http.StatusBadRequest, http.StatusUnprocessableEntity}
	refusedStatuses := []int{http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity}
	for _, c := range []struct {
		name, sql string
		table     string // a table the statement must not leave behind
		words     []string
	}{
		{"insert_into_source", "INSERT INTO k_src SELECT auction, price FROM hbids", "", []string{"k_src"}},
		{"view_over_sink", "CREATE VIEW v_out AS SELECT auction, n FROM k_out", "", []string{"k_out"}},
		{"pull_query_of_sink", "SELECT * FROM k_out", "", []string{"k_out"}},
		{"unknown_attribute", "CREATE TABLE k_attr (a BIGINT) " + engine(`{"topic": "t", "colour": "red"}`), "k_attr", []string{"colour"}},
		{"source_key_on_sink", "CREATE TABLE k_evt (a BIGINT, PRIMARY KEY (a)) " + engine(`{"topic": "t", "delivery": "exactly_once", "event_time": "a"}`), "k_evt", []string{"event_time"}},
		{"sink_key_on_source", "CREATE TABLE k_prog (a BIGINT) " + engine(`{"topic": "t", "progress_topic": "p"}`), "k_prog", []string{"progress_topic"}},
		{"bad_delivery", "CREATE TABLE k_twice (a BIGINT, PRIMARY KEY (a)) " + engine(`{"topic": "t", "delivery": "twice"}`), "k_twice", []string{"twice"}},
		{"bad_format", "CREATE TABLE k_avro (a BIGINT) " + engine(`{"topic": "t", "format": "avro"}`), "k_avro", []string{"avro"}},
		{"no_topic", "CREATE TABLE k_notopic (a BIGINT) " + engine(`{"format": "json"}`), "k_notopic", []string{"topic"}},
		{"no_topic_sink", "CREATE TABLE k_notopic2 (a BIGINT, PRIMARY KEY (a)) " + engine(`{"delivery": "at_least_once"}`), "k_notopic2", []string{"topic"}},
		{"no_connection", `CREATE TABLE k_noconn (a BIGINT) ENGINE=kafka ENGINE_ATTRIBUTE='{"topic": "t"}'`, "k_noconn", []string{"CONNECTION"}},
		{"metadata_column_type", "CREATE TABLE k_meta (a BIGINT, _offset VARCHAR(20)) " + engine(`{"topic": "t"}`), "k_meta", []string{"_offset"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			statuses := refusedStatuses
			if c.table != "" {
				statuses = malformed
			}
			p := expectRefused(t, srv, c.sql, statuses, c.words...)
			t.Logf("refused: %s", p)
			if c.table != "" {
				noTable(t, c.table)
			}
		})
	}
	t.Run("append_only_without_row_id", func(t *testing.T) {
		srv.sql(t, "CREATE TABLE k_rows (auction BIGINT, price BIGINT, PRIMARY KEY (auction)) "+engine(`{"topic": "rows", "delivery": "at_least_once"}`))
		expectRefused(t, srv, "INSERT INTO k_rows SELECT auction, price FROM hbids", []int{http.StatusUnprocessableEntity}, "_row_id")
		if st := srv.status(t, "/v1/queries/k_rows"); st != http.StatusNotFound {
			t.Errorf("GET /v1/queries/k_rows: status %d, want 404: the refused INSERT left a query", st)
		}
	})
}

// TestKafkaReadBack checks the Kafka side of the comparison without a
// server: sinkContents on records good and bad, and kafkaProgressRecords.
func TestKafkaReadBack(t *testing.T) {
	s := kafkatest.Str
	cols, key := []string{"ws", "a", "n"}, []string{"ws", "a"}
	recs := []kafkatest.Record{
		{Partition: 0, Offset: 0, Key: s(`{"ws":"2024-01-01T00:00:00.000Z","a":1}`), Value: s(`{"ws":"2024-01-01T00:00:00.000Z","a":1,"n":1}`)},
		{Partition: 1, Offset: 0, Key: s(`{"ws":"2024-01-01T00:00:00.000Z","a":2}`), Value: s(`{"ws":"2024-01-01T00:00:00.000Z","a":2,"n":5}`)},
		{Partition: 0, Offset: 1, Key: s(`{"ws":"2024-01-01T00:00:00.000Z","a":1}`), Value: s(`{"ws":"2024-01-01T00:00:00.000Z","a":1,"n":2}`)},
		{Partition: 1, Offset: 1, Key: s(`{"ws":"2024-01-01T00:00:00.000Z","a":2}`)}, // a tombstone
		{Partition: 1, Offset: 2, Key: s(`{"ws":"2024-01-01T00:00:10.000Z","a":2}`), Value: s(`{"ws":"2024-01-01T00:00:10.000Z","a":2,"n":null}`)},
	}
	want := Result{Columns: cols, Key: key, Rows: []Row{
		{"ws": Timestamp(1704067200000), "a": int64(1), "n": int64(2)},
		{"ws": Timestamp(1704067210000), "a": int64(2), "n": nil},
	}}
	rows, problems := sinkContents(recs, cols, key)
	if len(problems) > 0 {
		t.Errorf("problems: %q", problems)
	}
	if diffs := diffResult(want, cols, rows); len(diffs) > 0 {
		t.Errorf("contents: %s", formatDiffs(diffs, 10))
	}
	for _, bad := range []kafkatest.Record{
		{Partition: 0, Offset: 5, Value: s(`{"ws":"x","a":1,"n":1}`)},                                       // no key
		{Partition: 0, Offset: 5, Key: s(`{"a":1,"ws":"x"}`), Value: s(`{"ws":"x","a":1,"n":1}`)},           // key out of order
		{Partition: 0, Offset: 5, Key: s(`{"ws":"x","a":1}`), Value: s(`{"a":1,"ws":"x","n":1}`)},           // value out of order
		{Partition: 0, Offset: 5, Key: s(`{"ws":"x","a":1}`), Value: s(`{"ws":"x","a":7,"n":1}`)},           // key and value disagree
		{Partition: 2, Offset: 5, Key: s(`{"ws":"2024-01-01T00:00:00.000Z","a":1}`), Value: s(`not json`)},  // a second partition, bad value
		{Partition: 0, Offset: 5, Key: s(`{"ws":"x","a":1} {}`), Value: s(`{"ws":"x","a":1,"n":1}`)},        // trailing data
		{Partition: 0, Offset: 5, Key: s(`{"ws":"x","a":1}`), Value: s(`{"ws":"x","a":1,"n":1,"extra":2}`)}, // an extra column
	} {
		if _, problems := sinkContents(append(slices.Clone(recs), bad), cols, key); len(problems) == 0 {
			t.Errorf("sinkContents accepted %v", bad)
		}
	}

	prog := func(key, v string) kafkatest.Record { return kafkatest.Record{Key: s(key), Value: s(v)} }
	good := []kafkatest.Record{
		prog("k1", `{"sink_id":"k1","epoch":3,"committed_at":"2024-01-01T00:00:00Z"}`),
		prog("k1", `{"sink_id":"k1","epoch":5,"committed_at":"2024-01-01T00:00:01Z"}`),
	}
	if prs, problems := kafkaProgressRecords(good); len(problems) > 0 || len(prs) != 2 || prs[1].epoch != 5 {
		t.Errorf("progress records %v, problems %q", prs, problems)
	}
	for _, bad := range []kafkatest.Record{
		prog("k1", `{"sink_id":"k1","epoch":5,"committed_at":"2024-01-01T00:00:02Z"}`), // twice
		prog("k1", `{"sink_id":"k1","epoch":4,"committed_at":"2024-01-01T00:00:02Z"}`), // not increasing
		prog("k2", `{"sink_id":"k1","epoch":6,"committed_at":"2024-01-01T00:00:02Z"}`), // key is not the sink id
		prog("k1", `{"sink_id":"k1","epoch":0,"committed_at":"2024-01-01T00:00:02Z"}`), // epoch 0
		prog("k1", `{"sink_id":"k1","epoch":6}`),                                       // no committed_at
		{Key: s("k1")},                                                                 // a tombstone
	} {
		if _, problems := kafkaProgressRecords(append(slices.Clone(good), bad)); len(problems) == 0 {
			t.Errorf("kafkaProgressRecords accepted %v", bad)
		}
	}

	// neverLate: no row of the result is late for the oracle.
	if late := Evaluate(bidsSource, viewByBase("tumble_auction").query, neverLate(genBids(1, 3000))).Late; late != 0 {
		t.Errorf("neverLate rows: %d late for the oracle", late)
	}
	var buf bytes.Buffer
	for _, c := range genKafkaChunks(1, 600, 50) {
		fmt.Fprintf(&buf, "%s/%d ", c.txn, len(c.recs))
	}
	t.Logf("chunks: %s", buf.String())
}
