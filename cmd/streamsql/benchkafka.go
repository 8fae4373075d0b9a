package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
)

// `streamsql bench --kafka-format F`: Nexmark bids encoded in format F
// are produced into a topic of an in-process kfake broker (untimed), then
// queries.KafkaBench reads them with q5-core and reports records per CPU
// second (docs/benchmarks.md, "Decode speed").

// benchTopic is the topic the bids go to (Debezium's naming).
const benchTopic = "nexmark.public.bid"

// kafkaBenchFormat encodes bids for one format: setup registers its
// schemas (reg is nil for formats without a registry) and returns the
// encoder of bid number idx (row: the Nexmark bid columns).
type kafkaBenchFormat struct {
	registry bool
	setup    func(reg *sr.Client, url string) (func(idx int64, bid plan.Row) (key, val []byte, err error), error)
}

// kafkaBenchFormats are the formats bench can produce. A new source
// format is one entry: its schema registered, its encoder.
var kafkaBenchFormats = map[string]kafkaBenchFormat{
	"json":          {setup: func(*sr.Client, string) (benchEncoder, error) { return jsonBid(false), nil }},
	"upsert_json":   {setup: func(*sr.Client, string) (benchEncoder, error) { return jsonBid(true), nil }},
	"debezium_json": {setup: func(*sr.Client, string) (benchEncoder, error) { return debeziumJSONBid, nil }},
	"avro":          {registry: true, setup: func(reg *sr.Client, _ string) (benchEncoder, error) { return avroBid(reg, false) }},
	"upsert_avro":   {registry: true, setup: func(reg *sr.Client, _ string) (benchEncoder, error) { return avroBid(reg, true) }},
	"debezium_avro": {registry: true, setup: func(reg *sr.Client, _ string) (benchEncoder, error) { return debeziumAvroBid(reg) }},
	"protobuf":      {registry: true, setup: func(_ *sr.Client, url string) (benchEncoder, error) { return protobufBid(url) }},
}

type benchEncoder = func(idx int64, bid plan.Row) (key, val []byte, err error)

