package planner

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// checkKafkaFormat checks the shape of a Kafka source's format attributes
// (docs/connectors.md, "Kafka", "Formats"), without I/O: format avro takes
// either a schema_registry (http or https URL; subject optional, default
// <topic>-value) or an inline avro_schema (JSON), not both; formats
// protobuf and json_schema take a schema_registry (and subject), protobuf
// a "message" (the message CREATE checks the columns against), json_schema
// "validate" (true or false); format json takes none of them. A change
// format (<envelope>_<payload>: upsert_avro, debezium_json, ...) takes
// what its payload's format takes (planner/kafkachanges.go refuses the
// avro_schema of upsert_avro and debezium_avro). The schema
// itself, and whether the columns fit it, is checked by CREATE TABLE in
// queries (runtime/format.Check), which may ask the registry.
func checkKafkaFormat(def *plan.TableDef) error {
	a := def.Attrs
	name, f := a["format"], a["format"]
	if _, payload, ok := value.ChangeFormat(f); ok {
		f = payload
	}
	reg, inline, subject := a["schema_registry"], a["avro_schema"], a["subject"]
	for k, formats := range formatAttrs {
		if a[k] != "" && !strings.Contains(" "+formats+" ", " "+f+" ") {
			fs := strings.Fields(formats)
			for i := range fs {
				fs[i] = `"` + fs[i] + `"`
			}
			return badf(k, "ENGINE_ATTRIBUTE %s is for \"format\": %s (Kafka table %s has format %s)", k, strings.Join(fs, " or "), def.Name, name)
		}
	}
	switch f {
	case "avro":
	case "protobuf", "json_schema":
		if reg == "" {
			return badf("format", "Kafka table %s has format %s: give it a \"schema_registry\" (http://host:port, records in the Confluent wire format)", def.Name, name)
		}
		if m := a["message"]; m != "" && !protoName(m) {
			return badf("message", "ENGINE_ATTRIBUTE message of %s must be a protobuf message name (pkg.Name), not %q", def.Name, m)
		}
		if v := a["validate"]; v != "" && v != "true" && v != "false" {
			return badf("validate", "ENGINE_ATTRIBUTE validate of %s must be true or false, not %q", def.Name, v)
		}
	default:
		return nil
	}
	switch {
	case reg == "" && inline == "" && name != f:
		return badf("format", "Kafka table %s has format %s: give it a \"schema_registry\" (http://host:port, keys and values in the Confluent wire format)", def.Name, name)
	case reg == "" && inline == "":
		return badf("format", "Kafka table %s has format %s: give it a \"schema_registry\" (http://host:port, records in the Confluent wire format) or an inline \"avro_schema\" (records in plain Avro binary)", def.Name, name)
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

// formatAttrs are the format attributes and the formats that take each.
var formatAttrs = map[string]string{
	"schema_registry": "avro protobuf json_schema",
	"subject":         "avro protobuf json_schema",
	"avro_schema":     "avro",
	"message":         "protobuf",
	"validate":        "json_schema",
}

// protoName reports whether s is a protobuf full name: dot-separated
// identifiers.
func protoName(s string) bool {
	for _, p := range strings.Split(s, ".") {
		if p == "" {
			return false
		}
		for i, c := range p {
			if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
				return false
			}
		}
	}
	return true
}
