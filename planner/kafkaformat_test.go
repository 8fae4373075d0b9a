package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
)

// TestKafkaFormatAttrs: the shapes of the registry formats' attributes, checked
// without I/O.
func TestKafkaFormatAttrs(t *testing.T) {
	const pre = `CREATE TABLE t (a BIGINT) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE=`
	for _, c := range []struct{ attrs, want string }{
		{`'{"topic": "t", "format": "xml"}'`, `format of a Kafka source must be json, avro, protobuf, json_schema or (with a PRIMARY KEY) upsert_json, upsert_avro, debezium_json, debezium_avro, not "xml"`},
		{`'{"topic": "t", "format": "avro"}'`, `give it a "schema_registry"`},
		{`'{"topic": "t", "format": "avro", "schema_registry": "ftp://r:1"}'`, `schema_registry must be an http:// or https:// URL with a host, not "ftp://r:1"`},
		{`'{"topic": "t", "format": "avro", "schema_registry": "http://"}'`, `schema_registry must be an http:// or https:// URL`},
		{`'{"topic": "t", "format": "avro", "schema_registry": "http://u:secret@r:1"}'`, `holds credentials (user@): registry credentials are not supported yet`},
		{`'{"topic": "t", "format": "avro", "schema_registry": "http://r:1", "avro_schema": "\\"long\\""}'`, `gives both a schema_registry and an avro_schema`},
		{`'{"topic": "t", "format": "avro", "avro_schema": "{", "subject": "s"}'`, `subject of Kafka table t names a registry subject: it needs a schema_registry`},
		{`'{"topic": "t", "format": "avro", "avro_schema": "{"}'`, `avro_schema of t must be an Avro schema in JSON`},
		{`'{"topic": "t", "schema_registry": "http://r:1"}'`, `schema_registry is for "format": "avro" or "protobuf" or "json_schema" (Kafka table t has format json)`},
		{`'{"topic": "t", "format": "protobuf"}'`, `Kafka table t has format protobuf: give it a "schema_registry"`},
		{`'{"topic": "t", "format": "json_schema", "subject": "s"}'`, `Kafka table t has format json_schema: give it a "schema_registry"`},
		{`'{"topic": "t", "format": "protobuf", "schema_registry": "http://r:1", "avro_schema": "{}"}'`, `avro_schema is for "format": "avro" (Kafka table t has format protobuf)`},
		{`'{"topic": "t", "format": "avro", "schema_registry": "http://r:1", "message": "a.B"}'`, `message is for "format": "protobuf" (Kafka table t has format avro)`},
		{`'{"topic": "t", "format": "protobuf", "schema_registry": "http://r:1", "validate": "true"}'`, `validate is for "format": "json_schema" (Kafka table t has format protobuf)`},
		{`'{"topic": "t", "format": "protobuf", "schema_registry": "http://r:1", "message": "a..B"}'`, `message of t must be a protobuf message name (pkg.Name), not "a..B"`},
		{`'{"topic": "t", "format": "json_schema", "schema_registry": "http://r:1", "validate": "yes"}'`, `validate of t must be true or false, not "yes"`},
		{`'{"topic": "t", "format": "json_schema", "schema_registry": "r:1"}'`, `schema_registry must be an http:// or https:// URL with a host`},
		{`'{"topic": "t", "delivery": "exactly_once", "avro_schema": "{}"}'`, `key "avro_schema" does not apply to Kafka table t, a sink`},
	} {
		sql := pre + c.attrs
		if strings.Contains(c.attrs, "delivery") {
			sql = strings.Replace(sql, "(a BIGINT)", "(a BIGINT, PRIMARY KEY (a))", 1)
		}
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		_, err = Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.attrs, err, c.want)
		}
	}
	for _, attrs := range []string{
		`'{"topic": "t", "format": "avro", "schema_registry": "https://r.example:8081", "subject": "bids-v"}'`,
		`'{"topic": "t", "format": "avro", "avro_schema": "{\\"type\\": \\"record\\", \\"name\\": \\"R\\", \\"fields\\": []}"}'`,
		`'{"topic": "t", "format": "json"}'`,
		`'{"topic": "t", "format": "protobuf", "schema_registry": "http://r:1", "subject": "s", "message": "pkg.v1.Bid"}'`,
		`'{"topic": "t", "format": "json_schema", "schema_registry": "http://r:1", "validate": "true"}'`,
	} {
		stmts, err := parser.Parse(pre + attrs)
		if err != nil {
			t.Fatal(err)
		}
		def, err := Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
		if err != nil {
			t.Fatalf("%s: %v", attrs, err)
		}
		if def.Attrs["format"] == "" {
			t.Fatalf("%s: no format", attrs)
		}
	}
}
