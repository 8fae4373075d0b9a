package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/runtime/sink"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// Config are the server's settings that reach queries.
type Config struct {
	DataDir            string
	CheckpointInterval time.Duration // 0: checkpoints off
	EmitInterval       time.Duration
	IdempotencyWindow  time.Duration
	// DiskReserve is the free space kept on the data directory's file
	// system: ingest is refused (507) once an append would leave less,
	// checkpoints and catalog writes once less than half of it would be
	// left (state.Space). 0: state.DefaultDiskReserve; negative: no checks.
	DiskReserve int64
	// Limits bound ingest rows (zero values: no row size limit, the
	// default nesting depth).
	Limits value.Limits
	Logger *slog.Logger
	// WrapSync wraps every sync of both stores (fault-injection tests).
	WrapSync func(state.SyncFunc) state.SyncFunc
	// Publisher makes external sinks' publishers (default: by ENGINE;
	// tests put fakes here).
	Publisher func(sink.Spec) (sink.Publisher, error)
	// SampleInterval is how often the metrics sampler records every query
	// (0: SampleInterval); NoSampler runs no sampler goroutine (tests
	// call SampleMetrics themselves).
	SampleInterval time.Duration
	NoSampler      bool
	// StallTimeout: a query task that works on one message for longer,
	// without waiting for input or output, fails its query (0: the
	// runtime's default; negative: never).
	StallTimeout time.Duration
	// SinkLimits bound every external sink's pending journal and the
	// waits between its attempts (zero fields: the runtime's defaults;
	// tests make them small).
	SinkLimits runtime.SinkLimits
	// ChangeLogSize is how many records each query's change log of
	// /changes keeps (0: runtime.DefaultChangeLogSize).
	ChangeLogSize int
	// FilePollInterval is how often side input files (ENGINE=file with a
	// PRIMARY KEY) are looked at for changes (0: DefaultFilePollInterval;
	// negative: never, tests call pollSideFiles).
	FilePollInterval time.Duration
	// MaintainTicks, when set, runs the maintenance loop (GC, log
	// truncation) at each value received instead of every
	// MaintainInterval (tests).
	MaintainTicks <-chan time.Time
}

// DefaultStallTimeout is Config.StallTimeout's default.
const DefaultStallTimeout = runtime.DefaultStallTimeout

// Engine is the catalog and the running queries.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	meta  *state.Meta
	store state.Versioned

	// mu guards the catalog (tables, views). Nobody waits for a job, an
	// external system or a long planning while holding it (catalog.go):
	// it is held for map updates and catalog writes only.
	mu     sync.RWMutex
	tables map[string]*plan.TableDef
	views  map[string]*View
	// holder is who holds mu for writing (lock, /healthz).
	holder atomic.Pointer[lockHolder]
	// retiring counts dropped queries whose jobs had not stopped when the
	// drop answered: their state goes once they have (retire); closing
	// tells them the engine is closing (the next start's sweep does it).
	retiring sync.WaitGroup
	closing  chan struct{}
	// health is the look at the stores in flight (Health).
	health health

	stopBg func() // stops the maintenance loop
	// side inputs' pollers (filetables.go): what each file was last seen
	// as, and its error (both by table id, under sideMu)
	stopSide func()
	sideMu   sync.Mutex
	sideSeen map[uint64]sideSeen
	sideErr  map[uint64]string
	// samples keep the console's charts (metrics.go); stopSampler stops
	// their goroutine.
	samples     *sampler
	stopSampler func()
	// instance identifies this data directory in external sinks' progress
	// records (sinkID), so a new data directory never matches an old one's.
	instance string
	// lock holds the data directory (Open; nil for OpenWith).
	lock *dirLock
	// space guards the data directory's free space (nil for OpenWith).
	space *state.Space
	// pulls counts the pull queries run (PullsRun).
	pulls atomic.Int64
}

// PullsRun is the number of pull queries (SELECT over a view's results)
// this engine has run: what a client that only prepares a statement
// (Prepare) must not add to.
func (e *Engine) PullsRun() int64 { return e.pulls.Load() }

// View is a continuous query whose results live in the results table.
type View struct {
	Record  viewRecord
	Graph   *plan.Graph
	Job     *runtime.Job // nil when stopped or not startable
	Results *runtime.Results
	// StartErr says why the view could not be started at boot.
	StartErr error

	// stopping is the job of a stopped query that had not returned when
	// the stop answered: it is not resumed before it has.
	stopping *runtime.Job

	explainOnce sync.Once
	explain     string
}

// Explain is the query's plan as EXPLAIN shows it, rendered once.
func (v *View) Explain() string {
	v.explainOnce.Do(func() { v.explain = v.Graph.Explain() })
	return v.explain
}

// viewRecord is a view as stored in the catalog: enough to plan it again.
type viewRecord struct {
	Name string          `json:"name"`
	ID   uint64          `json:"id"`
	SQL  string          `json:"sql"`
	Set  []parser.SetVar `json:"set,omitempty"`
	// Dialect is how SQL reads (the PostgreSQL wire protocol's standard
	// strings and quoted identifiers); empty: streamsql's own.
	Dialect      parser.Dialect   `json:"dialect,omitempty"`
	StartOffsets map[string]int64 `json:"start_offsets,omitempty"`
	Created      time.Time        `json:"created"`
	// Stopped: POST /v1/queries/{name}/stop took a final checkpoint; the
	// query stays stopped across restarts until resumed.
	Stopped bool `json:"stopped,omitempty"`
	// Reads are the tables and views named in its FROM clauses.
	Reads []string `json:"reads,omitempty"`
	// Sink is the sink table of an INSERT INTO ... SELECT query (named
	// after it); empty for a view.
	Sink string `json:"sink,omitempty"`
}

const (
	tablePrefix = "table/"
	viewPrefix  = "view/"
)

