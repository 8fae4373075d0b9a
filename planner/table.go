package planner

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

var columnTypes = map[string]plan.Type{
	"BIGINT": plan.TypeBigint, "DOUBLE": plan.TypeDouble, "VARCHAR": plan.TypeVarchar,
	"TIMESTAMP": plan.TypeTimestamp, "BOOLEAN": plan.TypeBoolean,
}

// sourceAttrs are the ENGINE_ATTRIBUTE keys every source takes.
var sourceAttrs = map[string]bool{
	"event_time": true, "watermark_delay": true, "allowed_lateness": true,
	"idle_timeout": true, "start": true, "retention": true,
}

// engineAttrs are each engine's own keys.
var engineAttrs = map[string]map[string]bool{
	"http":    {},
	"nexmark": {"kind": true, "events_per_second": true, "events": true, "base_time": true, "seed": true},
	// sinks (TableDef.IsSink): none of the source keys
	"postgres": {"table": true, "schema": true, "delivery": true, "create_table": true},
	// a Kafka table is a sink when it names its delivery (kafkaSinkAttrs),
	// else a source (kafkaSourceAttrs and the source keys)
	"kafka": {"topic": true},
	// a file table is a sink without a PRIMARY KEY, else a side input
	// (filetable.go checks the keys of each role)
	"file": {"path": true, "format": true, "partition_by": true, "bounded": true, "delivery": true},
}

var (
	kafkaSourceAttrs = map[string]bool{"format": true, "dead_letter_topic": true, "schema_registry": true, "avro_schema": true, "subject": true, "message": true, "validate": true}
	kafkaSinkAttrs   = map[string]bool{"delivery": true, "progress_topic": true, "partitions": true, "transaction_timeout": true}
)

// MaxColumns is the most columns a table, and the output of a query, may
// have (MySQL's limit; PostgreSQL's is 1,600). Every row is as wide as its
// table, and planning and EXPLAIN are linear in it; the limit keeps one
// CREATE TABLE from making every later row and plan that large.
const MaxColumns = 4096

