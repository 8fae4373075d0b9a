package planner

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
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
}

// Table validates a CREATE TABLE and builds its definition (ID is left 0).
func Table(ct *parser.CreateTable, text string) (*plan.TableDef, error) {
	def := &plan.TableDef{Name: ct.Name, Engine: ct.Engine, Connection: ct.Connection, EventTime: -1, Retention: 24 * 3600 * 1000, SQL: text}
	if def.Engine == "" {
		return nil, errf(ct.Name, "table %s needs an ENGINE: http or nexmark (sources), postgres (sinks)", ct.Name)
	}
	own, ok := engineAttrs[def.Engine]
	if !ok {
		if def.Engine == "kafka" {
			return nil, errf(def.Engine, "ENGINE=kafka is not available in this release; use ENGINE=http or ENGINE=nexmark for sources, ENGINE=postgres for sinks")
		}
		return nil, errf(def.Engine, "unknown ENGINE=%s; use http or nexmark (sources), postgres (sinks)", def.Engine)
	}
	if def.IsSink() && def.Connection == "" {
		return nil, errf(ct.Name, "ENGINE=%s table %s needs CONNECTION='postgres://user@host:port/database'", def.Engine, ct.Name)
	}
	if !def.IsSink() && def.Connection != "" {
		return nil, errf(ct.Name, "CONNECTION is for ENGINE=postgres sink tables, not ENGINE=%s", def.Engine)
	}
	seen := map[string]bool{}
	for _, c := range ct.Columns {
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
	for _, k := range ct.PrimaryKey {
		if def.Columns.Index(k) < 0 {
			return nil, errf(k, "PRIMARY KEY column %s is not a column of %s", k, ct.Name)
		}
		def.PrimaryKey = append(def.PrimaryKey, k)
	}
	switch {
	case def.IsSink() && len(def.PrimaryKey) == 0:
		return nil, errf(ct.Name, "sink table %s needs a PRIMARY KEY: the query's upsert key ((window_start, window_end, GROUP BY columns) for windowed aggregations; _row_id for queries without aggregation)", ct.Name)
	case !def.IsSink() && len(def.PrimaryKey) > 0 && def.Engine != "http":
		return nil, errf(ct.Name, "PRIMARY KEY tables (upsert tables) are ENGINE=http in this release")
	}
	attrs := map[string]any{}
	if ct.Attributes != "" {
		if err := json.Unmarshal([]byte(ct.Attributes), &attrs); err != nil {
			return nil, badf("ENGINE_ATTRIBUTE", "ENGINE_ATTRIBUTE of %s is not a JSON object: %v", ct.Name, err)
		}
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	def.Attrs = map[string]string{}
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
			return nil, badf(k, "unknown ENGINE_ATTRIBUTE key %q for ENGINE=%s", k, def.Engine)
		}
		dur := func() (int64, error) {
			if s == "0" || s == "0s" {
				return 0, nil
			}
			d, err := window.ParseDuration(s)
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
			if s != "exactly_once" && s != "at_least_once" {
				return nil, badf(k, "ENGINE_ATTRIBUTE delivery must be exactly_once or at_least_once, not %q", s)
			}
			def.Attrs[k] = s
		case "create_table":
			if s != "true" && s != "false" {
				return nil, badf(k, "ENGINE_ATTRIBUTE create_table must be true or false, not %q", s)
			}
			def.Attrs[k] = s
		case "table", "schema":
			if s == "" || len(s) > 63 || strings.ContainsRune(s, 0) {
				return nil, badf(k, "ENGINE_ATTRIBUTE %s must be a PostgreSQL name of 1 to 63 bytes, not %q", k, s)
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
	if def.IsSink() {
		if def.Attrs["delivery"] == "" {
			def.Attrs["delivery"] = "exactly_once"
		}
		return def, nil
	}
	if len(def.PrimaryKey) > 0 {
		if _, set := attrs["idle_timeout"]; !set {
			// A table side that goes quiet must not hold back the stream
			// rows waiting for it (SPEC: default 5s for PRIMARY KEY tables).
			def.IdleTimeout = 5000
		}
	}
	if def.Engine == "nexmark" {
		if def.Attrs["kind"] == "" {
			return nil, badf("kind", "ENGINE=nexmark needs ENGINE_ATTRIBUTE kind: person, auction or bid")
		}
	}
	return def, nil
}
