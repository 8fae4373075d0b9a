package e2e

// Kafka sources in Schema Registry formats through the real binary: the
// bids source of kafka_test.go with its records in a binary format whose
// schema evolves in the middle of the stream, through SIGKILLs
// (TestKafkaFormatCrash); and bad records of each format
// (TestKafkaFormatBadInput, with cdc_crash_test.go's change formats).
//
// A format is an entry of kafkaFormats: a start function making its codec
// for one test (a registry with the first schema version), which encodes
// a bids row as a record value, says which columns the current version
// carries, moves to the next version, and makes undecodable values with
// the reasons the server must give. The registry (franz-go's srfake) runs
// in the test process on 127.0.0.1; the broker is kafkatest's process.
// The records are written with hamba/avro and the Confluent wire header
// by hand: the test shares no code with the engine's decoders.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

// formatCodec writes bids rows in one format for one test.
type formatCodec interface {
	// attrs are the ENGINE_ATTRIBUTE members that read the format (in
	// place of `"format": "json"`).
	attrs() string
	// encode returns row's record value in the current schema version and
	// the row as the table reads it (columns the version lacks are NULL).
	encode(t testing.TB, row Row) ([]byte, Row)
	// evolve moves to the next schema version (registering it).
	evolve(t testing.TB)
	// bad returns undecodable values, each with a word of the reason the
	// server must give for it; sample is a good value to spoil.
	bad(t testing.TB, sample []byte) []badValue
}

// badValue is an undecodable record value and what its reason must say.
type badValue struct {
	what   string // for messages
	value  []byte
	reason string // a part of the bad record's error
}

// kafkaFormat is one format of the tests.
type kafkaFormat struct {
	name string
	// start makes the format's codec for the calling test, writing topic
	// (its subject, for a registry, is <topic>-value).
	start func(t *testing.T, topic string) formatCodec
}

// kafkaFormats are the binary formats the tests run over.
var kafkaFormats = []kafkaFormat{
	{name: "avro", start: startAvroCodec},
	{name: "protobuf", start: startProtoCodec},
}

// The bids in Avro: v1 without channel (the fields in another order
// than the table's columns), v2 adding channel as an optional field
// (backward compatible: a default).
const (
	avroBidsV1 = `{"type":"record","name":"Bid","namespace":"e2e","fields":[
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"auction","type":"long"},
		{"name":"price","type":"long"},
		{"name":"bidder","type":"long"}]}`
	avroBidsV2 = `{"type":"record","name":"Bid","namespace":"e2e","fields":[
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"auction","type":"long"},
		{"name":"price","type":"long"},
		{"name":"bidder","type":"long"},
		{"name":"channel","type":["null","string"],"default":null}]}`
)

type avroBidV1 struct {
	TS      int64 `avro:"ts"`
	Auction int64 `avro:"auction"`
	Price   int64 `avro:"price"`
	Bidder  int64 `avro:"bidder"`
}

type avroBidV2 struct {
	TS      int64   `avro:"ts"`
	Auction int64   `avro:"auction"`
	Price   int64   `avro:"price"`
	Bidder  int64   `avro:"bidder"`
	Channel *string `avro:"channel"`
}

// avroCodec writes Confluent wire-format Avro: byte 0, the schema id
// (4 bytes, big-endian), the Avro binary.
type avroCodec struct {
	reg     *srfake.Registry
	subject string
	version int // 1 or 2
	ids     map[int]int
	schemas map[int]avro.Schema
}

// startAvroCodec starts a registry for the calling test with v1 of the
// bids schema under topic's value subject.
func startAvroCodec(t *testing.T, topic string) formatCodec {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	c := &avroCodec{reg: reg, subject: topic + "-value", ids: map[int]int{}, schemas: map[int]avro.Schema{}}
	c.register(t, 1, avroBidsV1)
	return c
}

func (c *avroCodec) register(t testing.TB, version int, schema string) {
	t.Helper()
	id, _, err := c.reg.RegisterSchema(c.subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("registering version %d of %s: %v", version, c.subject, err)
	}
	c.ids[version], c.schemas[version], c.version = id, avro.MustParse(schema), version
}