// Open opens the stores under cfg.DataDir, loads the catalog, starts
// every view's query and the maintenance loop (GC, log truncation).
func Open(cfg Config) (*Engine, error) {
	if err := checkIntervals(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	reserve := cfg.DiskReserve
	if reserve == 0 {
		reserve = state.DefaultDiskReserve
	}
	space := state.NewSpace(reserve)
	if err := space.CheckOpen(cfg.DataDir); err != nil {
		lock.release()
		return nil, err
	}
	meta, err := state.OpenMeta(filepath.Join(cfg.DataDir, "meta"), state.MetaOptions{IdempotencyWindow: cfg.IdempotencyWindow, WrapSync: cfg.WrapSync, Space: space})
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("open meta store: %w", err)
	}
	store, err := state.OpenVersionedWith(filepath.Join(cfg.DataDir, "state"), state.VersionedOptions{WrapSync: cfg.WrapSync, Space: space})
	if err != nil {
		meta.Close()
		lock.release()
		return nil, fmt.Errorf("open state store: %w", err)
	}
	e, err := OpenWith(cfg, meta, store)
	if e != nil {
		e.lock, e.space = lock, space
	}
	if err != nil {
		e.Close(context.Background())
		return nil, err
	}
	e.startMaintenance()
	e.startSidePolls()
	if !cfg.NoSampler {
		e.startSampler()
	}
	return e, nil
}

// checkIntervals refuses a checkpoint interval shorter than the emit
// interval (200 ms when unset): a checkpoint rides on a barrier, and
// barriers go out every emit interval, so it would silently be the emit
// interval.
func checkIntervals(cfg Config) error {
	emit := cfg.EmitInterval
	if emit <= 0 {
		emit = 200 * time.Millisecond
	}
	if cfg.CheckpointInterval > 0 && cfg.CheckpointInterval < emit {
		return fmt.Errorf("checkpoint interval %s is shorter than the emit interval %s: a checkpoint rides on a barrier, and barriers go out every emit interval; set --emit-interval to %s or less, or a longer --checkpoint-interval",
			cfg.CheckpointInterval, emit, cfg.CheckpointInterval)
	}
	return nil
}

// OpenWith runs an engine on given stores, without the maintenance loop
// (benchmarks). Close closes the stores.
func OpenWith(cfg Config, meta *state.Meta, store state.Versioned) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EmitInterval <= 0 {
		cfg.EmitInterval = 200 * time.Millisecond
	}
	if err := checkIntervals(cfg); err != nil {
		meta.Close()
		store.Close()
		return nil, err
	}
	if cfg.Publisher == nil {
		cfg.Publisher = publisherIn(FilesDir(cfg.DataDir))
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = SampleInterval
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, meta: meta, store: store, tables: map[string]*plan.TableDef{}, views: map[string]*View{},
		samples: newSampler(cfg.SampleInterval), closing: make(chan struct{}), sideSeen: map[uint64]sideSeen{}, sideErr: map[uint64]string{}}
	return e, e.load()
}

func (e *Engine) load() error {
	if err := e.loadInstance(); err != nil {
		return err
	}
	kvs, err := e.meta.ListCatalog(tablePrefix)
	if err != nil {
		return fmt.Errorf("load tables: %w", err)
	}
	for _, kv := range kvs {
		var def plan.TableDef
		if err := json.Unmarshal(kv.Value, &def); err != nil {
			return fmt.Errorf("catalog %s: %w", kv.Key, err)
		}
		e.tables[def.Name] = &def
	}
	if err := e.recoverSideVersions(); err != nil {
		return err
	}
	kvs, err = e.meta.ListCatalog(viewPrefix)
	if err != nil {
		return fmt.Errorf("load views: %w", err)
	}
	recs := make([]viewRecord, len(kvs))
	for i, kv := range kvs {
		if err := json.Unmarshal(kv.Value, &recs[i]); err != nil {
			return fmt.Errorf("catalog %s: %w", kv.Key, err)
		}
		// Every view's definition first: a view may read another view
		// that sorts after it, and planning reads the other's SQL.
		e.views[recs[i].Name] = &View{Record: recs[i]}
	}
	if err := e.checkStores(recs); err != nil {
		return err
	}
	for _, rec := range recs {
		var err error
		var v *View
		if rec.Stopped {
			v = &View{Record: rec}
			v.Graph, err = e.planView(rec)
			if err == nil && rec.Sink == "" {
				v.Results, err = runtime.OpenResults(e.store, rec.ID, v.Graph, runtime.WithChangeLogSize(e.cfg.ChangeLogSize))
			}
		} else {
			var g *plan.Graph
			if g, err = e.planView(rec); err == nil {
				v, err = e.startView(rec, g)
			}
		}
		if err != nil {
			// Keep the definition visible with its error rather than refuse to start.
			e.log.Error("view did not start", "view", rec.Name, "err", err)
			v = &View{Record: rec, StartErr: err}
		}
		e.views[rec.Name] = v
	}
	return nil
}

// Close stops every query and closes the stores.
// Every running query first takes a final checkpoint (bounded by ctx), so
// the next start resumes without replaying anything.
func (e *Engine) Close(ctx context.Context) {
	// The maintenance loop takes e.mu: stop it before taking it here, or
	// a tick during the final checkpoints waits for us while we wait for it.
	if e.stopBg != nil {
		e.stopBg()
		e.stopBg = nil
	}
	if e.stopSide != nil {
		e.stopSide()
		e.stopSide = nil
	}
	if e.stopSampler != nil {
		e.stopSampler()
		e.stopSampler = nil
	}
	e.wlock("close")
	defer e.wunlock()
	select {
	case <-e.closing:
		return // closed before
	default:
	}
	close(e.closing)
	var wg sync.WaitGroup
	for _, v := range e.views {
		if v.Job != nil {
			wg.Add(1)
			go func(v *View) {
				defer wg.Done()
				if err := v.Job.StopWithCheckpoint(ctx); err != nil {
					e.log.Warn("final checkpoint", "query", v.Record.Name, "err", err)
				}
			}(v)
		}
	}
	wg.Wait()
	e.retiring.Wait()
	if e.store != nil {
		e.store.Close()
	}
	if e.meta != nil {
		e.meta.Close()
	}
	e.lock.release()
}

