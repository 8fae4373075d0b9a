package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
)

// Options configure the API.
type Options struct {
	Token string
	// AllowedHosts are the Host names (optionally host:port) a server
	// without a token answers besides loopback ones (--allowed-host).
	AllowedHosts []string
	// MaxBody is the largest request body, as sent and decompressed
	// (0: DefaultMaxBody).
	MaxBody int64
	// MaxStreams caps the long-lived requests open at once (GET
	// /v1/queries/{name}/changes streams, POST /v1/checkpoints waits,
	// CPU profiles and traces); 0: DefaultMaxStreams.
	MaxStreams int
	// BodyTimeout bounds reading one request body (0: no bound).
	BodyTimeout time.Duration
	// SessionTTL is how long a console session (POST /v1/login) lasts
	// (0: DefaultSessionTTL).
	SessionTTL time.Duration
	Logger     *slog.Logger
	Web        fs.FS // the console's assets

	// streamDone, when set, is called after a stream gave its slot back
	// (tests).
	streamDone func()
	// now is the sessions' clock (tests; nil: time.Now).
	now func() time.Time
}

type server struct {
	e      *queries.Engine
	opts   Options
	log    *slog.Logger
	reg    *prometheus.Registry
	router *chi.Mux
	// streams holds a token per open stream (Options.MaxStreams).
	streams chan struct{}
	// sessions are the console's logins.
	sessions *sessions

	ingestRows    *prometheus.CounterVec
	ingestBytes   *prometheus.CounterVec
	ingestSeconds *prometheus.HistogramVec
}

// New returns the API's handler.
func New(e *queries.Engine, opts Options) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	s := &server{e: e, opts: opts, log: opts.Logger, reg: prometheus.NewRegistry(), streams: make(chan struct{}, opts.MaxStreams),
		sessions: newSessions(opts.SessionTTL, opts.now)}
	s.ingestRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamsql_ingest_rows_total",
		Help: "Rows acknowledged (durable) by POST /v1/tables/{table}/rows."}, []string{"table"})
	s.ingestBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamsql_ingest_bytes_total",
		Help: "Request body bytes of the rows acknowledged by POST /v1/tables/{table}/rows."}, []string{"table"})
	s.ingestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "streamsql_ingest_request_seconds",
		Help: "Time from an ingest request's arrival to its answer, by status code.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"code"})
	s.reg.MustRegister(newCollector(e), s.ingestRows, s.ingestBytes, s.ingestSeconds, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	r := chi.NewRouter()
	s.router = r
	r.Use(s.recoverer, s.secure, s.checkHost, s.crossOrigin)
	r.Get("/healthz", s.healthz)
	r.Post("/v1/login", s.login)
	r.Post("/v1/logout", s.logout)
	r.Group(func(r chi.Router) {
		r.Use(s.auth)
		r.Post("/v1/sql", s.sql)
		r.Post("/v1/tables/{table}/rows", s.ingest)
		r.Get("/v1/tables", s.tables)
		r.Get("/v1/tables/{table}", s.table)
		r.Get("/v1/queries", s.queries)
		r.Get("/v1/queries/{name}", s.query)
		r.Delete("/v1/queries/{name}", s.dropQuery)
		r.Post("/v1/queries/{name}/stop", s.stopQuery)
		r.Post("/v1/queries/{name}/resume", s.resumeQuery)
		r.Get("/v1/queries/{name}/checkpoints", s.queryCheckpoints)
		r.Get("/v1/queries/{name}/metrics", s.queryMetrics)
		r.Get("/v1/queries/{name}/results", s.results)
		r.With(s.longLived).Get("/v1/queries/{name}/changes", s.changes)
		r.With(s.longLived).Post("/v1/checkpoints", s.checkpoints)
		r.Get("/v1/examples", s.examples)
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
		// Profiles, behind the same token as the API; GET only (symbol
		// takes POST too: go tool pprof posts its addresses), as
		// docs/openapi.yaml says.
		r.Get("/debug/pprof/*", pprof.Index)
		r.Get("/debug/pprof/cmdline", pprof.Cmdline)
		r.With(s.longLived).Get("/debug/pprof/profile", pprof.Profile)
		r.Get("/debug/pprof/symbol", pprof.Symbol)
		r.Post("/debug/pprof/symbol", pprof.Symbol)
		r.With(s.longLived).Get("/debug/pprof/trace", pprof.Trace)
	})
	if opts.Web != nil {
		// The console's assets need no token: they hold no data, and the
		// console asks for the token itself (POST /v1/login).
		c := s.console(opts.Web)
		r.Get("/*", c)
		r.Head("/*", c)
	}
	r.NotFound(s.notRouted)
	r.MethodNotAllowed(s.notRouted)
	return r
}

