package runtime

import (
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/value"
)

// A Kafka source with a PRIMARY KEY (format upsert_json or debezium_json,
// docs/connectors.md) reads the changelog of its table: each record is
// decoded by a value.ChangeDecoder into the table's log row (the delete
// flag last, as ingest logs a PRIMARY KEY table's rows), which the reader
// hands on as an Upsert or a Delete, as the log reader does. A record
// that changes nothing (a Debezium tombstone) is skipped, not counted as
// bad; a delete of a key never seen is the Normalize stage's no-op.

// changeDecoder is src's change decoder, or nil for a source without a
// PRIMARY KEY.
func changeDecoder(src *plan.Source) (*value.ChangeDecoder, error) {
	if !src.Upsert {
		return nil, nil
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