// Table validates a CREATE TABLE and builds its definition (ID is left 0).
func Table(ct *parser.CreateTable, text string) (*plan.TableDef, error) {
	if err := CheckName("table", ct.Name); err != nil {
		return nil, err
	}
	if len(ct.Columns) > MaxColumns {
		return nil, errf(ct.Name, "table %s has %d columns, over the limit of %d columns per table", ct.Name, len(ct.Columns), MaxColumns)
	}
	def := &plan.TableDef{Name: ct.Name, Engine: ct.Engine, Connection: ct.Connection, EventTime: -1, Retention: 24 * 3600 * 1000, SQL: text}
	if def.Engine == "" {
		return nil, errf(ct.Name, "table %s needs an ENGINE: %s", ct.Name, engineList)
	}
	own, ok := engineAttrs[def.Engine]
	if !ok {
		return nil, errf(def.Engine, "unknown ENGINE=%s%s; use %s", def.Engine, didYouMean(def.Engine, keysOf(engineAttrsSet)), engineList)
	}
	attrs := map[string]any{}
	if ct.Attributes != "" {
		if err := json.Unmarshal([]byte(ct.Attributes), &attrs); err != nil {
			return nil, badf("ENGINE_ATTRIBUTE", "ENGINE_ATTRIBUTE of %s is not a JSON object: %v", ct.Name, err)
		}
	}
	def.Attrs = map[string]string{}
	if _, ok := attrs["delivery"]; ok && def.Engine == "kafka" {
		def.Attrs["delivery"] = "" // a sink (IsSink); the value is checked below
	}
	if def.Engine == "kafka" {
		extra := kafkaSourceAttrs
		if def.IsSink() {
			extra = kafkaSinkAttrs
		}
		own = map[string]bool{}
		for k := range engineAttrs["kafka"] {
			own[k] = true
		}
		for k := range extra {
			own[k] = true
		}
		if def.IsSink() {
			for k := range kafkaSinkFormatAttrs {
				own[k] = true
			}
		}
	}
	switch {
	case def.Engine == "postgres" && def.Connection == "":
		return nil, errf(ct.Name, "ENGINE=postgres table %s needs CONNECTION='postgres://user@host:port/database'", ct.Name)
	case def.Engine == "kafka" && def.Connection == "":
		return nil, errf(ct.Name, "ENGINE=kafka table %s needs CONNECTION='host:port[,host:port]' (the bootstrap brokers)", ct.Name)
	case def.Engine != "postgres" && def.Engine != "kafka" && def.Connection != "":
		return nil, errf(ct.Name, "CONNECTION is for ENGINE=kafka and ENGINE=postgres tables, not ENGINE=%s", def.Engine)
	}
	seen := map[string]bool{}
	for _, c := range ct.Columns {
		if err := CheckName("column", c.Name); err != nil {
			return nil, err
		}
		if def.Engine == "postgres" && len(c.Name) > maxPGName {
			return nil, badf(c.Name, "column name %s of PostgreSQL sink %s is %d bytes long, over PostgreSQL's limit of %d", quoteName(c.Name), ct.Name, len(c.Name), maxPGName)
		}
		t, ok := columnTypes[c.Type]
		if !ok {
			return nil, errf(c.Name, "column %s: unsupported type %s", c.Name, c.Type)
		}
		if seen[strings.ToLower(c.Name)] {
			return nil, errf(c.Name, "duplicate column %s", c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		def.Columns = append(def.Columns, plan.Column{Name: c.Name, Type: t, NotNull: c.NotNull})
	}
	if len(def.Columns) == 0 {
		return nil, errf(ct.Name, "table %s has no columns", ct.Name)
	}
	byKey := make(map[string]bool, len(def.Columns)) // what Columns.Index finds, without a scan per key
	for _, c := range def.Columns {
		byKey[plan.NameKey(c.Name)] = true
	}
	for _, k := range ct.PrimaryKey {
		if !byKey[plan.NameKey(k)] {
			return nil, errf(k, "PRIMARY KEY column %s is not a column of %s", k, ct.Name)
		}
		def.PrimaryKey = append(def.PrimaryKey, k)
	}
	switch {
	case def.Engine == "file":
		// a sink without a PRIMARY KEY, a side input with one (IsSink)
	case def.IsSink() && len(def.PrimaryKey) == 0:
		return nil, errf(ct.Name, "sink table %s needs a PRIMARY KEY: the query's upsert key ((window_start, window_end, GROUP BY columns) for windowed aggregations; _row_id for queries without aggregation)", ct.Name)
	case !def.IsSink() && len(def.PrimaryKey) > 0 && def.Engine != "http" && def.Engine != "kafka":
		return nil, errf(ct.Name, "PRIMARY KEY tables (upsert tables) are ENGINE=http, ENGINE=kafka sources of a change format (%s), or ENGINE=file side inputs, in this release", value.ChangeFormats())
	}
	if def.Engine == "kafka" && !def.IsSink() {
		for _, c := range def.Columns {
			if t, ok := value.KafkaMetaColumns[strings.ToLower(c.Name)]; ok && c.Type != t {
				return nil, errf(c.Name, "column %s of a Kafka source holds the record's %s and must be %s, not %s", c.Name, strings.TrimPrefix(strings.ToLower(c.Name), "_"), t, c.Type)
			}
		}
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := attrs[k]
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case float64:
			s = fmt.Sprint(int64(v))
			if float64(int64(v)) != v {
				s = fmt.Sprint(v)
			}
		case bool:
			s = fmt.Sprint(v)
		default:
			return nil, badf(k, "ENGINE_ATTRIBUTE key %q of %s must be a string or a number", k, ct.Name)
		}
		if !(sourceAttrs[k] && !def.IsSink()) && !own[k] {
			if def.Engine == "kafka" && (kafkaSinkAttrs[k] || kafkaSourceAttrs[k] || sourceAttrs[k]) {
				role := "source"
				if def.IsSink() {
					role = "sink (it has a \"delivery\")"
				}
				return nil, errf(k, "ENGINE_ATTRIBUTE key %q does not apply to Kafka table %s, a %s (it takes %s)", k, ct.Name, role, strings.Join(validKeys(def, own), ", "))
			}
			valid := validKeys(def, own)
			return nil, errf(k, "unknown ENGINE_ATTRIBUTE key %q for ENGINE=%s%s; ENGINE=%s takes %s", k, def.Engine, didYouMean(k, valid), def.Engine, strings.Join(valid, ", "))
		}
		if def.Engine == "kafka" && def.IsSink() && kafkaSinkFormatAttrs[k] {
			def.Attrs[k] = s // checkKafkaSinkFormat
			continue
		}
		dur := func() (int64, error) {
			if s == "0" || s == "0s" {
				return 0, nil
			}
			d, err := value.ParseDuration(s)
			if err != nil {
				return 0, badf(k, "ENGINE_ATTRIBUTE %s of %s: %v", k, ct.Name, err)
			}
			return d, nil
		}
		var err error
		switch k {
		case "event_time":
			i := def.Columns.Index(s)
			if i < 0 {
				return nil, errf(s, "event_time column %s is not a column of %s", s, ct.Name)
			}
			if def.Columns[i].Type != plan.TypeTimestamp {
				return nil, errf(s, "event_time column %s must be TIMESTAMP, not %s", s, def.Columns[i].Type)
			}
			def.EventTime = i
		case "watermark_delay":
			def.WatermarkDelay, err = dur()
		case "allowed_lateness":
			def.AllowedLateness, err = dur()
		case "idle_timeout":
			def.IdleTimeout, err = dur()
		case "retention":
			def.Retention, err = dur()
		case "delivery":
			if s != "exactly_once" && s != "at_least_once" && s != "at_most_once" {
				return nil, badf(k, "ENGINE_ATTRIBUTE delivery must be exactly_once, at_least_once or at_most_once, not %q", s)
			}
			def.Attrs[k] = s
		case "create_table":
			if s != "true" && s != "false" {
				return nil, badf(k, "ENGINE_ATTRIBUTE create_table must be true or false, not %q", s)
			}
			def.Attrs[k] = s
		case "format":
			if def.Engine == "kafka" && s != "json" && s != "avro" && s != "protobuf" && s != "json_schema" && !value.IsChangeFormat(s) {
				return nil, badf(k, "ENGINE_ATTRIBUTE format of a Kafka source must be json, avro, protobuf, json_schema or (with a PRIMARY KEY) %s, not %q", value.ChangeFormats(), s)
			}
			if def.Engine != "file" && def.Engine != "kafka" && s != "json" {
				return nil, badf(k, "ENGINE_ATTRIBUTE format must be json, not %q", s)
			}
			def.Attrs[k] = s
		case "partitions":
			if n, err := strconv.Atoi(s); err != nil || n < 1 {
				return nil, badf(k, "ENGINE_ATTRIBUTE partitions must be a positive integer, not %q", s)
			}
			def.Attrs[k] = s
		case "transaction_timeout":
			if _, err := value.ParseDuration(s); err != nil {
				return nil, badf(k, "ENGINE_ATTRIBUTE transaction_timeout of %s: %v", ct.Name, err)
			}
			def.Attrs[k] = s
		case "topic", "progress_topic", "dead_letter_topic":
			if !validTopic(s) {
				return nil, badf(k, "ENGINE_ATTRIBUTE %s must be a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -), not %q", k, s)
			}
			def.Attrs[k] = s
		case "table", "schema":
			if len(s) > maxPGName || nameProblem(s, false) != "" {
				return nil, badf(k, "ENGINE_ATTRIBUTE %s must be a PostgreSQL name of 1 to %d bytes without control characters, not %s", k, maxPGName, quoteName(s))
			}
			def.Attrs[k] = s
		case "base_time":
			if ms, err := strconv.ParseInt(s, 10, 64); err != nil || ms < 0 || ms > plan.MaxTime {
				return nil, badf(k, "ENGINE_ATTRIBUTE base_time must be epoch milliseconds from 0 to %d (%s), not %q", plan.MaxTime, plan.FormatTime(plan.MaxTime), s)
			}
			def.Attrs[k] = s
		case "start":
			switch s {
			case "earliest":
			case "latest":
				def.StartLatest = true
			default:
				return nil, badf(k, "ENGINE_ATTRIBUTE start must be earliest or latest, not %q", s)
			}
		default:
			def.Attrs[k] = s
		}
		if err != nil {
			return nil, err
		}
	}
	if def.Engine == "kafka" && def.Attrs["topic"] == "" {
		return nil, errf("topic", "ENGINE=kafka table %s needs ENGINE_ATTRIBUTE topic", ct.Name)
	}
	if def.Engine == "postgres" && def.Attrs["table"] == "" && len(def.Name) > maxPGName {
		return nil, badf(def.Name, "sink table name %s is %d bytes long, over PostgreSQL's limit of %d: name the PostgreSQL table with ENGINE_ATTRIBUTE table", quoteName(def.Name), len(def.Name), maxPGName)
	}
	if def.Engine == "file" {
		if err := checkFileTable(def); err != nil {
			return nil, err
		}
	}
	if def.Engine == "kafka" && def.IsSink() {
		if err := checkKafkaSinkFormat(def); err != nil {
			return nil, err
		}
	}
	if def.IsSink() {
		if def.Attrs["delivery"] == "" {
			def.Attrs["delivery"] = "exactly_once"
		}
		return def, nil
	}
	if len(def.PrimaryKey) > 0 {
		if _, set := attrs["idle_timeout"]; !set {
			// A table side that goes quiet must not hold back the stream
			// rows waiting for it (docs/sql.md: default 5s for PRIMARY KEY tables).
			def.IdleTimeout = 5000
		}
	}
	if def.Engine == "kafka" && def.Attrs["format"] == "" {
		def.Attrs["format"] = "json"
	}
	if def.Engine == "kafka" {
		if err := checkKafkaFormat(def); err != nil {
			return nil, err
		}
		if err := checkKafkaChangeSource(def); err != nil {
			return nil, err
		}
	}
	if def.Engine == "nexmark" {
		if def.Attrs["kind"] == "" {
			return nil, errf("kind", "ENGINE=nexmark needs ENGINE_ATTRIBUTE kind: person, auction or bid")
		}
	}
	return def, nil
}

// engineList names the engines, for messages.
const engineList = "http, nexmark, kafka or file (sources), postgres, kafka or file (sinks)"

// engineAttrsSet is the set of engines.
var engineAttrsSet = func() map[string]bool {
	m := map[string]bool{}
	for e := range engineAttrs {
		m[e] = true
	}
	return m
}()

// validKeys are the ENGINE_ATTRIBUTE keys table def takes (own: its
// engine's keys, for its role), sorted.
func validKeys(def *plan.TableDef, own map[string]bool) []string {
	if def.IsSink() {
		return keysOf(own)
	}
	return keysOf(sourceAttrs, own)
}

// validTopic reports whether s is a legal Kafka topic name.
func validTopic(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
