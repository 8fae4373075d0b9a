package planner

import (
	"encoding/json"
	"net/url"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// checkKafkaFormat checks the shape of a Kafka source's format attributes
// (docs/connectors.md, "Kafka", "Formats"), without I/O: format avro takes
// either a schema_registry (http or https URL; subject optional, default
// <topic>-value) or an inline avro_schema (JSON), not both; format json
// takes neither; upsert_avro and debezium_avro take a schema_registry as
// avro does (planner/kafkachanges.go refuses their avro_schema). The schema itself, and whether the columns fit it, is
// checked by CREATE TABLE in queries (runtime/format.Check), which may ask
// the registry.
func checkKafkaFormat(def *plan.TableDef) error {
	a := def.Attrs
	reg, inline, subject := a["schema_registry"], a["avro_schema"], a["subject"]
	if _, payload, _ := value.ChangeFormat(a["format"]); a["format"] != "avro" && payload != "avro" {
		for _, k := range []string{"schema_registry", "avro_schema", "subject"} {
			if a[k] != "" {
				return badf(k, "ENGINE_ATTRIBUTE %s is for \"format\": \"avro\" (Kafka table %s has format %s)", k, def.Name, a["format"])
			}
		}
		return nil
	}
	switch {
	case reg == "" && inline == "":
		return badf("format", "Kafka table %s has format avro: give it a \"schema_registry\" (http://host:port, records in the Confluent wire format) or an inline \"avro_schema\" (records in plain Avro binary)", def.Name)
	case reg != "" && inline != "":
		return badf("avro_schema", "Kafka table %s gives both a schema_registry and an avro_schema: the schema of a registry's record is the one its id names; give one of them", def.Name)
	case subject != "" && reg == "":
		return badf("subject", "ENGINE_ATTRIBUTE subject of Kafka table %s names a registry subject: it needs a schema_registry", def.Name)
	}
	if reg != "" {
		u, err := url.Parse(reg)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return badf("schema_registry", "ENGINE_ATTRIBUTE schema_registry must be an http:// or https:// URL with a host, not %q", reg)
		}
		if u.User != nil {
			// The attributes show in SHOW CREATE TABLE and in messages.
			return badf("schema_registry", "ENGINE_ATTRIBUTE schema_registry of %s holds credentials (user@): registry credentials are not supported yet", def.Name)
		}
	}
	if inline != "" && !json.Valid([]byte(inline)) {
		return badf("avro_schema", "ENGINE_ATTRIBUTE avro_schema of %s must be an Avro schema in JSON (a string holding it), and is not valid JSON", def.Name)
	}
	return nil
}
