package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// FetchTimeout bounds one registry request made while decoding.
const FetchTimeout = 2 * time.Second

// unknownTTL is how long an id the registry does not know stays unknown.
const unknownTTL = 30 * time.Second

// HeaderSize is the Confluent wire format's header: magic byte 0, then
// the schema id, 4 bytes big-endian.
const HeaderSize = 5

// SplitHeader reads the Confluent wire format's header of v: the schema id
// and the payload after it.
func SplitHeader(v []byte) (id int, payload []byte, err error) {
	if len(v) < HeaderSize {
		return 0, nil, fmt.Errorf("value is %d bytes, shorter than the 5-byte Schema Registry header (magic byte 0, schema id)", len(v))
	}
	if v[0] != 0 {
		return 0, nil, fmt.Errorf("value starts with byte 0x%02x, not the Schema Registry magic byte 0 (not written through a registry?)", v[0])
	}
	return int(binary.BigEndian.Uint32(v[1:5])), v[5:], nil
}

// AppendHeader appends the wire format's header for schema id to b.
func AppendHeader(b []byte, id int) []byte {
	return binary.BigEndian.AppendUint32(append(b, 0), uint32(id))
}

// Unavailable is a registry that could not be asked (a connection error,
// a timeout, a 5xx): retryable, unlike an answer that a schema does not
// exist.
type Unavailable struct {
	URL string
	Err error
}

func (e *Unavailable) Error() string {
	return fmt.Sprintf("schema registry %s is unavailable: %v", e.URL, e.Err)
}

func (e *Unavailable) Unwrap() error { return e.Err }

// IsRetryable reports whether err is an *Unavailable.
func IsRetryable(err error) bool {
	var u *Unavailable
	return errors.As(err, &u)
}

// Registry is a Schema Registry client with a cache of schemas by id.
type Registry struct {
	url string
	cl  *sr.Client

	mu      sync.Mutex
	byID    map[int]avro.Schema
	unknown map[int]time.Time // id -> when it was found unknown
}

// NewRegistry is a client of the registry at url (no I/O).
func NewRegistry(url string) (*Registry, error) {
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: FetchTimeout}))
	if err != nil {
		return nil, fmt.Errorf("schema_registry %s: %w", url, err)
	}
	return &Registry{url: url, cl: cl, byID: map[int]avro.Schema{}, unknown: map[int]time.Time{}}, nil
}

// notFound reports whether err is the registry's answer that what was
// asked for does not exist (a 404), as opposed to not being able to ask.
func notFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// unavailable is a registry error other than not found: no answer, the
// registry's own failure, or a refusal (401, 403, 429) that a change on
// its side can lift. None of them says anything about the record, so none
// makes it a bad record.
func (r *Registry) unavailable(err error, what string) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		err = fmt.Errorf("%s (HTTP %d)", re.Error(), re.StatusCode)
	}
	return &Unavailable{URL: r.url, Err: fmt.Errorf("%s: %w", what, err)}
}

// unknownID is the registry's answer that it has no schema of an id.
type unknownID struct {
	id  int
	url string
}

func (e *unknownID) Error() string {
	return fmt.Sprintf("schema id %d is not in the schema registry %s", e.id, e.url)
}

// isUnknownID reports whether err is the registry's answer that it has no
// schema of the id asked for.
func isUnknownID(err error) bool {
	var u *unknownID
	return errors.As(err, &u)
}

// Schema is the Avro schema of id, fetched once.
func (r *Registry) Schema(ctx context.Context, id int) (avro.Schema, error) {
	r.mu.Lock()
	s, ok := r.byID[id]
	at, unknown := r.unknown[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	if unknown && time.Since(at) < unknownTTL {
		return nil, &unknownID{id, r.url}
	}
	ss, err := r.fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err = parseAvro(ss)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	r.mu.Lock()
	r.byID[id] = s
	delete(r.unknown, id)
	r.mu.Unlock()
	return s, nil
}

// Latest is subject's latest schema and its id.
func (r *Registry) Latest(ctx context.Context, subject string) (int, avro.Schema, error) {
	ss, err := r.latest(ctx, subject)
	if err != nil {
		return 0, nil, err
	}
	s, err := parseAvro(ss.Schema)
	if err != nil {
		return 0, nil, fmt.Errorf("subject %s, schema id %d: %w", subject, ss.ID, err)
	}
	r.mu.Lock()
	r.byID[ss.ID] = s
	r.mu.Unlock()
	return ss.ID, s, nil
}

// parseAvro parses a registry schema, which must be Avro without
// references.
func parseAvro(ss sr.Schema) (avro.Schema, error) {
	if ss.Type != sr.TypeAvro {
		return nil, fmt.Errorf("a %s schema, not Avro (format avro)", ss.Type)
	}
	if len(ss.References) > 0 {
		return nil, errors.New("schema references are not supported yet")
	}
	s, err := avro.ParseWithCache(ss.Schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("not a valid Avro schema: %w", err)
	}
	return s, nil
}

// fetch asks the registry for the schema of id (not cached: the caller
// keeps what it makes of it), remembering an id it does not know.
func (r *Registry) fetch(ctx context.Context, id int) (sr.Schema, error) {
	r.mu.Lock()
	at, unknown := r.unknown[id]
	r.mu.Unlock()
	if unknown && time.Since(at) < unknownTTL {
		return sr.Schema{}, &unknownID{id, r.url}
	}
	ss, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		if notFound(err) {
			r.mu.Lock()
			r.unknown[id] = time.Now()
			r.mu.Unlock()
			return sr.Schema{}, &unknownID{id, r.url}
		}
		return sr.Schema{}, r.unavailable(err, fmt.Sprintf("schema id %d", id))
	}
	r.mu.Lock()
	delete(r.unknown, id)
	r.mu.Unlock()
	return ss, nil
}

// latest asks the registry for subject's latest schema (not cached).
func (r *Registry) latest(ctx context.Context, subject string) (sr.SubjectSchema, error) {
	ss, err := r.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		if notFound(err) {
			return ss, fmt.Errorf("subject %s is not in the schema registry %s", subject, r.url)
		}
		return ss, r.unavailable(err, "subject "+subject)
	}
	return ss, nil
}

// version asks the registry for a version of subject, a schema's
// reference (not cached).
func (r *Registry) version(ctx context.Context, subject string, version int) (sr.Schema, error) {
	ss, err := r.cl.SchemaByVersion(ctx, subject, version)
	if err != nil {
		if notFound(err) {
			return sr.Schema{}, fmt.Errorf("version %d of subject %s is not in the schema registry %s", version, subject, r.url)
		}
		return sr.Schema{}, r.unavailable(err, fmt.Sprintf("subject %s version %d", subject, version))
	}
	return ss.Schema, nil
}