// defaults are the query options before SET and hints.
func (e *Engine) defaults() plan.Options {
	return plan.Options{
		Parallelism:        1,
		CheckpointInterval: e.cfg.CheckpointInterval.Milliseconds(),
		EmitInterval:       e.cfg.EmitInterval.Milliseconds(),
	}
}

// planView plans a query from its record: a view (CREATE VIEW) or an
// INSERT INTO ... SELECT into a sink table. It takes e.mu for each
// catalog lookup: the caller must not hold it.
func (e *Engine) planView(rec viewRecord) (*plan.Graph, error) {
	return e.planWith(rec, e.planCatalog())
}

// planWith plans rec, reading the catalog through cat.
func (e *Engine) planWith(rec viewRecord, cat *planCatalog) (*plan.Graph, error) {
	if !rec.Dialect.Valid() {
		return nil, fmt.Errorf("query %s is written in SQL dialect %q, which this version of streamsql does not read", rec.Name, rec.Dialect)
	}
	stmts, err := rec.Dialect.Parse(rec.SQL)
	if err != nil {
		return nil, err
	}
	opts := e.defaults()
	if err := planner.ApplyOptions(&opts, rec.Set, "SET"); err != nil {
		return nil, err
	}
	switch s := stmts[0].Stmt.(type) {
	case *parser.CreateView:
		return planner.Query(s.Select, cat, opts, rec.Name, plan.SinkResults)
	case *parser.Insert:
		t, ok := cat.Table(s.Table)
		if !ok {
			return nil, &planner.Error{Status: 404, Name: s.Table, Msg: fmt.Sprintf("INSERT INTO %s: unknown table %s", s.Table, s.Table)}
		}
		return planner.Insert(s.Select, t, cat, opts)
	}
	return nil, fmt.Errorf("query %s: stored statement is neither CREATE VIEW nor INSERT", rec.Name)
}

// startView starts the job of rec, planned as g.
func (e *Engine) startView(rec viewRecord, g *plan.Graph) (*View, error) {
	var res *runtime.Results
	if rec.Sink == "" {
		res = runtime.NewResults(e.store, rec.ID, runtime.WithChangeLogSize(e.cfg.ChangeLogSize))
	}
	job, err := runtime.Start(g, e.deps(), runtime.StartOptions{QueryID: rec.ID, Name: rec.Name, StartOffsets: rec.StartOffsets, Results: res,
		SinkID: e.sinkID(rec), StallTimeout: e.cfg.StallTimeout, SinkLimits: e.cfg.SinkLimits})
	if err != nil {
		return nil, err
	}
	return &View{Record: rec, Graph: g, Job: job, Results: res}, nil
}

func (e *Engine) deps() runtime.Deps {
	return runtime.Deps{Store: e.store, Logger: e.log, Reader: e.newReader, Publisher: e.cfg.Publisher, Meta: e.meta}
}

// Error is a failed statement or request, with what the API needs to
// answer it (problem+json).
type Error struct {
	Status    int
	Title     string
	Detail    string
	Statement int // -1: not about a statement
	Line      int
	Column    int
	// Err is the cause, when the error has one (errors.Is sees through).
	Err error
}

func (e *Error) Error() string { return e.Detail }

func (e *Error) Unwrap() error { return e.Err }

// DiskSpace reports the free bytes on the data directory's file system
// and the reserve kept there (--disk-reserve); free is -1 when unknown or
// not checked.
func (e *Engine) DiskSpace() (free, reserve int64) {
	return e.space.Free(e.cfg.DataDir), e.space.Reserve()
}

// IsDiskFull reports whether err is a write refused for lack of disk space
// (or ENOSPC): the API answers it with 507.
func IsDiskFull(err error) bool { return state.IsDiskFull(err) }

// diskFull is the API error of a write refused for lack of disk space.
func diskFull(err error, format string, args ...any) *Error {
	return &Error{Status: 507, Title: statusTitle(507), Detail: fmt.Sprintf(format, args...) + ": " + err.Error(), Statement: -1, Err: err}
}

func stmtErr(status int, st *parser.Statement, format string, args ...any) *Error {
	return &Error{Status: status, Title: statusTitle(status), Detail: fmt.Sprintf(format, args...), Statement: st.Pos.Index, Line: st.Pos.Line, Column: st.Pos.Column}
}

func statusTitle(status int) string {
	switch status {
	case 400:
		return "malformed request"
	case 404:
		return "not found"
	case 409:
		return "conflict"
	case 413:
		return "request too large"
	case 422:
		return "cannot run this SQL"
	case 507:
		return "insufficient storage"
	}
	return "error"
}

// Result is one statement's outcome. Statements that answer with rows
// (SELECT, SHOW, DESCRIBE, EXPLAIN) set Columns; their JSON then always has
// "columns" and "rows", even when there are none.
type Result struct {
	Statement int
	Kind      string
	Name      string
	Columns   []string
	Rows      []Object
	// Types are the column types (a SELECT's, and the fixed ones of SHOW,
	// DESCRIBE and EXPLAIN: prepare.go) and Values a SELECT's rows as
	// values (a view's results), for clients that type their columns and
	// encode values themselves (pgwire); Values is nil for the other
	// results, whose Rows hold text and booleans. Not in JSON.
	Types  []plan.Type
	Values []plan.Row
}

// MarshalJSON writes {"statement", "kind", "name"[, "columns", "rows"]}.
func (r Result) MarshalJSON() ([]byte, error) {
	type base struct {
		Statement int    `json:"statement"`
		Kind      string `json:"kind"`
		Name      string `json:"name,omitempty"`
	}
	if r.Columns == nil {
		return json.Marshal(base{r.Statement, r.Kind, r.Name})
	}
	rows := r.Rows
	if rows == nil {
		rows = []Object{}
	}
	return json.Marshal(struct {
		base
		Columns []string `json:"columns"`
		Rows    []Object `json:"rows"`
	}{base{r.Statement, r.Kind, r.Name}, r.Columns, rows})
}

