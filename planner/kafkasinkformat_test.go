package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
)

// TestKafkaSinkFormatAttrs: the shapes of a Kafka sink's format
// attributes, checked without I/O.
func TestKafkaSinkFormatAttrs(t *testing.T) {
	table := func(cols, attrs string) (map[string]string, error) {
		sql := `CREATE TABLE t (` + cols + `, PRIMARY KEY (a)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='` + attrs + `'`
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		def, err := Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
		if err != nil {
			return nil, err
		}
		if !def.IsSink() {
			t.Fatalf("%s: not a sink", sql)
		}
		return def.Attrs, nil
	}
	const sink = `"topic": "t", "delivery": "exactly_once", `
	for _, c := range []struct{ cols, attrs, want string }{
		{"a BIGINT", sink + `"format": "xml"}`, `format of a Kafka sink must be json, avro, protobuf or json_schema, not "xml"`},
		{"a BIGINT", sink + `"format": "upsert_json"}`, `format of a Kafka sink must be json, avro, protobuf or json_schema`},
		{"a BIGINT", sink + `"format": "avro"}`, `Kafka sink t has format avro: give it a "schema_registry"`},
		{"a BIGINT", sink + `"format": "protobuf", "schema_registry": "ftp://r:1"}`, `schema_registry must be an http:// or https:// URL with a host, not "ftp://r:1"`},
		{"a BIGINT", sink + `"format": "json_schema", "schema_registry": "http://u:pw@r:1"}`, `holds credentials`},
		{"a BIGINT", sink + `"schema_registry": "http://r:1"}`, `schema_registry of Kafka sink t is for the registry formats`},
		{"a BIGINT", sink + `"format": "json", "register": "false"}`, `register of Kafka sink t is for the registry formats`},
		{"a BIGINT", sink + `"format": "avro", "schema_registry": "http://r:1", "register": "maybe"}`, `register must be true (register the sink's schemas) or false`},
		{"a BIGINT", sink + `"format": "avro", "schema_registry": "http://r:1", "key_subject": ""}`, `key_subject of Kafka sink t is empty`},
		{"a BIGINT, `b-c` BIGINT", sink + `"format": "avro", "schema_registry": "http://r:1"}`, "column b-c of Kafka sink t: format avro needs column names that are field names"},
		{"a BIGINT", sink + `"format": "avro", "schema_registry": "http://r:1", "avro_schema": "{}"}`, `key "avro_schema" does not apply to Kafka table t, a sink`},
		{"a BIGINT", `"topic": "t", "format": "avro", "schema_registry": "http://r:1", "key_subject": "k"}`, `unknown ENGINE_ATTRIBUTE key "key_subject"`},
	} {
		if strings.Contains(c.want, "unknown") {
			// a source (no delivery): key_subject is a sink's
			sql := `CREATE TABLE t (a BIGINT) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{` + c.attrs + `'`
			stmts, err := parser.Parse(sql)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.attrs, err, c.want)
			}
			continue
		}
		if _, err := table(c.cols, "{"+c.attrs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.attrs, err, c.want)
		}
	}
	for _, c := range []struct{ cols, attrs, format string }{
		{"a BIGINT", sink + `"format": "avro", "schema_registry": "https://r.example:8081", "subject": "v", "key_subject": "k", "register": false}`, "avro"},
		{"a BIGINT, ts TIMESTAMP", sink + `"format": "protobuf", "schema_registry": "http://r:1", "register": "true"}`, "protobuf"},
		{"a BIGINT, `b-c` DOUBLE", sink + `"format": "json_schema", "schema_registry": "http://r:1"}`, "json_schema"},
		{"a BIGINT", sink + `"format": "json"}`, "json"},
		{"a BIGINT", sink + `"partitions": 3}`, ""},
	} {
		attrs, err := table(c.cols, "{"+c.attrs)
		if err != nil {
			t.Fatalf("%s: %v", c.attrs, err)
		}
		if attrs["format"] != c.format {
			t.Errorf("%s: format %q, want %q", c.attrs, attrs["format"], c.format)
		}
		if strings.Contains(c.attrs, `"register": false`) && attrs["register"] != "false" {
			t.Errorf("%s: register %q", c.attrs, attrs["register"])
		}
	}
}
