package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/op"
	kafkasrc "github.com/streamsql/streamsql/runtime/source/kafka"
	"github.com/streamsql/streamsql/window"
)

// A Kafka source is one source task reading every partition of its topic
// at explicit offsets (read_committed) through runtime/source/kafka. Its
// position is an offset per partition (sourcePos.Partitions), and its
// watermark the minimum over partitions of each one's max event time minus
// the delay, leaving out partitions idle for idle_timeout (window.Combine):
// the reader stamps each row with the watermark before it. Rows from
// different partitions interleave as fetches arrive, so unlike a log or the
// generator a replay may see another interleaving (per partition, order is
// kept). A row's RowMeta.Offset is partition<<48 | offset, unique and
// stable: the row id of append-only results.
//
// Records whose value cannot be decoded are skipped and counted
// (bad_records), the recent ones kept for inspection; they never stop the
// query. Until the topic can be looked up (a missing topic, no broker) the
// reader retries every second and reports the problem, which the query
// shows as state retrying.

// kafkaConsumer is what the reader uses of kafkasrc.Consumer.
type kafkaConsumer interface {
	Partitions(ctx context.Context) ([]int32, error)
	StartOffsets(ctx context.Context, latest bool) (map[int32]int64, error)
	Start(from map[int32]int64) error
	Poll(max int, fn func(*kafkasrc.Record)) int
	Position() map[int32]int64
	Ready() <-chan struct{}
	EndOffsets(ctx context.Context) (map[int32]int64, error)
	Problem() error
	Close()
}

var _ kafkaConsumer = (*kafkasrc.Consumer)(nil)

// kafkaLookupTimeout bounds a metadata or offsets request made on the
// source task's goroutine.
const kafkaLookupTimeout = 2 * time.Second

// MaxBadSamples is how many undecodable records a query keeps.
const MaxBadSamples = 20

// BadRecord is a record a source could not decode.
type BadRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
}

// kafkaPartPos is one partition's checkpointed position.
type kafkaPartPos struct {
	Offset       int64 `json:"offset"`
	MaxEventTime int64 `json:"max_event_time"`
}

type kafkaPart struct {
	tracker window.Tracker
	lastRow int64 // wall ms of its last record (idleness)
}

type kafkaReader struct {
	src    *plan.Source
	cons   kafkaConsumer
	decode func([]byte) (plan.Row, error)
	// Metadata columns (-1: not declared).
	partCol, offCol, keyCol, tsCol int
	// from are the restored positions; parts the partitions being read.
	from    map[int32]kafkaPartPos
	parts   map[int32]*kafkaPart
	started bool
	nextTry int64 // wall ms of the next attempt to start
	problem error // why it has not started
	bad     int64
	samples []BadRecord
	// dlq, when the table names a dead_letter_topic, gets the records
	// that could not be decoded.
	dlq *kafkasrc.DeadLetter
	// held are records taken from the consumer but not yet decoded, the
	// first because its schema registry was unavailable (kafkaformat.go).
	held     []kafkasrc.Record
	heldErr  error
	heldNext int64 // wall ms of the next try
	// change decodes the records of a PRIMARY KEY source (nil: decode
	// each value as a row): kafkachanges.go.
	change recordChanges
}

var _ Reader = (*kafkaReader)(nil)

// OpenKafkaReader reads src, a Kafka table, at at (each partition's
// checkpointed offset): a consumer of its topic, its records decoded as
// one JSON object each (as HTTP ingest takes a row) or by another format
// (recordDecoder, kafkaformat.go), and the producer of its
// dead_letter_topic when it names one.
func OpenKafkaReader(src *plan.Source, at SourcePosition) (Reader, error) {
	// A PRIMARY KEY source decodes changes (kafkachanges.go), any other
	// rows (kafkaformat.go).
	change, err := changeDecoder(src)
	if err != nil {
		return nil, err
	}
	var dec func([]byte) (plan.Row, error)
	if change == nil {
		if dec, err = recordDecoder(src); err != nil {
			return nil, err
		}
	}
	brokers, err := kafkasrc.ParseBrokers(src.Connection)
	if err != nil {
		return nil, err
	}
	cons, err := kafkasrc.New(kafkasrc.Config{Brokers: brokers, Topic: src.Attrs["topic"]})
	if err != nil {
		return nil, err
	}
	r := newKafkaReader(src, cons, dec, at.partitions)
	r.change = change
	if t := src.Attrs["dead_letter_topic"]; t != "" {
		if r.dlq, err = kafkasrc.NewDeadLetter(brokers, src.Attrs["topic"], t); err != nil {
			cons.Close()
			return nil, err
		}
	}
	return r, nil
}