func (c *avroCodec) attrs() string {
	return fmt.Sprintf(`"format": "avro", "schema_registry": %q`, c.reg.URL())
}

func (c *avroCodec) evolve(t testing.TB) { c.register(t, 2, avroBidsV2) }

func (c *avroCodec) encode(t testing.TB, row Row) ([]byte, Row) {
	t.Helper()
	read := Row{}
	for k, v := range row {
		read[k] = v
	}
	var v any
	b1 := avroBidV1{TS: tsOf(row), Auction: row["auction"].(int64), Price: row["price"].(int64), Bidder: row["bidder"].(int64)}
	if c.version == 1 {
		v, read["channel"] = b1, nil
	} else {
		b2 := avroBidV2{TS: b1.TS, Auction: b1.Auction, Price: b1.Price, Bidder: b1.Bidder}
		if ch, ok := row["channel"].(string); ok {
			b2.Channel = &ch
		}
		v = b2
	}
	body, err := avro.Marshal(c.schemas[c.version], v)
	if err != nil {
		t.Fatalf("encoding %v in Avro v%d: %v", row, c.version, err)
	}
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(c.ids[c.version])), body...), read
}

func (c *avroCodec) bad(t testing.TB, sample []byte) []badValue {
	t.Helper()
	if len(sample) < 8 || sample[0] != 0 {
		t.Fatalf("test bug: %x is not a wire-format Avro value", sample)
	}
	return []badValue{
		{"an unknown schema id", append(binary.BigEndian.AppendUint32([]byte{0}, 4242), sample[5:]...), "schema id 4242 is not in the schema registry"},
		{"a truncated Avro payload", slices.Clone(sample[:len(sample)-3]), "truncated"},
		{"a JSON value", []byte(`{"auction": 1, "bidder": 2, "price": 3, "ts": 1}`), "not the Schema Registry magic byte 0"},
		{"a value shorter than the header", []byte{0, 0, 1}, "shorter than the 5-byte Schema Registry header"},
	}
}

// formatChunks turns genKafkaChunks' JSON chunks into chunks of codec's
// values: every good record's value encoded (its row as the table reads
// it), every bad one replaced by one of bad in turn.
func formatChunks(t testing.TB, codec formatCodec, chunks []kafkaChunk, bad []badValue, nbad *int) []kafkaChunk {
	t.Helper()
	out := make([]kafkaChunk, len(chunks))
	for ci, c := range chunks {
		c.recs, c.rows = slices.Clone(c.recs), slices.Clone(c.rows)
		for i := range c.recs {
			c.recs[i].Value = nil
			if c.rows[i] == nil {
				c.recs[i].ValueBytes = bad[*nbad%len(bad)].value
				*nbad++
				continue
			}
			c.recs[i].ValueBytes, c.rows[i] = codec.encode(t, c.rows[i])
		}
		out[ci] = c
	}
	return out
}

// formatBidsDDL is kafkaBidsDDL reading codec's format.
func formatBidsDDL(addr string, codec formatCodec, extra string) string {
	return strings.Replace(kafkaBidsDDL(addr, kafkaBidsTopic, extra), `"format": "json"`, codec.attrs(), 1)
}

// formatViews are the views over the bids source in a binary format: a
// tumble counting channel (NULL in the records of the first version), a
// tumble grouped by channel (the NULL group growing until the second
// version), and the metadata columns (append-only: a record read twice
// or missed shows), and every row's values (append-only: channel as
// decoded, not only whether it is NULL).
func formatViews() []viewInstance {
	return []viewInstance{bidInstance("tumble_auction", variants[1]), bidInstance("tumble_channel", variants[0]), {name: "meta_p2", def: metaView, v: variants[1]}, bidInstance("passthrough", variants[0])}
}

