package queries

import (
	"context"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
)

// formatCheckTimeout bounds CREATE TABLE's look-up of a Kafka source's
// schema in its registry.
const formatCheckTimeout = 5 * time.Second

// checkKafkaFormat checks a Kafka source's columns against the schema it
// will be read with (runtime/format.Check: the registry subject's latest
// version, Avro, Protobuf or JSON Schema, or the inline avro_schema), for
// CREATE TABLE. JSON sources have nothing to check.
func checkKafkaFormat(def *plan.TableDef) error {
	if def.Engine != "kafka" || def.IsSink() || !(format.Uses(def.Attrs) || format.UsesChanges(def.Attrs)) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), formatCheckTimeout)
	defer cancel()
	return format.Check(ctx, format.Table{Name: def.Name, Columns: def.Columns, EventTime: def.EventTime, Attrs: def.Attrs, Upsert: len(def.PrimaryKey) > 0, Key: def.PrimaryKey})
}