// ExecOptions are the settings of one ExecWith call beyond its text.
type ExecOptions struct {
	// Params are the values of PostgreSQL's placeholders $1, $2, ...
	// (pgwire's Bind); nil: the statements have none, and $1 is an error.
	// The planner binds them as constants (planner/params.go).
	Params []plan.Value
	// ParamTypes are the parameters' types as Prepare described them, so
	// that a NULL is a NULL of its type; nil: the values' kinds.
	ParamTypes []plan.Type
	// Set are session settings (pgwire's SET), applied before the
	// statements as a SET at the start of sql would be.
	Set []parser.SetVar
	// Dialect is how sql reads: pgwire's statements are PostgreSQL's
	// (standard strings, "quoted" identifiers); the zero value is
	// streamsql's own. A view keeps the dialect it was written in.
	Dialect parser.Dialect
}

// CheckSet checks session settings as SET checks them (ExecOptions.Set:
// pgwire's SET consistency), so a bad value is refused when it is set
// rather than at every statement after.
func (e *Engine) CheckSet(vars []parser.SetVar) error {
	opts := e.defaults()
	return planner.ApplyOptions(&opts, vars, "SET")
}

// Exec runs the statements of sql in order, stopping at the first failure:
// earlier statements stay applied. It returns the results so far and, on
// failure, an *Error naming the failing statement.
func (e *Engine) Exec(ctx context.Context, sql string) ([]Result, error) {
	return e.ExecWith(ctx, sql, ExecOptions{})
}

// ExecWith is Exec with parameters and session settings.
func (e *Engine) ExecWith(ctx context.Context, sql string, o ExecOptions) ([]Result, error) {
	stmts, perr := o.Dialect.Parse(sql)
	var results []Result
	set := append([]parser.SetVar(nil), o.Set...)
	var params *planner.Params
	if o.Params != nil {
		params = planner.ExecParams(o.Params, o.ParamTypes)
	}
	for i := range stmts {
		st := &stmts[i]
		r, err := e.exec(ctx, st, &set, params)
		if err != nil {
			return results, e.wrap(st, err)
		}
		r.Statement = st.Pos.Index
		results = append(results, r)
	}
	if perr != nil {
		return results, parseError(perr, len(stmts))
	}
	return results, nil
}

// parseError is the API error of parser.Parse's error; n statements
// parsed before it.
func parseError(err error, n int) *Error {
	var pe *parser.Error
	if errors.As(err, &pe) {
		status := pe.Kind.Status()
		return &Error{Status: status, Title: statusTitle(status), Detail: pe.Msg, Statement: pe.Statement, Line: pe.Line, Column: pe.Column}
	}
	return &Error{Status: 400, Title: statusTitle(400), Detail: err.Error(), Statement: n}
}

// wrap turns a planner or engine error into an *Error positioned at the
// name it is about.
func (e *Engine) wrap(st *parser.Statement, err error) error {
	var qe *Error
	if errors.As(err, &qe) {
		return qe
	}
	var pe *planner.Error
	if errors.As(err, &pe) {
		out := stmtErr(pe.Status, st, "%s", pe.Msg)
		if pe.Offset > 0 || pe.Name != "" {
			l, c := parser.LineColAt(st.Text, pe.Name)
			if pe.Offset > 0 {
				l, c = parser.LineCol(st.Text, pe.Offset-1)
			}
			if l > 0 {
				out.Line = st.Pos.Line + l - 1
				if l == 1 {
					out.Column = st.Pos.Column + c - 1
				} else {
					out.Column = c
				}
			}
		}
		return out
	}
	var parseErr *parser.Error
	if errors.As(err, &parseErr) {
		return stmtErr(422, st, "%s", parseErr.Msg)
	}
	if IsDiskFull(err) {
		// A catalog or sequence write refused for room: nothing was
		// written (state/space.go).
		out := stmtErr(507, st, "%v", err)
		out.Err = err
		return out
	}
	return stmtErr(500, st, "%v", err)
}

func (e *Engine) exec(ctx context.Context, st *parser.Statement, set *[]parser.SetVar, params *planner.Params) (Result, error) {
	if err := noStoredParams(st); err != nil {
		return Result{}, err
	}
	switch s := st.Stmt.(type) {
	case *parser.CreateTable:
		return e.createTable(s, st)
	case *parser.CreateView:
		return e.createView(s, st, *set)
	case *parser.Insert:
		return e.insert(ctx, s, st, *set)
	case *parser.Drop:
		return e.drop(s, st)
	case *parser.Set:
		opts := e.defaults()
		if err := planner.ApplyOptions(&opts, s.Vars, "SET"); err != nil {
			return Result{}, err
		}
		*set = append(*set, s.Vars...)
		return Result{Kind: "set"}, nil
	case *parser.Show:
		return e.show(s, st)
	case *parser.Describe:
		return e.describe(s, st)
	case *parser.Explain:
		return e.explain(s, st, *set, params)
	case *parser.Select:
		return e.pull(s, st, *set, params)
	}
	return Result{}, stmtErr(422, st, "unsupported statement")
}

// noStoredParams refuses parameters in a statement whose query is stored
// as text and runs continuously (CREATE VIEW, INSERT INTO ... SELECT, and
// EXPLAIN of them): the text must plan again after a restart, when there
// are no parameters; binding them into it would be rewriting it.
func noStoredParams(st *parser.Statement) error {
	if len(st.Params) == 0 {
		return nil
	}
	var what, query string
	switch s := st.Stmt.(type) {
	case *parser.CreateView:
		what, query = "CREATE VIEW", "the view's query"
	case *parser.Insert:
		what, query = "INSERT INTO ... SELECT", "the query"
	case *parser.Explain:
		switch {
		case s.View != nil:
			what, query = "EXPLAIN CREATE VIEW", "the view's query"
		case s.Insert != nil:
			what, query = "EXPLAIN INSERT INTO ... SELECT", "the query"
		}
	}
	if what == "" {
		return nil
	}
	p := st.Params[0]
	return &planner.Error{Status: 422, Name: fmt.Sprintf("$%d", p.N), Offset: p.Offset + 1,
		Msg: fmt.Sprintf("parameters ($%d) are not allowed in %s: %s is stored and runs continuously; write the value into the statement", p.N, what, query)}
}

