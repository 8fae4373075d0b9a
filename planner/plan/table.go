package plan

// TableDef is a declared table: its schema and engine settings. Stored in
// the catalog as JSON alongside the original statement text.
type TableDef struct {
	Name       string   `json:"name"`
	ID         uint64   `json:"id"`
	Engine     string   `json:"engine"`
	Connection string   `json:"connection,omitempty"`
	Columns    Schema   `json:"columns"`
	PrimaryKey []string `json:"primary_key,omitempty"`
	// EventTime is the event-time column index, or -1.
	EventTime       int               `json:"event_time"`
	WatermarkDelay  int64             `json:"watermark_delay_ms"`
	AllowedLateness int64             `json:"allowed_lateness_ms"`
	IdleTimeout     int64             `json:"idle_timeout_ms"`
	StartLatest     bool              `json:"start_latest,omitempty"`
	Retention       int64             `json:"retention_ms"`
	Attrs           map[string]string `json:"attrs,omitempty"`
	SQL             string            `json:"sql"`
}

// IsSink reports whether the table is an external sink (written by
// INSERT INTO ... SELECT, never read): ENGINE=postgres, ENGINE=kafka
// with a delivery, or ENGINE=file without a PRIMARY KEY (with one it is
// a side input read from the file).
func (t *TableDef) IsSink() bool {
	switch t.Engine {
	case "kafka":
		_, ok := t.Attrs["delivery"]
		return ok
	case "file":
		return len(t.PrimaryKey) == 0
	}
	return t.Engine == "postgres"
}

// HasLog reports whether the table's rows are in an ingest log of the
// meta store: ENGINE=http tables, and ENGINE=file side inputs (each
// version read from the file is logged as upserts and deletes).
func (t *TableDef) HasLog() bool {
	return t.Engine == "http" || (t.Engine == "file" && !t.IsSink())
}

// ViewDef is what the planner needs to know of an existing view.
type ViewDef struct {
	Name string
	Out  Schema
}

// IsFieldName reports whether s is a field name in Avro and Protobuf
// schemas: ASCII letters, digits and '_', not starting with a digit (the
// registry formats' Kafka sinks need their columns named so).
func IsFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