// recoverer answers a request whose handler panicked (a broken invariant)
// with a 500 instead of a dropped connection, and logs the stack.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				problem(w, &queries.Error{Status: 500, Title: "internal error", Detail: fmt.Sprintf("internal error: %v (see the server log)", v), Statement: -1})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token != "" && !s.authorized(r) {
			problem(w, &queries.Error{Status: 401, Title: "unauthorized", Detail: "missing or wrong bearer token (Authorization: Bearer <token>)", Statement: -1})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token: "Authorization: Bearer
// <token>" (the scheme is case-insensitive, RFC 7235; a bare token or
// another scheme is refused) or, without an Authorization header, the
// console's session cookie (EventSource cannot send headers).
func (s *server) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, got, ok := strings.Cut(strings.TrimSpace(h), " ")
		return ok && strings.EqualFold(scheme, "Bearer") && tokenEqual(strings.TrimSpace(got), s.opts.Token)
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && s.sessions.valid(c.Value)
}

// problem writes an error as application/problem+json and returns its status.
func problem(w http.ResponseWriter, err error) int {
	var qe *queries.Error
	switch {
	case errors.As(err, &qe):
	case queries.IsDiskFull(err):
		qe = &queries.Error{Status: http.StatusInsufficientStorage, Title: "insufficient storage", Detail: err.Error(), Statement: -1}
	default:
		qe = &queries.Error{Status: 500, Title: "internal error", Detail: err.Error(), Statement: -1}
	}
	// A detail may quote a statement or a connection string (a syntax
	// error's "near" text, a driver's message).
	body := map[string]any{"status": qe.Status, "title": qe.Title, "detail": plan.RedactSecrets(qe.Detail)}
	if qe.Title == "" {
		body["title"] = http.StatusText(qe.Status)
	}
	if qe.Statement >= 0 {
		body["statement"] = qe.Statement
		if qe.Line > 0 {
			body["line"], body["column"] = qe.Line, qe.Column
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(qe.Status)
	json.NewEncoder(w).Encode(body)
	return qe.Status
}

// writeJSON writes v as JSON with the password of every connection
// string in it redacted (plan.RedactSecrets): a table's CREATE statement,
// a query's or a sink's error. Every answer but rows goes through here.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		problem(w, err)
		return
	}
	writeRaw(w, status, plan.RedactSecrets(string(b)))
}

// writeRows writes v, holding rows of results, as JSON as it is: values
// are the user's data, never redacted.
func writeRows(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		problem(w, err)
		return
	}
	writeRaw(w, status, string(b))
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body+"\n")
}

// readBody reads a request body up to lim (413 beyond; with
// Content-Encoding: gzip the limit is on the decompressed bytes too)
// within the body timeout (408 beyond), as a string: ingest decodes
// VARCHAR values as substrings of it and SQL is text, so a []byte would
// only be copied again. A declared length of up to maxPresize is allocated
// at once; beyond, memory follows the bytes that actually arrive, so a
// client cannot reserve the limit by claiming it. Only handlers behind
// the token read bodies, and /v1/login, with its own small limit.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, lim bodyLimit) (string, error) {
	const maxPresize = 4 << 20
	failed := false
	if s.opts.BodyTimeout > 0 {
		// The deadline is lifted once the body is in: a handler may wait
		// long after (a checkpoint, a sync) and the connection's next
		// request has its own header timeout. After a failed read it
		// stays, so the server does not wait for the rest of the body
		// before closing the connection either.
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) == nil {
			defer func() {
				if !failed {
					rc.SetReadDeadline(time.Time{})
				}
			}()
		}
	}
	if r.ContentLength > lim.n {
		// Declared too large: refused without reading a byte.
		w.Header().Set("Connection", "close")
		failed = true
		return "", s.readError(&http.MaxBytesError{Limit: lim.n}, false, lim)
	}
	rd, done, err := s.body(w, r, lim)
	if err != nil {
		failed = true
		return "", err
	}
	defer done()
	var b strings.Builder
	if n := r.ContentLength; n > 0 && n <= lim.n && r.Header.Get("Content-Encoding") == "" {
		b.Grow(int(min(n, maxPresize)))
	}
	buf := copyBufs.Get().(*[]byte)
	_, err = io.CopyBuffer(&b, rd, *buf)
	copyBufs.Put(buf)
	if err != nil {
		// The rest of the body is not read: the connection cannot carry
		// another request (and the server must not wait for that rest).
		w.Header().Set("Connection", "close")
		failed = true
		return "", s.readError(err, r.Header.Get("Content-Encoding") != "", lim)
	}
	return b.String(), nil
}