// kafkaBenchFormatNames lists kafkaBenchFormats, for messages.
func kafkaBenchFormatNames() string {
	var n []string
	for k := range kafkaBenchFormats {
		n = append(n, k)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

// bidJSON is a bid as the JSON formats carry it: times as epoch
// milliseconds (as Debezium's io.debezium.time.Timestamp).
type bidJSON struct {
	ID       *int64 `json:"id,omitempty"`
	Auction  int64  `json:"auction"`
	Bidder   int64  `json:"bidder"`
	Price    int64  `json:"price"`
	Channel  string `json:"channel"`
	URL      string `json:"url"`
	DateTime int64  `json:"date_time"`
	Extra    string `json:"extra"`
}

func toBidJSON(bid plan.Row) bidJSON {
	return bidJSON{Auction: bid[0].I, Bidder: bid[1].I, Price: bid[2].I, Channel: bid[3].S, URL: bid[4].S, DateTime: bid[5].I, Extra: bid[6].S}
}

// marshalJSON is v in JSON as Kafka Connect's converter (Jackson) writes
// it: without encoding/json's HTML escapes (the bids' URLs have '&').
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonBid is format json's value, or upsert_json's key (the id) and value.
func jsonBid(keyed bool) benchEncoder {
	return func(idx int64, bid plan.Row) ([]byte, []byte, error) {
		v, err := marshalJSON(toBidJSON(bid))
		if !keyed {
			return nil, v, err
		}
		return strconv.AppendInt(nil, idx, 10), v, err
	}
}

// debeziumSource is a Debezium PostgreSQL connector's source block.
type debeziumSource struct {
	Version   string `json:"version" avro:"version"`
	Connector string `json:"connector" avro:"connector"`
	Name      string `json:"name" avro:"name"`
	TsMs      int64  `json:"ts_ms" avro:"ts_ms"`
	Snapshot  string `json:"snapshot" avro:"snapshot"`
	DB        string `json:"db" avro:"db"`
	Schema    string `json:"schema" avro:"schema"`
	Table     string `json:"table" avro:"table"`
	TxID      int64  `json:"txId" avro:"txId"`
	LSN       int64  `json:"lsn" avro:"lsn"`
}

func newDebeziumSource(idx int64, bid plan.Row) debeziumSource {
	return debeziumSource{Version: "2.7.0.Final", Connector: "postgresql", Name: "nexmark", TsMs: bid[5].I, Snapshot: "false",
		DB: "nexmark", Schema: "public", Table: "bid", TxID: 1000 + idx, LSN: 24023128 + 64*idx}
}

// debeziumJSONBid is a Debezium create event from the JSON converter
// without its schema wrapper (schemas.enable=false), key {"id": idx}.
func debeziumJSONBid(idx int64, bid plan.Row) ([]byte, []byte, error) {
	after := toBidJSON(bid)
	after.ID = &idx
	v, err := marshalJSON(struct {
		Before      *bidJSON       `json:"before"`
		After       bidJSON        `json:"after"`
		Source      debeziumSource `json:"source"`
		Op          string         `json:"op"`
		TsMs        int64          `json:"ts_ms"`
		Transaction *struct{}      `json:"transaction"`
	}{After: after, Source: newDebeziumSource(idx, bid), Op: "c", TsMs: bid[5].I + 7})
	return fmt.Appendf(nil, `{"id":%d}`, idx), v, err
}

// bidAvro is a bid in Avro; date_time a timestamp-millis (format avro) or
// io.debezium.time.Timestamp (Debezium's Value), both a long.
type bidAvro struct {
	ID       int64  `avro:"id"`
	Auction  int64  `avro:"auction"`
	Bidder   int64  `avro:"bidder"`
	Price    int64  `avro:"price"`
	Channel  string `avro:"channel"`
	URL      string `avro:"url"`
	DateTime int64  `avro:"date_time"`
	Extra    string `avro:"extra"`
}

func toBidAvro(idx int64, bid plan.Row) bidAvro {
	return bidAvro{ID: idx, Auction: bid[0].I, Bidder: bid[1].I, Price: bid[2].I, Channel: bid[3].S, URL: bid[4].S, DateTime: bid[5].I, Extra: bid[6].S}
}

const bidAvroSchema = `{"type":"record","name":"Bid","namespace":"nexmark","fields":[
	{"name":"auction","type":"long"},{"name":"bidder","type":"long"},{"name":"price","type":"long"},
	{"name":"channel","type":"string"},{"name":"url","type":"string"},
	{"name":"date_time","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"extra","type":"string"}]}`

// registerAvro registers schema under subject: its id and parsed schema.
func registerAvro(reg *sr.Client, subject, schema string) (int, avro.Schema, error) {
	ss, err := reg.CreateSchema(context.Background(), subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		return 0, nil, fmt.Errorf("register %s: %w", subject, err)
	}
	s, err := avro.Parse(schema)
	return ss.ID, s, err
}

// avroBid is format avro's value, or upsert_avro's key (the id, a long)
// and value.
func avroBid(reg *sr.Client, keyed bool) (benchEncoder, error) {
	id, s, err := registerAvro(reg, benchTopic+"-value", bidAvroSchema)
	if err != nil {
		return nil, err
	}
	keyID, ks, err := registerAvro(reg, benchTopic+"-key", `"long"`)
	if err != nil {
		return nil, err
	}
	return func(idx int64, bid plan.Row) ([]byte, []byte, error) {
		v, err := avro.Marshal(s, toBidAvro(idx, bid))
		if err != nil || !keyed {
			return nil, append(format.AppendHeader(nil, id), v...), err
		}
		k, err := avro.Marshal(ks, idx)
		return append(format.AppendHeader(nil, keyID), k...), append(format.AppendHeader(nil, id), v...), err
	}, nil
}

// protobufBid is format protobuf's value as a streamsql Kafka sink of
// the bid columns writes it (runtime/format's encoder: the generated
// .proto registered as <topic>-value, message indexes [0], date_time a
// google.protobuf.Timestamp).
func protobufBid(url string) (benchEncoder, error) {
	cols := plan.Schema{{Name: "auction", Type: plan.TypeBigint}, {Name: "bidder", Type: plan.TypeBigint}, {Name: "price", Type: plan.TypeBigint},
		{Name: "channel", Type: plan.TypeVarchar}, {Name: "url", Type: plan.TypeVarchar}, {Name: "date_time", Type: plan.TypeTimestamp}, {Name: "extra", Type: plan.TypeVarchar}}
	encs, err := format.OpenSink(context.Background(), format.SinkTable{Name: "bid", Topic: benchTopic, Columns: cols, Key: []int{0},
		Attrs: map[string]string{"format": "protobuf", "schema_registry": url}})
	if err != nil {
		return nil, err
	}
	return func(_ int64, bid plan.Row) ([]byte, []byte, error) {
		v, err := encs.Value.Append(nil, bid)
		return nil, v, err
	}, nil
}

// debeziumAvroBid is a Debezium create event from the Avro converter:
// key record {id}, the envelope around the Value record.
func debeziumAvroBid(reg *sr.Client) (benchEncoder, error) {
	value := `{"type":"record","name":"Value","namespace":"nexmark.public.bid","fields":[
		{"name":"id","type":"long"},{"name":"auction","type":"long"},{"name":"bidder","type":"long"},{"name":"price","type":"long"},
		{"name":"channel","type":"string"},{"name":"url","type":"string"},
		{"name":"date_time","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}},
		{"name":"extra","type":"string"}],"connect.name":"nexmark.public.bid.Value"}`
	envelope := `{"type":"record","name":"Envelope","namespace":"nexmark.public.bid","fields":[
		{"name":"before","type":["null",` + value + `],"default":null},
		{"name":"after","type":["null","nexmark.public.bid.Value"],"default":null},
		{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
			{"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
			{"name":"ts_ms","type":"long"},{"name":"snapshot","type":"string"},{"name":"db","type":"string"},
			{"name":"schema","type":"string"},{"name":"table","type":"string"},{"name":"txId","type":"long"},{"name":"lsn","type":"long"}]}},
		{"name":"op","type":"string"},
		{"name":"ts_ms","type":["null","long"],"default":null},
		{"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[
			{"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null}],
		"connect.name":"nexmark.public.bid.Envelope"}`
	id, s, err := registerAvro(reg, benchTopic+"-value", envelope)
	if err != nil {
		return nil, err
	}
	keyID, ks, err := registerAvro(reg, benchTopic+"-key", `{"type":"record","name":"Key","namespace":"nexmark.public.bid","fields":[{"name":"id","type":"long"}]}`)
	if err != nil {
		return nil, err
	}
	type event struct {
		Before      *bidAvro       `avro:"before"`
		After       *bidAvro       `avro:"after"`
		Source      debeziumSource `avro:"source"`
		Op          string         `avro:"op"`
		TsMs        *int64         `avro:"ts_ms"`
		Transaction *struct {
			ID    string `avro:"id"`
			Total int64  `avro:"total_order"`
			Order int64  `avro:"data_collection_order"`
		} `avro:"transaction"`
	}
	return func(idx int64, bid plan.Row) ([]byte, []byte, error) {
		after := toBidAvro(idx, bid)
		ts := bid[5].I + 7
		v, err := avro.Marshal(s, event{After: &after, Source: newDebeziumSource(idx, bid), Op: "c", TsMs: &ts})
		if err != nil {
			return nil, nil, err
		}
		k, err := avro.Marshal(ks, struct {
			ID int64 `avro:"id"`
		}{idx})
		return append(format.AppendHeader(nil, keyID), k...), append(format.AppendHeader(nil, id), v...), err
	}, nil
}

// benchKafka produces records bids in format f into an in-process broker
// (and registry), then runs queries.KafkaBench over them.
func benchKafka(out io.Writer, f string, records int64, ckpt time.Duration, asJSON bool, profile io.Writer) error {
	bf, ok := kafkaBenchFormats[f]
	if !ok {
		return fmt.Errorf("--kafka-format %q: use one of %s", f, kafkaBenchFormatNames())
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, benchTopic))
	if err != nil {
		return err
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	var reg *sr.Client
	regURL := ""
	if bf.registry {
		fake := srfake.New()
		defer fake.Close()
		regURL = fake.URL()
		if reg, err = sr.NewClient(sr.URLs(regURL)); err != nil {
			return err
		}
	}
	enc, err := bf.setup(reg, regURL)
	if err != nil {
		return err
	}
	start := time.Now()
	size, err := produceBids(brokers, records, enc)
	if err != nil {
		return err
	}
	produced := time.Since(start)
	res, err := queries.KafkaBench(context.Background(), queries.KafkaBenchConfig{Format: f, Brokers: brokers, Registry: regURL, Topic: benchTopic,
		Records: records, CheckpointInterval: ckpt, CPUProfile: profile})
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(out).Encode(struct {
			Format      string `json:"format"`
			RecordBytes int64  `json:"record_bytes"`
			queries.BenchResult
		}{f, size, res})
	}
	fmt.Fprintf(out, "kafka format %s: %d records (%.0f bytes a record, key and value; produced untimed in %.1fs), %d changes out, %d result rows\n",
		f, res.Events, float64(size)/float64(max(records, 1)), produced.Seconds(), res.RowsOut, res.ResultRows)
	fmt.Fprintf(out, "wall %.2fs, cpu %.2fs (the whole process: the in-process broker's fetches too), peak rss %.0f MiB\n", res.WallSeconds, res.CPUSeconds, float64(res.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(out, "%.0f records per CPU second, %.0f per second\n", res.EventsPerCPUSec, res.EventsPerSecond)
	return nil
}

// produceBids writes bids 0 to n-1 (the Nexmark generator's) through enc
// into benchTopic; it returns the bytes of their keys and values.
func produceBids(brokers string, n int64, enc benchEncoder) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(benchTopic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx := context.Background()
	g := nexmark.New(nexmark.Config{})
	var row plan.Row
	var size int64
	var first error
	done := make(chan error, 1)
	for i := int64(0); i < n; i++ {
		row = g.Fill(nexmark.Bid, uint64(i), nil, row)
		k, v, err := enc(i, row)
		if err != nil {
			return 0, err
		}
		size += int64(len(k) + len(v))
		cl.Produce(ctx, &kgo.Record{Key: k, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case done <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	select {
	case first = <-done:
	default:
	}
	return size, first
}
