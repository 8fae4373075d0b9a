package planner

import (
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// checkKafkaChangeSource checks a Kafka source's PRIMARY KEY against its
// format (docs/connectors.md, "Upsert and Debezium sources"): a PRIMARY
// KEY source reads a changelog, in a change format (upsert_json,
// debezium_json, upsert_avro, debezium_avro: value.ChangeFormat), and
// those formats need a PRIMARY KEY. A Debezium source's _ts_ms and
// _source_ts_ms columns hold the envelope's times and must be TIMESTAMP.
// An Avro change source reads keys (subject <topic>-key) and values
// through a schema_registry.
func checkKafkaChangeSource(def *plan.TableDef) error {
	format := def.Attrs["format"]
	env, payload, change := value.ChangeFormat(format)
	switch {
	case len(def.PrimaryKey) > 0 && !change:
		return errf(def.Name, "Kafka source %s has a PRIMARY KEY: it reads a changelog, so its format must be one of %s (upsert_*: an upsert topic, the record key is the key, a tombstone deletes; debezium_*: Debezium change events), not %s (a Kafka table with a PRIMARY KEY that is a sink names its \"delivery\")",
			def.Name, value.ChangeFormats(), format)
	case change && len(def.PrimaryKey) == 0:
		return errf(def.Name, "Kafka source %s of format %s needs a PRIMARY KEY: the columns of the record key", def.Name, format)
	}
	if payload == "avro" && def.Attrs["avro_schema"] != "" {
		return badf("avro_schema", "Kafka source %s of format %s reads its keys and values through a schema_registry: an inline avro_schema is for format avro", def.Name, format)
	}
	if env == value.EnvelopeDebezium {
		for _, c := range def.Columns {
			if t, ok := value.DebeziumMetaColumns[strings.ToLower(c.Name)]; ok && c.Type != t {
				return errf(c.Name, "column %s of a Debezium source holds the event's %s and must be %s, not %s", c.Name, strings.TrimPrefix(strings.ToLower(c.Name), "_"), t, c.Type)
			}
		}
	}
	for _, k := range def.PrimaryKey {
		if _, ok := value.KafkaMetaColumns[strings.ToLower(k)]; ok && change {
			return errf(k, "PRIMARY KEY column %s of Kafka source %s is a record metadata column: the key's columns come from the record key", k, def.Name)
		}
	}
	return nil
}
