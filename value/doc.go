// Package value owns what SQL values and rows are outside the plan's data
// types (planner/plan's Type, Value, Row): their binary codec (codec.go:
// AppendValue/AppendRow, DecodeValue/DecodeRow, RowWidth, group keys and
// their hash, CompareKeys, and the total order of values, Compare), the
// JSON row decoder that HTTP ingest and Kafka records go through (rows.go
// over the scanner of json.go, fuzzed against encoding/json), and the
// parsing of timestamps and durations (time.go), one implementation for
// SQL constants, CASTs, ingest and records.
//
// It sits below planner, runtime and queries and imports only planner/plan,
// window and the standard library (arch_test.go): plan keeps the value
// types as plan data (constants of bound expressions, schemas), this
// package what is done with them. Everything here is pure: no goroutines,
// no clock, no I/O. Functions are safe for concurrent use; a decoder
// returned by RecordDecoder is for one goroutine at a time.
package value