func (e *Engine) createTable(s *parser.CreateTable, st *parser.Statement) (Result, error) {
	def, err := planner.Table(s, st.Text)
	if err != nil {
		return Result{}, err
	}
	if def.Engine == "nexmark" {
		kind, err := nexmark.ParseKind(def.Attrs["kind"])
		if err != nil {
			return Result{}, stmtErr(400, st, "ENGINE_ATTRIBUTE kind: %v", err)
		}
		if _, err := runtime.NexmarkColumns(kind, def.Columns); err != nil {
			return Result{}, &planner.Error{Status: 422, Msg: err.Error()}
		}
	}
	// Before any I/O (a registry, a file) for a table that will not be
	// created; asked again under the write lock below.
	e.mu.RLock()
	r, done, err := e.existingTable(s, st, def.Name)
	e.mu.RUnlock()
	if done {
		return r, err
	}
	if err := checkKafkaFormat(def); err != nil {
		return Result{}, stmtErr(422, st, "CREATE TABLE %s: %v", def.Name, err)
	}
	var side *sideVersion
	if def.Engine == "file" && !def.IsSink() {
		// The first version, valid since always (filetables.go).
		if side, err = e.readSideFile(def, plan.MinTime); err != nil {
			return Result{}, stmtErr(422, st, "CREATE TABLE %s: %v", def.Name, err)
		}
	}
	e.wlock("CREATE TABLE " + def.Name)
	defer e.wunlock()
	if r, done, err := e.existingTable(s, st, def.Name); done {
		return r, err
	}
	if _, ok := e.views[def.Name]; ok {
		return Result{}, stmtErr(409, st, "%s is already a view", def.Name)
	}
	id, err := e.meta.NextSeq("table")
	if err != nil {
		return Result{}, err
	}
	def.ID = id
	b, _ := json.Marshal(def)
	if err := e.meta.PutCatalog(tablePrefix+def.Name, b); err != nil {
		return Result{}, err
	}
	e.tables[def.Name] = def
	if side != nil {
		if err := e.applySideVersion(context.Background(), def, side); err != nil {
			e.log.Error("side input: logging its first version failed; retrying at the next poll", "table", def.Name, "err", err)
		}
	}
	return Result{Kind: "create_table", Name: def.Name}, nil
}

// existingTable is CREATE TABLE's answer when a table named name exists
// (done): nothing for IF NOT EXISTS, else 409. The caller holds e.mu.
func (e *Engine) existingTable(s *parser.CreateTable, st *parser.Statement, name string) (r Result, done bool, err error) {
	if _, ok := e.tables[name]; !ok {
		return Result{}, false, nil
	}
	if s.IfNotExists {
		return Result{Kind: "create_table", Name: name}, true, nil
	}
	return Result{}, true, stmtErr(409, st, "table %s already exists", name)
}

func (e *Engine) createView(s *parser.CreateView, st *parser.Statement, set []parser.SetVar) (Result, error) {
	if err := planner.CheckName("view", s.Name); err != nil {
		return Result{}, err
	}
	if err := planner.CheckAliases(s.Select); err != nil {
		return Result{}, err
	}
	rec := viewRecord{Name: s.Name, SQL: st.Text, Dialect: st.Dialect, Set: set, Created: time.Now().UTC(), StartOffsets: map[string]int64{}, Reads: fromNames(s.Select)}
	check := func() error {
		if _, ok := e.tables[s.Name]; ok {
			return stmtErr(409, st, "%s is already a table", s.Name)
		}
		if _, exists := e.views[s.Name]; exists && !s.OrReplace {
			return stmtErr(409, st, "view %s already exists (use CREATE OR REPLACE VIEW to start it over)", s.Name)
		}
		return nil
	}
	// Refuse what is refused anyway before planning (which may take long).
	e.mu.RLock()
	err := check()
	e.mu.RUnlock()
	if err != nil {
		return Result{}, err
	}
	for _, r := range rec.Reads {
		if r == s.Name {
			return Result{}, stmtErr(422, st, "view %s cannot read itself", s.Name)
		}
	}
	// Planned before anything changes, so a bad query leaves the old one running.
	old, err := e.create("CREATE VIEW "+s.Name, &rec, check, nil)
	if err != nil {
		return Result{}, err
	}
	if old != nil {
		e.retire(old)
	}
	return Result{Kind: "create_view", Name: rec.Name}, nil
}

// create plans and starts a new query from rec (CREATE VIEW, INSERT
// INTO): planned outside the lock, prepared (if prepare is not nil: a look
// at an external system), then under it checked again (check), given its
// start offsets and a new id, stored and started. It returns the query of
// the same name it replaced, for the caller to retire.
func (e *Engine) create(op string, rec *viewRecord, check func() error, prepare func(*plan.Graph) error) (*View, error) {
	var old *View
	err := e.planned(op, *rec, prepare, func(g *plan.Graph) error {
		if err := check(); err != nil {
			return err
		}
		if err := e.startOffsets(g, rec); err != nil {
			return err
		}
		id, err := e.meta.NextSeq("query")
		if err != nil {
			return err
		}
		rec.ID = id
		prev := e.views[rec.Name]
		if prev != nil {
			// The replaced query's data goes once its job has stopped
			// (retire), or at the next start after a crash.
			if err := e.meta.MarkDropped(state.DroppedQuery, prev.Record.ID); err != nil {
				return err
			}
		}
		if err := e.register(*rec, g); err != nil {
			if prev != nil {
				e.meta.ClearDropped(state.DroppedQuery, prev.Record.ID)
			}
			return err
		}
		old = prev
		if prev != nil {
			e.logQuery("query replaced", *rec, "replaced_id", prev.Record.ID)
		} else {
			e.logQuery("query created", *rec)
		}
		return nil
	})
	return old, err
}

