package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestKafkaChangeSourceTable: a Kafka source with a PRIMARY KEY reads a
// changelog (upsert_json, debezium_json), and those formats need one.
func TestKafkaChangeSourceTable(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t"}'`,
			`Kafka source t has a PRIMARY KEY: it reads a changelog, so its format must be one of upsert_json, upsert_avro, debezium_json, debezium_avro (upsert_*: an upsert topic, the record key is the key, a tombstone deletes; debezium_*: Debezium change events), not json`},
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "json"}'`, `its format must be one of upsert_json`},
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "avro", "schema_registry": "http://r:8081"}'`, `its format must be one of upsert_json, upsert_avro, debezium_json, debezium_avro`},
		{`CREATE TABLE t (id BIGINT) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "debezium_avro", "schema_registry": "http://r:8081"}'`, `Kafka source t of format debezium_avro needs a PRIMARY KEY`},
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "upsert_avro"}'`, `Kafka table t has format upsert_avro: give it a "schema_registry"`},
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "upsert_avro", "avro_schema": "\\"long\\""}'`, `Kafka source t of format upsert_avro reads its keys and values through a schema_registry: an inline avro_schema is for format avro`},
		{`CREATE TABLE t (id BIGINT, _source_ts_ms VARCHAR(8), PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "debezium_avro", "schema_registry": "http://r:8081"}'`, `column _source_ts_ms of a Debezium source holds the event's source_ts_ms and must be TIMESTAMP(3), not VARCHAR`},
		{`CREATE TABLE t (id BIGINT) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "upsert_json"}'`, `Kafka source t of format upsert_json needs a PRIMARY KEY`},
		{`CREATE TABLE t (id BIGINT) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "debezium_json"}'`, `of format debezium_json needs a PRIMARY KEY`},
		{`CREATE TABLE t (id BIGINT, _ts_ms BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "debezium_json"}'`, `column _ts_ms of a Debezium source holds the event's ts_ms and must be TIMESTAMP(3), not BIGINT`},
		{`CREATE TABLE t (_key VARCHAR(8), v BIGINT, PRIMARY KEY (_key)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "upsert_json"}'`, `PRIMARY KEY column _key of Kafka source t is a record metadata column`},
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "csv"}'`, `ENGINE_ATTRIBUTE format of a Kafka source must be json, avro, protobuf, json_schema or (with a PRIMARY KEY) upsert_json, upsert_avro, debezium_json, debezium_avro, not "csv"`},
		{`CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid"}'`, `PRIMARY KEY tables (upsert tables) are ENGINE=http, ENGINE=kafka sources of a change format (upsert_json, upsert_avro, debezium_json, debezium_avro)`},
	} {
		_, err := createTable(t, c.sql)
		if pe, ok := err.(*Error); !ok || !strings.Contains(pe.Msg, c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.sql, err, c.want)
		}
	}
	// Not a changelog: _ts_ms is an ordinary column of other formats.
	if _, err := createTable(t, `CREATE TABLE t (id BIGINT, _ts_ms BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "t", "format": "upsert_json"}'`); err != nil {
		t.Fatal(err)
	}
}

// TestKafkaChangeSourcePlan: a Debezium or upsert source is planned as an
// ENGINE=http PRIMARY KEY table is: read through a Normalize stage (into
// an aggregate), and the table side of an AS OF join.
func TestKafkaChangeSourcePlan(t *testing.T) {
	for _, format := range []string{"upsert_json", "debezium_json", "upsert_avro", "debezium_avro"} {
		reg := ""
		if strings.HasSuffix(format, "_avro") {
			reg = `, "schema_registry": "http://r:8081"`
		}
		orders, err := createTable(t, `CREATE TABLE orders (id BIGINT, customer VARCHAR(8), amount DOUBLE, ts TIMESTAMP(3), PRIMARY KEY (id))
			ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "orders", "format": "`+format+`", "event_time": "ts"`+reg+`}'`)
		if err != nil {
			t.Fatal(err)
		}
		if orders.IdleTimeout != 5000 {
			t.Errorf("%s: idle_timeout %d, want the PRIMARY KEY tables' default 5000", format, orders.IdleTimeout)
		}
		orders.ID = 1
		bids, err := createTable(t, `CREATE TABLE bids (id BIGINT, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
		if err != nil {
			t.Fatal(err)
		}
		bids.ID = 2
		cat := testCatalog{"orders": orders, "bids": bids}
		for _, sql := range []string{
			`SELECT customer, SUM(amount) AS revenue FROM orders GROUP BY customer`,
			`SELECT b.id, o.customer FROM bids b JOIN orders o AS OF TIMESTAMP b.ts ON b.id = o.id`,
		} {
			g, err := planQuery(t, cat, sql)
			if err != nil {
				t.Fatalf("%s: %s: %v", format, sql, err)
			}
			var src *plan.Source
			normalize := false
			for _, v := range g.Vertices {
				for _, o := range v.Ops {
					switch o := o.(type) {
					case *plan.Normalize:
						normalize = normalize || o.Table == "orders"
					case *plan.Source:
						if o.Table == "orders" {
							src = o
						}
					}
				}
			}
			if src == nil || !src.Upsert || strings.Join(src.Key, ",") != "id" {
				t.Fatalf("%s: %s: source %+v, want an upsert source keyed on id", format, sql, src)
			}
			if strings.Contains(sql, "GROUP BY") && !normalize {
				t.Fatalf("%s: %s: no Normalize stage for orders:\n%s", format, sql, g.Explain())
			}
		}
	}
}
