package format

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/streamsql/streamsql/planner/plan"
)

// SinkTimeout bounds one registry request made while opening a sink.
const SinkTimeout = 10 * time.Second

// SinkTable is what a Kafka sink's encoders write: its columns, the
// primary key (the record key), its topic and its attributes.
type SinkTable struct {
	Name    string // the sink table (for messages)
	Topic   string
	Columns plan.Schema
	Key     []int // primary key column indexes, in key order
	Attrs   map[string]string
	// JSONKey and JSONValue append the JSON object the sink writes in
	// format json (the key's columns, every column): format
	// json_schema writes it behind the wire format's header.
	JSONKey, JSONValue func(dst []byte, vals plan.Row) ([]byte, error)
}

// SinkFormat is the "format" of sink attributes attrs ("json" unless set).
func SinkFormat(attrs map[string]string) string {
	if f := attrs["format"]; f != "" {
		return f
	}
	return "json"
}

// ValueSubject is the registry subject of the sink's values: "subject",
// else <topic>-value.
func (t SinkTable) ValueSubject() string {
	if s := t.Attrs["subject"]; s != "" {
		return s
	}
	return t.Topic + "-value"
}

// KeySubject is the registry subject of the sink's keys: "key_subject",
// else <topic>-key.
func (t SinkTable) KeySubject() string {
	if s := t.Attrs["key_subject"]; s != "" {
		return s
	}
	return t.Topic + "-key"
}

// keyColumns are the key's columns, in key order.
func (t SinkTable) keyColumns() plan.Schema {
	cols := make(plan.Schema, len(t.Key))
	for i, c := range t.Key {
		cols[i] = t.Columns[c]
	}
	return cols
}

// Encoder writes one record's key or value: the wire format's header
// (magic byte 0, the schema id, and for protobuf the message indexes [0])
// and the payload. It belongs to one goroutine and reuses its buffers.
type Encoder interface {
	// Append appends the record bytes of vals (one value per column of
	// its schema's columns, in their order) to dst.
	Append(dst []byte, vals plan.Row) ([]byte, error)
}

// SinkEncoders are a sink's key and value encoders and the schema ids
// they write.
type SinkEncoders struct {
	Key, Value     Encoder
	KeyID, ValueID int
}

// Incompatible is a registry's refusal of a sink's schema, or a
// subject's schema that cannot take the sink's records (register
// false): retrying cannot fix it.
type Incompatible struct {
	Subject string
	Msg     string
}

func (e *Incompatible) Error() string { return "subject " + e.Subject + ": " + e.Msg }

// sinkFormat is one format's schema generation and encoding.
type sinkFormat interface {
	// srType is the registry's schema type.
	srType() sr.SchemaType
	// generate is the schema of records of cols, named name (sanitized).
	generate(name string, cols plan.Schema) (string, error)
	// encoder writes records of cols in the schema text, registered
	// with id; its error says which field or column does not fit.
	encoder(text string, id int, cols plan.Schema, json func([]byte, plan.Row) ([]byte, error)) (Encoder, error)
}

func sinkFormatOf(name string) (sinkFormat, error) {
	switch name {
	case "avro":
		return avroSink{}, nil
	case "protobuf":
		return protoSink{}, nil
	case "json_schema":
		return jsonSchemaSink{}, nil
	}
	return nil, fmt.Errorf("format %q is not a registry format of a Kafka sink (avro, protobuf, json_schema)", name)
}

// SinkSchemas are the schemas a sink in format f registers: value and
// key (no I/O; docs/connectors.md shows them).
func SinkSchemas(t SinkTable) (value, key string, err error) {
	f, err := sinkFormatOf(SinkFormat(t.Attrs))
	if err != nil {
		return "", "", err
	}
	if value, err = f.generate(SchemaName(t.Topic)+"_value", t.Columns); err != nil {
		return "", "", err
	}
	if key, err = f.generate(SchemaName(t.Topic)+"_key", t.keyColumns()); err != nil {
		return "", "", err
	}
	return value, key, nil
}

// CheckSink generates the sink's schemas and plans their encoders, as
// OpenSink does with register true, without I/O: an error is one the
// registry would not cure.
func CheckSink(t SinkTable) error {
	f, err := sinkFormatOf(SinkFormat(t.Attrs))
	if err != nil {
		return err
	}
	name := SchemaName(t.Topic)
	for _, s := range []struct {
		suffix string
		cols   plan.Schema
		json   func([]byte, plan.Row) ([]byte, error)
	}{{"_value", t.Columns, t.JSONValue}, {"_key", t.keyColumns(), t.JSONKey}} {
		text, err := f.generate(name+s.suffix, s.cols)
		if err != nil {
			return err
		}
		if _, err := f.encoder(text, 0, s.cols, s.json); err != nil {
			return fmt.Errorf("the generated schema %s: %v", name+s.suffix, err)
		}
	}
	return nil
}