// copyBufs are readBody's copy buffers (strings.Builder has no ReadFrom).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (s *server) sql(w http.ResponseWriter, r *http.Request) {
	if err := checkContentType(r, "SQL", sqlTypes...); err != nil {
		problem(w, err)
		return
	}
	body, err := s.readBody(w, r, s.maxBody())
	if err != nil {
		problem(w, err)
		return
	}
	text := body
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		// Strictly {"sql": "..."}: another member is a mistake to name, not
		// to ignore (encoding/json skips values without recursion).
		var req struct {
			SQL string `json:"sql"`
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		err := dec.Decode(&req)
		if err == nil && dec.More() {
			err = errors.New("data after the object")
		}
		if err != nil {
			problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: `body must be {"sql": "..."}: ` + err.Error(), Statement: -1})
			return
		}
		text = req.SQL
	}
	if strings.TrimSpace(text) == "" {
		problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "no SQL in the request body", Statement: -1})
		return
	}
	results, err := s.e.Exec(r.Context(), text)
	if err != nil {
		var qe *queries.Error
		if errors.As(err, &qe) && len(results) > 0 {
			qe.Detail = fmt.Sprintf("statement %d: %s (statements before it were applied)", qe.Statement, qe.Detail)
		} else if errors.As(err, &qe) && qe.Statement >= 0 {
			qe.Detail = fmt.Sprintf("statement %d: %s", qe.Statement, qe.Detail)
		}
		problem(w, err)
		return
	}
	// SHOW CREATE TABLE shows the statement with its connection string:
	// every result but a SELECT's rows is redacted.
	out := make([]json.RawMessage, len(results))
	for i, res := range results {
		b, err := json.Marshal(res)
		if err != nil {
			problem(w, err)
			return
		}
		if res.Kind != "select" {
			b = []byte(plan.RedactSecrets(string(b)))
		}
		out[i] = b
	}
	writeRows(w, 200, map[string]any{"results": out})
}

func (s *server) ingest(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code := 200
	defer func() { s.ingestSeconds.WithLabelValues(strconv.Itoa(code)).Observe(time.Since(start).Seconds()) }()
	if err := checkContentType(r, "rows (NDJSON or a JSON array)", rowsTypes...); err != nil {
		code = problem(w, err)
		return
	}
	body, err := s.readBody(w, r, s.maxBody())
	if err != nil {
		code = problem(w, err)
		return
	}
	table := param(r, "table")
	res, err := s.e.Ingest(r.Context(), table, body, r.Header.Get("Idempotency-Key"))
	if err != nil {
		code = problem(w, err)
		return
	}
	if !res.Duplicate {
		s.ingestRows.WithLabelValues(table).Add(float64(res.Accepted))
		s.ingestBytes.WithLabelValues(table).Add(float64(len(body)))
	}
	out := map[string]any{"accepted": res.Accepted, "first_offset": res.First, "last_offset": res.Last}
	if res.Duplicate {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, 200, out)
}

func (s *server) tables(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"tables": s.e.Tables()})
}

func (s *server) table(w http.ResponseWriter, r *http.Request) {
	t, err := s.e.Table(param(r, "table"))
	if err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, t)
}

func (s *server) queries(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"queries": s.e.Queries()})
}

func (s *server) query(w http.ResponseWriter, r *http.Request) {
	q, err := s.e.Query(param(r, "name"))
	if err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, q)
}

func (s *server) stopQuery(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	q, err := s.e.StopQuery(ctx, param(r, "name"))
	if err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, q)
}

func (s *server) resumeQuery(w http.ResponseWriter, r *http.Request) {
	q, err := s.e.ResumeQuery(param(r, "name"))
	if err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, q)
}

func (s *server) queryCheckpoints(w http.ResponseWriter, r *http.Request) {
	h, err := s.e.Checkpoints(param(r, "name"))
	if err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"checkpoints": h})
}

func (s *server) dropQuery(w http.ResponseWriter, r *http.Request) {
	name := param(r, "name")
	if err := s.e.DropQuery(name); err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"dropped": name})
}