func newKafkaReader(src *plan.Source, cons kafkaConsumer, decode func([]byte) (plan.Row, error), from map[int32]kafkaPartPos) *kafkaReader {
	r := &kafkaReader{src: src, cons: cons, decode: decode, from: from, parts: map[int32]*kafkaPart{}}
	r.partCol, r.offCol = src.Schema.Index("_partition"), src.Schema.Index("_offset")
	r.keyCol, r.tsCol = src.Schema.Index("_key"), src.Schema.Index("_timestamp")
	return r
}

// start looks the topic up and starts consuming every partition: at its
// restored offset, else (a new query, or a partition added since) at the
// table's start (earliest or latest).
func (r *kafkaReader) start(now int64) error {
	if now < r.nextTry {
		return r.problem
	}
	r.nextTry = now + 1000
	ctx, cancel := context.WithTimeout(context.Background(), kafkaLookupTimeout)
	defer cancel()
	where := fmt.Sprintf("Kafka topic %s at %s", r.src.Attrs["topic"], r.src.Connection)
	parts, err := r.cons.Partitions(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	start := map[int32]int64{}
	var fresh bool
	for _, p := range parts {
		if pos, ok := r.from[p]; ok {
			start[p] = pos.Offset
		} else {
			fresh = true
		}
	}
	if fresh {
		// A partition added after the query started is read from its start.
		offs, err := r.cons.StartOffsets(ctx, r.src.StartLatest && len(r.from) == 0)
		if err != nil {
			return fmt.Errorf("%s: start offsets: %w", where, err)
		}
		for _, p := range parts {
			if _, ok := start[p]; !ok {
				start[p] = offs[p]
			}
		}
	}
	if err := r.cons.Start(start); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	// The partitions' ends, for the lag (Lag): fetches bring them from
	// now on, but not for a partition with nothing to read.
	r.cons.EndOffsets(ctx)
	if r.dlq != nil {
		// Best effort, as sending is: a topic that cannot be created
		// leaves its records counted and sampled only.
		r.dlq.EnsureTopic(ctx)
	}
	for _, p := range parts {
		kp := &kafkaPart{tracker: window.NewTracker(r.src.WatermarkDelay), lastRow: now}
		if pos, ok := r.from[p]; ok && pos.MaxEventTime != window.NoWatermark {
			kp.tracker.Observe(pos.MaxEventTime)
		}
		r.parts[p] = kp
	}
	r.started, r.problem = true, nil
	return nil
}

func (r *kafkaReader) Poll(now int64, max int, b *op.Batch) (int, error) {
	if !r.started {
		if err := r.start(now); err != nil {
			r.problem = err
			return 0, nil
		}
	}
	n, ok := r.retryHeld(now, b)
	if !ok {
		return n, nil
	}
	r.cons.Poll(max, func(rec *kafkasrc.Record) {
		if r.holding(now, rec, nil) {
			return
		}
		took, err := r.take(now, rec, b)
		if r.holding(now, rec, err) {
			return
		}
		if took {
			n++
		}
	})
	return n, nil
}

// take takes record rec: its row into b (true), or a bad record counted
// (false); or, when its value's schema cannot be fetched now (a
// format.Unavailable), the error, rec untaken.
func (r *kafkaReader) take(now int64, rec *kafkasrc.Record, b *op.Batch) (bool, error) {
	kp := r.parts[rec.Partition]
	if kp == nil {
		return false, nil // not a partition it started (cannot happen)
	}
	row, err := r.record(rec)
	if err != nil && format.IsRetryable(err) {
		return false, err
	}
	kp.lastRow = now
	if err != nil {
		if r.dlq != nil {
			r.dlq.Send(rec, err.Error())
		}
		r.bad++
		r.samples = append(r.samples, BadRecord{Partition: rec.Partition, Offset: rec.Offset, Error: err.Error()})
		if over := len(r.samples) - MaxBadSamples; over > 0 {
			r.samples = append(r.samples[:0:0], r.samples[over:]...)
		}
		return false, nil
	}
	if row == nil {
		return false, nil // a record that changes nothing (a Debezium tombstone)
	}
	m := op.RowMeta{Offset: int64(rec.Partition)<<48 | rec.Offset}
	if r.change != nil {
		row, m.Op = changeOp(row)
	}
	m.WM = r.watermark(now)
	if et := r.src.EventTime; et >= 0 && !row[et].IsNull() {
		kp.tracker.Observe(row[et].I)
	}
	b.Append(row, m)
	return true, nil
}

// record decodes one record's value and fills the metadata columns.
func (r *kafkaReader) record(rec *kafkasrc.Record) (plan.Row, error) {
	var row plan.Row
	var err error
	if r.change != nil {
		// The table's log row (the delete flag last), or nil.
		if row, err = r.change.Decode(rec.Key, rec.Value, rec.Timestamp); err != nil || row == nil {
			return nil, err
		}
	} else {
		if rec.Value == nil {
			return nil, fmt.Errorf("a tombstone (null value): this source has no PRIMARY KEY to delete from")
		}
		if row, err = r.decode(rec.Value); err != nil {
			return nil, err
		}
	}
	if r.partCol >= 0 {
		row[r.partCol] = plan.Int(int64(rec.Partition))
	}
	if r.offCol >= 0 {
		row[r.offCol] = plan.Int(rec.Offset)
	}
	if r.keyCol >= 0 {
		row[r.keyCol] = plan.Null
		if rec.Key != nil {
			row[r.keyCol] = plan.Str(string(rec.Key))
		}
	}
	if r.tsCol >= 0 {
		// A producer sets the timestamp: it must be a TIMESTAMP too.
		if err := plan.CheckTime(rec.Timestamp); err != nil {
			return nil, fmt.Errorf("column %s, the record's timestamp: %w", r.src.Schema[r.tsCol].Name, err)
		}
		row[r.tsCol] = plan.Time(rec.Timestamp)
	}
	return row, nil
}

func (r *kafkaReader) caps() readerCaps {
	return readerCaps{stamps: true, partitioned: true, async: true, reports: true}
}

// Watermark is the minimum over the partitions that are not idle (when
// all are, the maximum: the point the source's idle advance starts from).
func (r *kafkaReader) Watermark(now int64) int64 { return r.watermark(now) }

func (r *kafkaReader) watermark(now int64) int64 {
	if len(r.parts) == 0 {
		// Not started: the restored partitions hold it where it was.
		wm := int64(window.NoWatermark)
		for i, pos := range mapValues(r.from) {
			t := window.NewTracker(r.src.WatermarkDelay)
			t.Observe(pos.MaxEventTime)
			if i == 0 || t.Watermark() < wm {
				wm = t.Watermark()
			}
		}
		return wm
	}
	wms := make([]int64, 0, len(r.parts))
	idle := make([]bool, 0, len(r.parts))
	for _, kp := range r.parts {
		wms = append(wms, kp.tracker.Watermark())
		idle = append(idle, r.src.IdleTimeout > 0 && window.Idle(kp.lastRow, now, r.src.IdleTimeout))
	}
	wm, _ := window.Combine(wms, idle)
	return wm
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Positions is each partition's next offset and max event time.
func (r *kafkaReader) Positions() map[int32]kafkaPartPos {
	if !r.started {
		return r.from
	}
	out := map[int32]kafkaPartPos{}
	for p, off := range r.position() {
		mt := int64(window.NoWatermark)
		if kp := r.parts[p]; kp != nil {
			mt = kp.tracker.MaxEventTime()
		}
		out[p] = kafkaPartPos{Offset: off, MaxEventTime: mt}
	}
	return out
}

// Lag is, per partition, its last stable offset as last looked up minus
// the reader's position (never negative); partitions whose end is not
// known yet are missing. No I/O.
func (r *kafkaReader) Lag() map[int32]int64 {
	le, ok := r.cons.(interface{ Ends() map[int32]int64 })
	if !r.started || !ok {
		return nil
	}
	ends := le.Ends()
	out := make(map[int32]int64, len(ends))
	for p, off := range r.position() {
		if end, ok := ends[p]; ok {
			out[p] = max(end-off, 0)
		}
	}
	return out
}

// Offset is the sum of the partitions' positions (a progress figure; the
// position itself is Positions).
func (r *kafkaReader) Offset() int64 {
	var sum int64
	for _, p := range r.Positions() {
		sum += p.Offset
	}
	return sum
}

func (r *kafkaReader) Available(int64) int64 { return r.Offset() }

func (r *kafkaReader) Ready() <-chan struct{} {
	if !r.started {
		return nil
	}
	return r.cons.Ready()
}

func (r *kafkaReader) Done() bool { return false }

// FlushTarget reads the partitions' last stable offsets now; the function
// returned reports whether the reader has reached them.
func (r *kafkaReader) FlushTarget(now int64) func() bool {
	if !r.started {
		if err := r.start(now); err != nil {
			r.problem = err
			return func() bool { return true }
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaLookupTimeout)
	defer cancel()
	ends, err := r.cons.EndOffsets(ctx)
	if err != nil {
		return func() bool { return true }
	}
	return func() bool {
		pos := r.position()
		for p, end := range ends {
			if pos[p] < end {
				return false
			}
		}
		return true
	}
}

func (r *kafkaReader) Problem() error {
	if !r.started {
		return r.problem
	}
	if r.heldErr != nil {
		return r.heldErr
	}
	return r.cons.Problem()
}

func (r *kafkaReader) TakeBad() (int64, []BadRecord) {
	n, s := r.bad, r.samples
	r.bad, r.samples = 0, nil
	return n, s
}

func (r *kafkaReader) Close() {
	r.cons.Close()
	if r.dlq != nil {
		r.dlq.Close()
	}
}

// PartitionKey names partition p of table in offsets maps: "bids[3]".
func PartitionKey(table string, p int32) string { return fmt.Sprintf("%s[%d]", table, p) }