// SchemaName is the record (message) name made from a topic name: every
// character other than an ASCII letter, digit or '_' becomes '_', and a
// leading digit gets a '_' before it.
func SchemaName(topic string) string {
	var b strings.Builder
	for i, c := range topic {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			b.WriteRune(c)
		case c >= '0' && c <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// OpenSink registers the sink's value and key schemas (or, with
// "register": "false", checks that each subject's latest schema takes the
// sink's records) and returns their encoders. ctx bounds it. An
// *Unavailable error is retryable (the registry could not be asked); any
// other is not (an *Incompatible, a subject missing, a refusal).
func OpenSink(ctx context.Context, t SinkTable) (*SinkEncoders, error) {
	f, err := sinkFormatOf(SinkFormat(t.Attrs))
	if err != nil {
		return nil, err
	}
	url := t.Attrs["schema_registry"]
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: SinkTimeout}))
	if err != nil {
		return nil, fmt.Errorf("schema_registry %s: %w", url, err)
	}
	reg := sinkRegistry{url: url, cl: cl, register: t.Attrs["register"] != "false"}
	out := &SinkEncoders{}
	name := SchemaName(t.Topic)
	if out.Value, out.ValueID, err = reg.open(ctx, f, t.ValueSubject(), name+"_value", t.Columns, t.JSONValue); err != nil {
		return nil, err
	}
	if out.Key, out.KeyID, err = reg.open(ctx, f, t.KeySubject(), name+"_key", t.keyColumns(), t.JSONKey); err != nil {
		return nil, err
	}
	return out, nil
}

type sinkRegistry struct {
	url      string
	cl       *sr.Client
	register bool
}

// open registers (or checks) one subject's schema.
func (r sinkRegistry) open(ctx context.Context, f sinkFormat, subject, name string, cols plan.Schema, json func([]byte, plan.Row) ([]byte, error)) (Encoder, int, error) {
	if !r.register {
		ss, err := r.cl.SchemaByVersion(ctx, subject, -1)
		if err != nil {
			if notFound(err) {
				return nil, 0, &Incompatible{subject, fmt.Sprintf("not in the schema registry %s (and \"register\" is false: the sink only checks the subject's latest schema)", r.url)}
			}
			return nil, 0, r.refusal(err, "subject "+subject)
		}
		if ss.Type != f.srType() {
			return nil, 0, &Incompatible{subject, fmt.Sprintf("the latest schema (version %d, id %d) is %s, not %s", ss.Version, ss.ID, ss.Type, f.srType())}
		}
		if len(ss.References) > 0 {
			return nil, 0, &Incompatible{subject, fmt.Sprintf("the latest schema (version %d, id %d) has references, which a sink does not support yet", ss.Version, ss.ID)}
		}
		enc, err := f.encoder(ss.Schema.Schema, ss.ID, cols, json)
		if err != nil {
			return nil, 0, &Incompatible{subject, fmt.Sprintf("the latest schema (version %d, id %d) does not take the sink's records: %v", ss.Version, ss.ID, err)}
		}
		return enc, ss.ID, nil
	}
	text, err := f.generate(name, cols)
	if err != nil {
		return nil, 0, err
	}
	id, err := r.cl.RegisterSchema(ctx, subject, sr.Schema{Schema: text, Type: f.srType()}, -1, -1)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusConflict {
			return nil, 0, r.incompatible(ctx, f, subject, cols, json, re)
		}
		return nil, 0, r.refusal(err, "register the schema of subject "+subject)
	}
	enc, err := f.encoder(text, id, cols, json)
	if err != nil {
		return nil, 0, fmt.Errorf("subject %s: the generated schema: %v", subject, err) // a bug
	}
	return enc, id, nil
}

// incompatible is the error of a registry that refused a generated schema
// as incompatible: it names the field of the subject's latest schema that
// does not fit, when the sink's own check finds one.
func (r sinkRegistry) incompatible(ctx context.Context, f sinkFormat, subject string, cols plan.Schema, json func([]byte, plan.Row) ([]byte, error), re *sr.ResponseError) error {
	msg := fmt.Sprintf("the schema registry %s refuses the sink's schema as incompatible (%s)", r.url, re.Message)
	if ss, err := r.cl.SchemaByVersion(ctx, subject, -1); err == nil {
		if ss.Type != f.srType() {
			msg += fmt.Sprintf("; the latest schema (version %d, id %d) is %s", ss.Version, ss.ID, ss.Type)
		} else if _, err := f.encoder(ss.Schema.Schema, ss.ID, cols, json); err != nil {
			msg += fmt.Sprintf("; against the latest schema (version %d, id %d): %v", ss.Version, ss.ID, err)
		}
	}
	return &Incompatible{subject, msg}
}

// refusal classifies a registry error: no answer, a 5xx, 408 or 429 is
// *Unavailable (retryable); any other answer is a refusal retrying
// cannot lift (bad credentials, a schema the registry finds invalid).
func (r sinkRegistry) refusal(err error, what string) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		if re.StatusCode >= 500 || re.StatusCode == http.StatusRequestTimeout || re.StatusCode == http.StatusTooManyRequests {
			return &Unavailable{URL: r.url, Err: fmt.Errorf("%s: %s (HTTP %d)", what, re.Error(), re.StatusCode)}
		}
		return fmt.Errorf("schema registry %s: %s: %s (HTTP %d)", r.url, what, re.Error(), re.StatusCode)
	}
	return &Unavailable{URL: r.url, Err: fmt.Errorf("%s: %w", what, err)}
}

// sinkValueErr is a value a column of the wrong kind (the caller's
// mistake: rows carry their columns' types).
func sinkValueErr(c plan.Column, v plan.Value) error {
	return fmt.Errorf("column %s (%s): a %s value", c.Name, c.Type, v.K)
}

// sinkNullErr is a NULL for a field that cannot hold it.
func sinkNullErr(c plan.Column) error {
	return fmt.Errorf("column %s: NULL, and its field is not nullable", c.Name)
}