// logQuery logs a query's lifecycle event msg with its name, id and, for
// an INSERT INTO ... SELECT, its sink table, then args (no SQL: it may
// quote what should not be in a log).
func (e *Engine) logQuery(msg string, rec viewRecord, args ...any) {
	attrs := []any{"query", rec.Name, "id", rec.ID}
	if rec.Sink != "" {
		attrs = append(attrs, "sink", rec.Sink)
	}
	e.log.Info(msg, append(attrs, args...)...)
}

// register stores a new query's record (replacing one of the same name)
// and starts it, planned as g; if it cannot start, the record goes again
// (the one it replaced is the caller's to restore or retire). The caller
// holds mu.
func (e *Engine) register(rec viewRecord, g *plan.Graph) error {
	prev, hadPrev := e.views[rec.Name]
	if err := e.putView(rec); err != nil {
		return err
	}
	v, err := e.startView(rec, g)
	if err != nil {
		if hadPrev {
			if perr := e.putView(prev.Record); perr != nil {
				e.log.Error("restore the record of the query a failed CREATE OR REPLACE replaced", "query", rec.Name, "err", perr)
			}
		} else {
			e.meta.DeleteCatalog(viewPrefix + rec.Name)
		}
		return err
	}
	e.views[rec.Name] = v
	return nil
}

// startOffsets records where a new query starts reading each HTTP table:
// earliest, every retained row; latest, only new ones.
func (e *Engine) startOffsets(g *plan.Graph, rec *viewRecord) error {
	for _, v := range g.Vertices {
		for _, op := range v.Ops {
			if src, ok := op.(*plan.Source); ok && (src.Engine == "http" || src.Engine == "file") {
				l, err := e.meta.Log(src.TableID)
				if err != nil {
					return err
				}
				rec.StartOffsets[src.Table] = l.Start()
				if src.StartLatest {
					rec.StartOffsets[src.Table] = l.End()
				}
			}
		}
	}
	return nil
}

// allIn reports whether every name is in set.
func allIn(names, set []string) bool {
	for _, n := range names {
		if !slices.Contains(set, n) {
			return false
		}
	}
	return true
}

// putView persists a view's record (caller holds mu).
func (e *Engine) putView(rec viewRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return e.meta.PutCatalog(viewPrefix+rec.Name, b)
}

// dropWait is how long a drop waits for the query's job to stop before
// it answers; a job still busy then is left to stop on its own (retire).
const dropWait = 2 * time.Second

// retire stops the job of a query that has left the catalog and deletes
// its state, results and sink write-ahead log. It runs without e.mu: a
// job whose task is stuck in one message (it cannot be interrupted) does
// not hold up anybody; it is left to end on its own, and its state is
// deleted once it has, or, if the process ends first, by the sweep of
// orphans at the next start.
func (e *Engine) retire(v *View) {
	if v.Job == nil {
		e.dropState(v)
		return
	}
	if err := v.Job.StopWithin(dropWait); err == nil {
		e.dropState(v)
		return
	} else {
		e.log.Warn("dropped query still stopping; its state is deleted once it has", "query", v.Record.Name, "err", err)
	}
	e.retiring.Add(1)
	go func() {
		defer e.retiring.Done()
		select {
		case <-v.Job.Stopped():
			e.dropState(v)
		case <-e.closing:
		}
	}()
}

// dropState deletes a dropped query's state and results, and its sink's
// write-ahead log, then its tombstone (unregisterQuery): what a failure
// or a crash leaves is removed at the next start (removeOrphans).
func (e *Engine) dropState(v *View) {
	id := v.Record.ID
	if err := e.dropQueryData(id); err != nil {
		e.log.Error("drop view state (retried at the next start)", "view", v.Record.Name, "err", err)
	} else if err := e.meta.ClearDropped(state.DroppedQuery, id); err != nil {
		e.log.Warn("drop view tombstone", "view", v.Record.Name, "err", err)
	}
}

// retireAll retires views at once, so that their waits overlap.
func (e *Engine) retireAll(views []*View) {
	var wg sync.WaitGroup
	for _, v := range views {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.retire(v)
		}()
	}
	wg.Wait()
}

func (e *Engine) drop(s *parser.Drop, st *parser.Statement) (Result, error) {
	var retired []*View
	var tables []*plan.TableDef
	defer func() {
		// After the lock: stopping jobs and deleting rows take time.
		e.retireAll(retired)
		for _, def := range tables {
			e.dropTableData(def)
		}
	}()
	e.wlock("DROP " + strings.Join(s.Names, ", "))
	defer e.wunlock()
	kind := "drop_table"
	if s.View {
		kind = "drop_view"
	}
	// Check every name before dropping anything: the statement is all or nothing.
	var drop []string
	for _, name := range s.Names {
		if s.View {
			if _, ok := e.views[name]; !ok {
				if _, isTable := e.tables[name]; isTable {
					return Result{}, stmtErr(409, st, "%s is a table: use DROP TABLE", name)
				}
				if s.IfExists {
					continue
				}
				return Result{}, stmtErr(404, st, "unknown view %s", name)
			}
			if e.views[name].Record.Sink != "" {
				return Result{}, stmtErr(409, st, "%s is the query writing sink table %s, not a view: drop it with DELETE /v1/queries/%s", name, name, name)
			}
			if users := e.readers(name); len(users) > 0 && !allIn(users, s.Names) {
				return Result{}, stmtErr(409, st, "view %s is read by %s; drop them first", name, strings.Join(users, ", "))
			}
			drop = append(drop, name)
			continue
		}
		if _, ok := e.tables[name]; !ok {
			if _, isView := e.views[name]; isView {
				return Result{}, stmtErr(409, st, "%s is a view: use DROP VIEW", name)
			}
			if s.IfExists {
				continue
			}
			return Result{}, stmtErr(404, st, "unknown table %s", name)
		}
		if users := e.readers(name); len(users) > 0 {
			return Result{}, stmtErr(409, st, "table %s is read by %s; drop them first", name, strings.Join(users, ", "))
		}
		if v, ok := e.views[name]; ok && v.Record.Sink == name {
			return Result{}, stmtErr(409, st, "table %s is written by query %s; drop it first (DELETE /v1/queries/%s)", name, name, name)
		}
		drop = append(drop, name)
	}
	for _, name := range drop {
		if s.View {
			v := e.views[name]
			if err := e.unregisterQuery(v); err != nil {
				return Result{}, err
			}
			retired = append(retired, v)
			continue
		}
		def := e.tables[name]
		if err := e.unregisterTable(def); err != nil {
			return Result{}, err
		}
		tables = append(tables, def)
	}
	return Result{Kind: kind, Name: strings.Join(s.Names, ",")}, nil
}