func (s *server) results(w http.ResponseWriter, r *http.Request) {
	name := param(r, "name")
	consistency := r.URL.Query().Get("consistency")
	if consistency == "" {
		consistency = "committed"
	}
	if consistency != "committed" && consistency != "latest" {
		problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "consistency must be committed or latest, not " + consistency, Statement: -1})
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		accept := r.Header.Get("Accept")
		switch {
		case strings.Contains(accept, "application/x-ndjson"):
			format = "ndjson"
		case strings.Contains(accept, "text/csv"):
			format = "csv"
		default:
			format = "json"
		}
	}
	schema, rows, err := s.e.Results(name, consistency == "committed")
	if err != nil {
		problem(w, err)
		return
	}
	switch format {
	case "json":
		writeRows(w, 200, map[string]any{"columns": queries.ColumnNames(schema), "rows": queries.Objects(schema, rows)})
	case "ndjson":
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		for _, o := range queries.Objects(schema, rows) {
			enc.Encode(o)
		}
	case "csv":
		w.Header().Set("Content-Type", "text/csv")
		writeCSV(w, queries.ColumnNames(schema), rows)
	default:
		problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "format must be json, ndjson or csv, not " + format, Statement: -1})
	}
}

func (s *server) checkpoints(w http.ResponseWriter, r *http.Request) {
	timeout := 60 * time.Second
	if t := r.URL.Query().Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "timeout must be a duration such as 30s, not " + t, Statement: -1})
			return
		}
		timeout = d
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	only := r.URL.Query().Get("query")
	if only != "" {
		only = planner.LookupName(only)
	}
	cps, err := s.e.Checkpoint(ctx, only)
	var qe *queries.Error
	if errors.As(err, &qe) {
		problem(w, err)
		return
	}
	status := 200
	if err != nil {
		status = 503
		switch {
		case ctx.Err() != nil:
			status = 504
		case queries.IsDiskFull(err):
			status = http.StatusInsufficientStorage
		}
	}
	if cps == nil {
		cps = []queries.CheckpointInfo{}
	}
	body := map[string]any{"checkpoints": cps}
	if err != nil {
		body["error"] = err.Error()
	}
	writeJSON(w, status, body)
}

// heartbeatEvery is how often a quiet /changes stream gets a heartbeat.
const heartbeatEvery = 10 * time.Second

// changes streams a query's changes (docs/http-api.md): NDJSON, or SSE with
// Accept: text/event-stream; ?snapshot=true, ?from=<seq> (or
// Last-Event-ID: the last seq received), ?consistency=latest|committed.
// Each batch of records is flushed; the query never waits for the
// reader, which is told "lagged" and closed when it falls behind.
func (s *server) changes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := queries.ChangesOptions{Snapshot: q.Get("snapshot") == "true"}
	switch c := q.Get("consistency"); c {
	case "", "latest":
	case "committed":
		o.Committed = true
	default:
		problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "consistency must be latest or committed, not " + c, Statement: -1})
		return
	}
	if f := q.Get("from"); f != "" {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || n == 0 {
			problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "from must be a seq (a positive integer), not " + f, Statement: -1})
			return
		}
		o.From = n
	} else if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: "Last-Event-ID must be a seq, not " + id, Statement: -1})
			return
		}
		o.From = n + 1
	}
	stream, err := s.e.Changes(param(r, "name"), o)
	if err != nil {
		problem(w, err)
		return
	}
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 32<<10)
	for {
		recs, err := stream.Next(r.Context(), heartbeatEvery)
		if len(recs) == 0 && err == nil {
			recs = []queries.ChangeRecord{{Type: "heartbeat", JSON: []byte(`{"type":"heartbeat","time":"` + plan.FormatTime(time.Now().UnixMilli()) + `"}`)}}
		}
		for _, rec := range recs {
			if rec.Type == "error" {
				rec.JSON = []byte(plan.RedactSecrets(string(rec.JSON)))
			}
			if sse {
				if rec.Seq != 0 {
					fmt.Fprintf(bw, "id: %d\n", rec.Seq)
				}
				fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", rec.Type, rec.JSON)
			} else {
				bw.Write(rec.JSON)
				bw.WriteByte('\n')
			}
		}
		if bw.Flush() != nil || rc.Flush() != nil || err != nil {
			return
		}
	}
}

// healthz answers 200 "ok" while the engine can serve requests, else 503
// with what stops it (queries.Engine.Health): the catalog's lock held for
// long, a store that does not answer.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	if err := s.e.Health(); err != nil {
		problem(w, &queries.Error{Status: 503, Title: "engine cannot serve", Detail: err.Error(), Statement: -1})
		return
	}
	w.Write([]byte("ok\n"))
}
