package planner

import (
	"net/url"

	"github.com/streamsql/streamsql/planner/plan"
)

// kafkaSinkFormatAttrs are the ENGINE_ATTRIBUTE keys of a Kafka sink's
// record format (docs/connectors.md, "Kafka sinks", "Formats").
var kafkaSinkFormatAttrs = map[string]bool{"format": true, "schema_registry": true, "subject": true, "key_subject": true, "register": true}

// checkKafkaSinkFormat checks the shape of a Kafka sink's format
// attributes, without I/O: format json (the default) takes none of the
// registry keys; avro, protobuf and json_schema need a schema_registry
// (an http or https URL with a host, no credentials), take a subject and
// a key_subject (default <topic>-value, <topic>-key) and register (true,
// the default, or false); avro and protobuf need column names that are
// field names (letters, digits and '_', not starting with a digit; the
// same rule as runtime/format's generated schemas). The registry is
// asked when the sink opens (runtime/sink/kafka).
func checkKafkaSinkFormat(def *plan.TableDef) error {
	a := def.Attrs
	f := a["format"]
	switch f {
	case "", "json":
		for _, k := range []string{"schema_registry", "subject", "key_subject", "register"} {
			if _, ok := a[k]; ok {
				return badf(k, "ENGINE_ATTRIBUTE %s of Kafka sink %s is for the registry formats (\"format\": \"avro\", \"protobuf\" or \"json_schema\"); its format is json", k, def.Name)
			}
		}
		return nil
	case "avro", "protobuf", "json_schema":
	default:
		return badf("format", "ENGINE_ATTRIBUTE format of a Kafka sink must be json, avro, protobuf or json_schema, not %q", f)
	}
	reg := a["schema_registry"]
	if reg == "" {
		return badf("format", "Kafka sink %s has format %s: give it a \"schema_registry\" (http://host:port), where its value and key schemas are registered", def.Name, f)
	}
	u, err := url.Parse(reg)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badf("schema_registry", "ENGINE_ATTRIBUTE schema_registry must be an http:// or https:// URL with a host, not %q", reg)
	}
	if u.User != nil {
		// The attributes show in SHOW CREATE TABLE and in messages.
		return badf("schema_registry", "ENGINE_ATTRIBUTE schema_registry of %s holds credentials (user@): registry credentials are not supported yet", def.Name)
	}
	for _, k := range []string{"subject", "key_subject"} {
		if v, ok := a[k]; ok && v == "" {
			return badf(k, "ENGINE_ATTRIBUTE %s of Kafka sink %s is empty: name a registry subject, or leave it out for the default", k, def.Name)
		}
	}
	if v, ok := a["register"]; ok && v != "true" && v != "false" {
		return badf("register", "ENGINE_ATTRIBUTE register must be true (register the sink's schemas) or false (only check the subjects' latest schemas), not %q", v)
	}
	if f != "json_schema" {
		for _, c := range def.Columns {
			if !plan.IsFieldName(c.Name) {
				return badf(c.Name, "column %s of Kafka sink %s: format %s needs column names that are field names (letters, digits and '_', not starting with a digit)", c.Name, def.Name, f)
			}
		}
	}
	return nil
}