// fromNames lists the tables and views a SELECT's FROM clauses name:
// its subqueries', UNION ALL branches' and WITH queries' too, not the
// names of its WITH queries.
func fromNames(sel *parser.Select) []string { return readNames(sel, nil) }

// readNames is fromNames with ctes the WITH names in scope.
func readNames(sel *parser.Select, ctes map[string]bool) []string {
	var out []string
	if len(sel.With) > 0 {
		ctes = maps.Clone(ctes)
		if ctes == nil {
			ctes = map[string]bool{}
		}
		for _, c := range sel.With {
			out = append(out, readNames(c.Select, ctes)...) // it sees the ones before it
			ctes[c.Name] = true
		}
	}
	var walk func(r *parser.TableRef)
	walk = func(r *parser.TableRef) {
		switch {
		case r == nil:
		case r.Join != nil:
			walk(r.Join.Left)
			walk(r.Join.Right)
		case r.Subquery != nil:
			out = append(out, readNames(r.Subquery, ctes)...)
		case ctes[r.Name]:
		default:
			out = append(out, r.Name)
		}
	}
	walk(sel.From)
	for _, u := range sel.UnionAll {
		out = append(out, readNames(u, ctes)...)
	}
	return out
}

// readers lists the views that read table or view name (caller holds mu).
func (e *Engine) readers(table string) []string {
	var out []string
	for name, v := range e.views {
		if slices.Contains(v.Record.Reads, table) || readsTable(v, table) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// tableDef is a table's definition (nil if unknown).
func (e *Engine) tableDef(name string) *plan.TableDef {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.tables[name]
}

// readsTable reports whether view v's query has a source on table (views
// it reads are planned in, so their tables count too).
func readsTable(v *View, table string) bool {
	if v.Graph == nil {
		// Not plannable now: judge by the statement (conservative).
		return strings.Contains(strings.ToLower(v.Record.SQL), strings.ToLower(table))
	}
	for _, vx := range v.Graph.Vertices {
		for _, op := range vx.Ops {
			if src, ok := op.(*plan.Source); ok && src.Table == table {
				return true
			}
		}
	}
	return false
}

func (e *Engine) show(s *parser.Show, st *parser.Statement) (Result, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	switch s.Kind {
	case parser.ShowTables:
		schema := showTablesColumns()
		cols := ColumnNames(schema)
		var rows []Object
		for n, t := range e.tables {
			rows = append(rows, Object{cols, []any{n, "table", t.Engine}})
		}
		for n, v := range e.views {
			if v.Record.Sink == "" {
				rows = append(rows, Object{cols, []any{n, "view", "results"}})
			}
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Vals[0].(string) < rows[j].Vals[0].(string) })
		return Result{Kind: "show", Columns: cols, Types: ColumnTypes(schema), Rows: rows}, nil
	case parser.ShowCreateTable:
		t, ok := e.tables[s.Name]
		if !ok {
			return Result{}, stmtErr(404, st, "unknown table %s", s.Name)
		}
		return showCreate(s.Name, t.SQL), nil
	default:
		v, ok := e.views[s.Name]
		if !ok {
			return Result{}, stmtErr(404, st, "unknown view %s", s.Name)
		}
		return showCreate(s.Name, v.Record.SQL), nil
	}
}

func showCreate(name, sql string) Result {
	schema := showCreateColumns()
	cols := ColumnNames(schema)
	return Result{Kind: "show", Name: name, Columns: cols, Types: ColumnTypes(schema), Rows: []Object{{cols, []any{name, sql}}}}
}

// describe answers DESCRIBE (DESC, SHOW COLUMNS): the columns of a table
// or of a view's results, with "PRI" on those of the key: a table's
// PRIMARY KEY, a view's upsert key (window_start, window_end and the GROUP
// BY columns it selects; none for a view without aggregation, whose rows
// are keyed by a row id).
func (e *Engine) describe(s *parser.Describe, st *parser.Statement) (Result, error) {
	cols, key, err := e.columns(s.Name)
	if err != nil {
		var qe *Error
		if errors.As(err, &qe) {
			return Result{}, stmtErr(qe.Status, st, "%s", qe.Detail)
		}
		return Result{}, err
	}
	schema := describeColumns()
	names := ColumnNames(schema)
	rows := make([]Object, len(cols))
	for i, c := range cols {
		k := ""
		if key[i] {
			k = "PRI"
		}
		rows[i] = Object{names, []any{c.Name, c.Type.String(), !c.NotNull, k}}
	}
	return Result{Kind: "describe", Name: s.Name, Columns: names, Types: ColumnTypes(schema), Rows: rows}, nil
}

// Columns are the columns of table or view name (a view's results'), as
// DESCRIBE lists them: 404 for an unknown name, 409 for a view that is
// not running.
func (e *Engine) Columns(name string) (plan.Schema, error) {
	cols, _, err := e.columns(name)
	return cols, err
}

// columns are name's columns and which of them are its key.
func (e *Engine) columns(name string) (plan.Schema, map[int]bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	key := map[int]bool{}
	if t, ok := e.tables[name]; ok {
		for _, k := range t.PrimaryKey {
			key[t.Columns.Index(k)] = true
		}
		return t.Columns, key, nil
	}
	v, ok := e.views[name]
	if !ok {
		return nil, nil, &Error{Status: 404, Title: statusTitle(404), Detail: fmt.Sprintf("unknown table or view %s", name), Statement: -1}
	}
	if v.Graph == nil {
		return nil, nil, &Error{Status: 409, Title: statusTitle(409), Detail: fmt.Sprintf("view %s is not running: %s", name, orNoReason(v)), Statement: -1}
	}
	if v.Graph.Key != plan.KeyRowID {
		for _, o := range v.Graph.KeyOut {
			if o >= 0 {
				key[o] = true
			}
		}
	}
	return v.Graph.Out, key, nil
}

// explain answers EXPLAIN: of a query by name, the plan it runs (a table
// without one is described, as MySQL's EXPLAIN t is DESCRIBE t); of a
// statement, the plan planner.Explain gives it.
func (e *Engine) explain(s *parser.Explain, st *parser.Statement, set []parser.SetVar, params *planner.Params) (Result, error) {
	var text string
	if s.Name != "" {
		e.mu.RLock()
		v, isQuery := e.views[s.Name]
		_, isTable := e.tables[s.Name]
		e.mu.RUnlock()
		switch {
		case isQuery && v.Graph == nil:
			return Result{}, stmtErr(409, st, "query %s is not running: %s", s.Name, orNoReason(v))
		case isQuery:
			text = v.Explain()
		case isTable:
			return e.describe(&parser.Describe{Name: s.Name}, st)
		default:
			return Result{}, stmtErr(404, st, "unknown view %s (EXPLAIN name shows a view's or a sink query's plan; EXPLAIN SELECT ... the plan of a query)", s.Name)
		}
	} else {
		opts := e.defaults()
		if err := planner.ApplyOptions(&opts, set, "SET"); err != nil {
			return Result{}, err
		}
		var err error
		if text, err = planner.Explain(s, e.planCatalog(), opts, params); err != nil {
			return Result{}, err
		}
	}
	cols := explainColumns()
	return Result{Kind: "explain", Name: s.Name, Columns: ColumnNames(cols), Types: ColumnTypes(cols), Rows: []Object{{ColumnNames(cols), []any{text}}}}, nil
}

// orNoReason is why query v has no plan.
func orNoReason(v *View) string {
	if v.StartErr != nil {
		return v.StartErr.Error()
	}
	return "it has no plan"
}

// pull runs SELECT over a view's results, at the consistency set (SET
// consistency, SET_VAR(consistency=...); committed by default). A view
// without checkpoints has no committed rows: committed reads its latest
// ones, the only rows it has (GET .../results?consistency=committed
// answers none; docs/sql.md).
func (e *Engine) pull(s *parser.Select, st *parser.Statement, set []parser.SetVar, params *planner.Params) (Result, error) {
	q, v, err := e.pullPlan(s, st, set, params)
	if err != nil {
		return Result{}, err
	}
	name := q.View
	e.pulls.Add(1)
	committed := q.Consistency == plan.ConsistencyCommitted && v.Graph.Options.CheckpointInterval > 0
	rows, err := v.Results.Rows(committed)
	if err != nil {
		return Result{}, fmt.Errorf("pull query over view %s: read its %s results: %w", name, q.Consistency, err)
	}
	out, err := runPull(q, rows)
	if err != nil {
		return Result{}, stmtErr(422, st, "pull query over view %s: %v", name, err)
	}
	return Result{Kind: "select", Name: name, Columns: ColumnNames(q.Out), Rows: Objects(q.Out, out), Types: ColumnTypes(q.Out), Values: out}, nil
}

// pullPlan plans SELECT over a view's results, for pull to run or
// Prepare to describe, and finds the view.
func (e *Engine) pullPlan(s *parser.Select, st *parser.Statement, set []parser.SetVar, params *planner.Params) (*plan.PullQuery, *View, error) {
	if s.From == nil || s.From.Name == "" {
		return nil, nil, stmtErr(422, st, "a SELECT over a join or a subquery runs continuously: CREATE VIEW name AS SELECT ... and read its results; pull queries read one view")
	}
	e.mu.RLock()
	name := ""
	if s.From != nil {
		name = s.From.Name
	}
	v, isView := e.views[name]
	_, isTable := e.tables[name]
	e.mu.RUnlock()
	switch {
	case isTable && e.tableDef(name).IsSink():
		return nil, nil, stmtErr(422, st, "%s is a sink table (ENGINE=%s): its rows are in the external system", name, e.tableDef(name).Engine)
	case isTable && len(e.tableDef(name).PrimaryKey) > 0:
		return nil, nil, stmtErr(422, st, "%s is a PRIMARY KEY table (an upsert stream): read it through a join, FROM stream JOIN %s [AS OF TIMESTAMP stream.ts] ON ..., in a view", name, name)
	case isTable:
		return nil, nil, stmtErr(422, st, "%s is a table: a SELECT over a stream runs continuously; CREATE VIEW name AS SELECT ... and read its results", name)
	case !isView:
		// Positioned at the name (wrap).
		return nil, nil, &planner.Error{Status: 404, Name: name, Msg: fmt.Sprintf("unknown view %s", name)}
	case v.Graph == nil:
		return nil, nil, stmtErr(409, st, "view %s is not running: %s", name, orNoReason(v))
	}
	opts := e.defaults()
	if err := planner.ApplyOptions(&opts, set, "SET"); err != nil {
		return nil, nil, err
	}
	q, err := planner.Pull(s, &plan.ViewDef{Name: name, Out: v.Graph.Out}, opts, params)
	if err != nil {
		return nil, nil, err
	}
	return q, v, nil
}
