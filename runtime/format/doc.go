// Package format owns the value formats of Kafka records other than JSON
// (docs/connectors.md, "Kafka", "Formats"): the Confluent wire format (a
// magic byte 0 and a 4-byte big-endian schema id before the payload; for
// Protobuf, then the message-index list), the Schema Registry client
// (franz-go's pkg/sr) with its cache of schemas by id, and Avro
// (github.com/hamba/avro/v2, avro.go), Protobuf (protobuf.go) and JSON
// Schema (jsonschema.go) read into a table's columns by field name, with
// the type mappings and their checks. Plain JSON stays in value
// (value.RecordDecoder): it needs no I/O and HTTP ingest shares it; JSON
// Schema records are read by it too (value.SchemaRecordDecoder), after
// the header.
//
// Why here. Sources (runtime's Kafka reader) and, next, sinks both need
// a format, and so does CREATE TABLE (queries), which checks a table's
// columns against the registry's latest schema: runtime/format is below
// both runtime and queries and imports neither (arch_test.go). It does
// I/O (the registry over HTTP), so it is not in value, which is pure.
// A Decoder per format, chosen by NewDecoder from the table's "format".
//
// Use. Check (at CREATE TABLE; bounded by its context) reads the schema a
// table will be read with (the subject's latest version, or the inline
// "avro_schema") and refuses a column whose field does not fit, naming
// both. NewDecoder makes a table's Decoder (no I/O); Decode turns one
// record value into a row of the table's columns (the metadata columns
// _partition, _offset, _key, _timestamp are left for the reader). An
// error from Decode is a bad record, except a *Unavailable (IsRetryable):
// the registry could not be asked, and the same record must be decoded
// again later.
//
// Change formats. A PRIMARY KEY source of format upsert_avro or
// debezium_avro (value.ChangeFormat: <envelope>_<payload>) is read by
// NewChangeDecoder (avrochanges.go): record keys and values both in the
// wire format, a plan per key schema id (the PRIMARY KEY's columns) and
// per value schema id (an upsert's row, or the Debezium envelope around a
// readPlan of its Value record); the envelope rules are value/cdc.go's.
// Check covers them (the latest value and key schemas). A Protobuf
// payload would follow the same pattern.
//
// Caching. Each schema id is fetched once per decoder (each makes its own
// Registry): the Registry keeps a parsed Avro schema, a decoder the plan
// that reads it into the table (which field goes to which column, which
// are skipped), and for Protobuf the compiled file and a plan per message
// index, for JSON Schema whether the table fits and the validator. A
// record's decode is a walk over that plan (Avro: with one hamba/avro
// Reader reused; Protobuf: protowire) and allocates only its row and its
// strings. An id the registry answers it does not know is remembered for
// unknownTTL, so a run of such records costs one request. An unavailable
// registry's error (also while fetching a Protobuf schema's references)
// is not kept: the same record is decoded again later.
//
// Protobuf. A schema id's .proto text and its references (other subjects,
// fetched with it; the well-known google/protobuf imports need none) are
// compiled with github.com/bufbuild/protocompile once, and a plan per
// message-index list maps field numbers to columns. A record is read by
// walking its wire format with google.golang.org/protobuf's protowire
// over that plan, not by proto.Unmarshal into a dynamicpb message: the
// walk took 0.5 µs and 3 allocations (row, strings) for a five-field
// Bid, Unmarshal into one reused dynamic message 3.9 µs and 19 before any
// row was made (BenchmarkProtobufDecode, BenchmarkProtobufDynamicpb). The
// walk keeps protobuf's semantics, checked against proto.Unmarshal by
// FuzzProtobufDecode: the last value of a scalar wins, a message field
// that occurs twice merges, a oneof member clears the others, a known
// field of another wire type is an unknown field.
//
// JSON Schema. A schema id's document is fetched once and its top-level
// properties checked against the columns; a record is decoded as format
// json decodes one, skipping members the table lacks. Validation against
// the schema (santhosh-tekuri/jsonschema/v6, "validate": "true") costs
// about six times the decode (BenchmarkJSONSchemaDecode), so it is off
// unless asked for.
//
// Threading. A Decoder belongs to one goroutine (the source task's); its
// Registry may be shared, and guards its cache with a mutex. Decode
// blocks on the registry only for an id not yet cached, bounded by
// FetchTimeout.
//
// Sinks (sinkenc.go; docs/connectors.md, "Sink formats"). A Kafka sink in
// avro, protobuf or json_schema gets its key and value Encoders from
// OpenSink: it generates each schema from the columns (SinkSchemas) and
// registers it, or with "register" false fetches the subject's latest
// schema and checks that it takes the sink's records, naming the field or
// column that does not (*Incompatible); a registry that cannot be asked
// is *Unavailable (retryable). An Encoder writes the header and the
// payload straight into the caller's buffer: avroenc.go with
// hamba/avro's Writer, a walk over a plan made once per schema;
// protoenc.go with protowire, guided by the descriptor that protocompile
// builds from the .proto text (the registry's, or the generated one);
// jsonschemaenc.go puts the sink's own JSON (runtime/sink/kafka's) behind
// the header. An Encoder belongs to one goroutine (the sink's committer)
// and reuses its buffer: no allocation per record. OpenSink does I/O,
// each request bounded by SinkTimeout and by its context.
package format
