package runtime

import (
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/value"
)

// A Kafka source with a PRIMARY KEY (a change format, <envelope>_<payload>:
// upsert_json, debezium_json, upsert_avro, debezium_avro; docs/connectors.md)
// reads the changelog of its table: each record is decoded by a change
// decoder (value.ChangeDecoder for JSON payloads, format.NewChangeDecoder
// for Avro) into the table's log row (the delete flag last, as ingest logs
// a PRIMARY KEY table's rows), which the reader hands on as an Upsert or a
// Delete, as the log reader does. A record that changes nothing (a
// Debezium tombstone) is skipped, not counted as bad; a delete of a key
// never seen is the Normalize stage's no-op. An Avro decoder's
// format.Unavailable (the registry cannot be asked) holds the record, as
// for format avro (kafkaformat.go).

// recordChanges decodes a PRIMARY KEY source's records (key, value and
// timestamp) into log rows; nil: a record that changes nothing.
type recordChanges interface {
	Decode(key, val []byte, ts int64) (plan.Row, error)
}

// changeDecoder is src's change decoder, by the payload of its format
// (a new payload, protobuf, is one more case), or nil for a source
// without a PRIMARY KEY.
func changeDecoder(src *plan.Source) (recordChanges, error) {
	if !src.Upsert {
		return nil, nil
	}
	if format.UsesChanges(src.Attrs) {
		return format.NewChangeDecoder(format.SourceTable(src))
	}
	return value.NewChangeDecoder(src)
}

// changeOp splits a log row of a PRIMARY KEY table into its columns and
// its operation.
func changeOp(row plan.Row) (plan.Row, op.Op) {
	last := len(row) - 1
	if row[last].True() {
		return row[:last], op.Delete
	}
	return row[:last], op.Upsert
}