// TestKafkaFormatCrash: for each format of kafkaFormats, the bids source
// reading a topic of three partitions whose records are in that format:
// the first half written with the schema's first version (no channel),
// the rest with the second (channel added, optional), registered after
// CREATE TABLE checked the columns against the first; undecodable records
// of the format among them, and records outside transactions, in
// committed and aborted ones. Views checkpoint every 200ms while the
// records are produced and the server is SIGKILLed (STREAMSQL_CRASH_KILLS,
// default 3) and restarted: before each kill two views are checked against
// the oracle over exactly the records below their committed checkpoint's
// offsets (exactly once at every checkpoint); at the end every view equals
// the oracle over every committed decodable record, bad_records counts
// each bad record once, the offsets are the topic's end.
func TestKafkaFormatCrash(t *testing.T) {
	for fi, f := range kafkaFormats {
		t.Run(f.name, func(t *testing.T) {
			begin := time.Now()
			kills := crashKills(t)
			seed := testSeed(t, 560+uint64(fi))
			b := startBroker(t)
			codec := f.start(t, kafkaBidsTopic)
			log := &kafkaLog{}
			p := newProducer(t, b, kafkaBidsTopic, kafkaBidsPartitions)
			plain := genKafkaChunks(seed, max(1200, kills*400), kafkaChunkRecords)
			half := len(plain) / 2
			sample, _ := codec.encode(t, plain[0].rows[slices.IndexFunc(plain[0].rows, func(r Row) bool { return r != nil })])
			bad := codec.bad(t, sample)
			nbad := 0
			first := formatChunks(t, codec, plain[:half], bad, &nbad)
			produceChunk(t, p, log, first[0]) // the topic has records of v1 before the table exists
			srv := startServer(t, "--checkpoint-interval", "200ms")
			srv.sql(t, formatBidsDDL(b.Addr(), codec, ""))
			sc := &scenario{srv: srv}
			sc.create(t, formatViews())
			codec.evolve(t)
			chunks := append(first[1:], formatChunks(t, codec, plain[half:], bad, &nbad)...)
			load := startKafkaLoad(t, p, log, chunks, 3*kafkaChunkPause)

			rng := rand.New(rand.NewPCG(seed, 0xf0a7))
			checks := 0
			kst := runKills(t, srv, load, kills, rng, crashHooks{beforeKill: func(int) {
				for range 2 {
					if checkKafkaPrefix(t, srv, sc.views[rng.IntN(len(sc.views))], load) {
						checks++
					}
				}
			}})
			load.wait(t)
			srv.waitRunning(t, instanceNames(sc.views)...)
			sc.verifyKafka(t, "final", b, log, false)

			// The oracle's rows show the evolution: channels only in the
			// records of the second version.
			rows, nb := log.snapshot()
			withChannel := 0
			for _, r := range rows {
				if r["channel"] != nil {
					withChannel++
				}
			}
			if withChannel == 0 || withChannel == len(rows) || nb == 0 {
				t.Errorf("test bug: %d of %d rows with a channel, %d bad records: the stream does not show the evolution or bad records", withChannel, len(rows), nb)
			}
			t.Logf("%s: kills=%d (under load %d) mid-stream checks=%d rows=%d (with channel %d) bad=%d aborted=%d elapsed=%v",
				f.name, kills, kst.underLoad, checks, len(rows), withChannel, nb, log.aborted, time.Since(begin).Round(time.Millisecond))
		})
	}
}

// deadLetters reads topic's records (read_committed) and indexes them by
// the origin their headers name (partition and offset of the source
// topic); a record without them, or naming another topic, fails t. A
// topic that does not exist (yet) has none.
func deadLetters(t *testing.T, b *kafkatest.Broker, topic, source string) map[[2]int64]kafkatest.Record {
	t.Helper()
	out := map[[2]int64]kafkatest.Record{}
	recs, err := b.Consume(topic, true)
	if errors.Is(err, kafkatest.ErrNoTopic) {
		return out // not yet
	}
	if err != nil {
		t.Fatalf("reading the dead-letter topic %s: %v", topic, err)
	}
	for _, r := range kafkatest.Data(recs) {
		var p, off int64
		if r.Headers["streamsql-topic"] != source || r.Headers["streamsql-error"] == "" {
			t.Errorf("dead letter %v: headers %v, want streamsql-topic %s and a streamsql-error", r, r.Headers, source)
			continue
		}
		if _, err := fmt.Sscan(r.Headers["streamsql-partition"]+" "+r.Headers["streamsql-offset"], &p, &off); err != nil {
			t.Errorf("dead letter %v: headers %v: no partition and offset", r, r.Headers)
			continue
		}
		out[[2]int64{p, off}] = r
	}
	return out
}
