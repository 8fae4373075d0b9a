package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// ProgressTable is the name of the progress table in the sink's schema.
const ProgressTable = "streamsql_sink_progress"

const (
	connectTimeout = 10 * time.Second // unless the connection string says
	openTimeout    = 60 * time.Second // Open: connect, inspect, create
	readTimeout    = 30 * time.Second // Committed
	// A write's deadline: writeTimeout plus writeTimeoutPerRow per change
	// (50,000 rows: 65 s), far above what a healthy server needs.
	writeTimeout       = 60 * time.Second
	writeTimeoutPerRow = 100 * time.Microsecond
)

// Publisher writes a sink's changes to a PostgreSQL table.
type Publisher struct {
	spec   sink.Spec
	cfg    *pgx.ConnConfig
	schema string
	table  string
	create bool

	qTable    string // "schema"."table"
	qProgress string // "schema"."streamsql_sink_progress"

	conn *pgx.Conn
	cols []column // the sink's columns, with their PostgreSQL names (set by Open)
	sql  statements

	stageAt int // stageThreshold (tests and benchmarks change it)
	// The session's temporary table of staged writes exists
	// (stageMade), or is created by the transaction in progress.
	stageMade, stagePending bool
}

var _ sink.Publisher = (*Publisher)(nil)

// column is a sink column and the PostgreSQL column it is written to.
type column struct {
	name string // streamsql name
	pg   string // PostgreSQL name
	typ  plan.Type
	key  bool
	// numeric: a DOUBLE written to a numeric column. It is sent as text
	// (the shortest decimal that reads back as the same double) and cast
	// to numeric: the server's float8-to-numeric cast keeps only 15
	// significant digits.
	numeric bool
}

// New makes the publisher of the sink spec. It does not connect (Open
// does). Its errors are permanent.
func New(spec sink.Spec) (*Publisher, error) {
	cfg, err := pgx.ParseConfig(spec.Connection)
	if err != nil {
		// pgx's message may quote the connection string (a password):
		// keep only its outline.
		return nil, sink.Permanent("sink table %s: bad PostgreSQL connection string: %s", spec.Table, redact(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	for k := range cfg.RuntimeParams {
		if strings.EqualFold(k, "timezone") {
			delete(cfg.RuntimeParams, k)
		}
	}
	// timestamptz -> timestamp conversions and comparisons are in UTC.
	cfg.RuntimeParams["timezone"] = "UTC"
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "streamsql"
	}
	if _, ok := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		// A committer that vanished mid-transaction (a network
		// partition) does not hold its locks for long.
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = "60000"
	}

	p := &Publisher{spec: spec, cfg: cfg, schema: "public", table: spec.Table, stageAt: stageThreshold}
	if v, ok := spec.Attrs["schema"]; ok {
		if v == "" {
			return nil, sink.Permanent("sink table %s: \"schema\" is empty", spec.Table)
		}
		p.schema = v
	}
	if v, ok := spec.Attrs["table"]; ok {
		if v == "" {
			return nil, sink.Permanent("sink table %s: \"table\" is empty", spec.Table)
		}
		p.table = v
	}
	switch v := strings.ToLower(spec.Attrs["create_table"]); v {
	case "", "false":
	case "true":
		p.create = true
	default:
		return nil, sink.Permanent("sink table %s: \"create_table\" is %q, want true or false", spec.Table, spec.Attrs["create_table"])
	}
	if err := spec.CheckKey("a PostgreSQL sink upserts by key"); err != nil {
		return nil, err
	}
	for _, c := range spec.Columns {
		if pgType(c.Type) == "" {
			return nil, sink.Permanent("sink table %s: column %s has type %s, which a PostgreSQL sink cannot write", spec.Table, c.Name, c.Type)
		}
	}
	if spec.ExactlyOnce && spec.SinkID == "" {
		return nil, sink.Permanent("sink table %s: exactly-once delivery needs a sink id", spec.Table)
	}
	p.qTable = pgx.Identifier{p.schema, p.table}.Sanitize()
	p.qProgress = pgx.Identifier{p.schema, ProgressTable}.Sanitize()
	return p, nil
}

// redact is err's message without the connection string pgx quotes in
// it (pgx masks passwords on a best-effort basis only).
func redact(err error) string {
	var pe *pgconn.ParseConfigError
	s := err.Error()
	if errors.As(err, &pe) {
		if i := strings.LastIndex(s, "`: "); i >= 0 {
			return "cannot parse it: " + s[i+3:]
		}
		return "cannot parse it"
	}
	return s
}

// where names the target in messages.
func (p *Publisher) where() string {
	return fmt.Sprintf("PostgreSQL table %s of sink table %s", p.qTable, p.spec.Table)
}

// Open connects (closing the previous connection, if any), checks the
// target table (creating it with create_table) and, for exactly-once
// delivery, the progress table (creating it when missing).
func (p *Publisher) Open(ctx context.Context) error {
	p.Close()
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return fmt.Errorf("%s: connect: %w", p.where(), err)
	}
	cols, err := p.prepareTarget(ctx, conn)
	if err == nil && p.spec.ExactlyOnce {
		err = p.prepareProgress(ctx, conn)
	}
	if err != nil {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(cctx)
		ccancel()
		return err
	}
	p.conn, p.cols = conn, cols
	p.sql = buildStatements(p.qTable, p.qProgress, cols, p.spec.PrimaryKey)
	return nil
}

// ensureOpen opens when there is no healthy connection (after an error,
// when the caller retries without calling Open).
func (p *Publisher) ensureOpen(ctx context.Context) error {
	if p.conn != nil && !p.conn.IsClosed() {
		return nil
	}
	return p.Open(ctx)
}

// Close closes the connection (the publisher can be opened again).
func (p *Publisher) Close() {
	if p.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	p.conn.Close(ctx)
	cancel()
	p.conn, p.stageMade = nil, false
}

// Committed returns the largest epoch with a progress row of this sink
// (0: none, or no progress table yet).
func (p *Publisher) Committed(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := p.ensureOpen(ctx); err != nil {
		return 0, err
	}
	var last *int64
	err := p.conn.QueryRow(ctx, p.sql.committed, p.spec.SinkID).Scan(&last)
	if err != nil {
		if pgCode(err) == "42P01" { // undefined_table
			return 0, nil
		}
		p.Close()
		return 0, fmt.Errorf("%s: read progress from %s: %w", p.where(), p.qProgress, err)
	}
	if last == nil || *last < 0 {
		return 0, nil
	}
	return uint64(*last), nil
}

// pgCode is the SQLSTATE of a server error (or "").
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// dataError reports whether err is the server refusing the data itself
// (classes 21, 22 and 23: cardinality, data exception, integrity
// constraint violation), which the same epoch would get again.
func dataError(err error) bool {
	c := pgCode(err)
	return len(c) == 5 && (c[:2] == "21" || c[:2] == "22" || c[:2] == "23")
}

// definitionError reports whether err, from inspecting or creating a
// table, comes from its definition or the sink's settings (classes 42
// and 3F: a missing schema, no privilege, a bad name) rather than from
// the server's condition.
func definitionError(err error) bool {
	c := pgCode(err)
	return len(c) == 5 && (c[:2] == "42" || c[:2] == "3F" || c[:2] == "22" || c[:2] == "23")
}
