// Package format owns the value formats of Kafka records other than JSON
// (docs/connectors.md, "Kafka", "Formats"): the Confluent wire format (a
// magic byte 0 and a 4-byte big-endian schema id before the payload), the
// Schema Registry client (franz-go's pkg/sr) with its cache of schemas by
// id, and Avro (github.com/hamba/avro/v2) read into a table's columns by
// field name, with the type mapping and its checks. JSON stays in value
// (value.RecordDecoder): it needs no I/O and HTTP ingest shares it.
//
// Why here. Sources (runtime's Kafka reader) and, next, sinks both need
// a format, and so does CREATE TABLE (queries), which checks a table's
// columns against the registry's latest schema: runtime/format is below
// both runtime and queries and imports neither (arch_test.go). It does
// I/O (the registry over HTTP), so it is not in value, which is pure.
// Protobuf and JSON Schema slot in beside avro.go: a Decoder per format,
// chosen by NewDecoder from the table's "format".
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
// Caching. A Registry fetches each schema id once and keeps its parsed
// schema and the plan that reads it into the table (which field goes to
// which column, which are skipped): a record's decode is a walk over
// that plan with one hamba/avro Reader reused, and allocates only its row
// and its strings. An id the registry answers it does not know is
// remembered for unknownTTL, so a run of such records costs one request.
//
// Threading. A Decoder belongs to one goroutine (the source task's); its
// Registry may be shared, and guards its cache with a mutex. Decode
// blocks on the registry only for an id not yet cached, bounded by
// FetchTimeout.
package format
