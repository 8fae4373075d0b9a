package e2e

// The harness: the server binary, server processes, and one helper per API
// call. Helpers take the calling test's t and fail it (Fatal) on transport
// errors and unexpected statuses, so scenarios read as plain sequences.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/kafkatest"
	"github.com/streamsql/streamsql/internal/storetest"
)

const (
	startTimeout = 30 * time.Second // process start until /healthz answers 200
	readyTimeout = 30 * time.Second // queries reaching state "running"
	killTimeout  = 10 * time.Second // SIGKILL until the process is reaped
	pollInterval = 50 * time.Millisecond
	// requestTimeout bounds every API call; POST /v1/checkpoints waits up to
	// 60s on the server side.
	requestTimeout = 2 * time.Minute
	logTailBytes   = 64 << 10
)

var (
	binDir    string // removed by TestMain
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "streamsql-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	closeSharedPG()
	kafkatest.Cleanup()
	storetest.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverBinary returns the server binary: $STREAMSQL_BIN, or ./cmd/streamsql
// built once per test run (on first use, so the oracle's own tests run
// without it).
func serverBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("STREAMSQL_BIN"); p != "" {
			binPath, buildErr = filepath.Abs(p)
			return
		}
		out := filepath.Join(binDir, "streamsql")
		cmd := exec.Command("go", "build", "-o", out, "./cmd/streamsql")
		cmd.Dir = ".." // the module root
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/streamsql: %v\n%s", err, b)
			return
		}
		binPath = out
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is one streamsql server process over a data directory that
// outlives it: kill and start again to restart.
type server struct {
	bin     string
	dataDir string
	flags   []string // beyond --addr, --data and --checkpoint-interval
	// env is added to the environment of the next start ("NAME=value"): set
	// it between starts to arm a fault point for one run only.
	env     []string
	logPath string
	log     *os.File // the process's stdout and stderr, across restarts
	client  *http.Client

	// mu guards base, cmd and exited against goroutines other than the
	// test's (a poster calling try while the test kills and restarts); the
	// test's goroutine, the only writer, reads them without it.
	mu     sync.Mutex
	base   string // http://127.0.0.1:port of the running process
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been reaped
	starts int
	// logStart is the log file's size when the current (or last) process
	// started: its output is what follows.
	logStart int64
}

// startServer starts a server on a fresh data directory with
// `serve --addr 127.0.0.1:PORT --data DIR --checkpoint-interval 1s` plus
// flags, and waits until /healthz answers 200. The process is killed when
// the test ends; if the test failed its log is printed.
func startServer(t testing.TB, flags ...string) *server {
	t.Helper()
	return startServerEnv(t, nil, flags...)
}

// startServerEnv is startServer with env added to the process's
// environment, for this start and the next ones until s.env changes.
func startServerEnv(t testing.TB, env []string, flags ...string) *server {
	t.Helper()
	s := newServer(t, flags...)
	s.env = env
	s.start(t)
	return s
}

// newServer prepares a server on a fresh data directory without starting
// it; the process is killed when the test ends, and its log printed if the
// test failed.
func newServer(t testing.TB, flags ...string) *server {
	t.Helper()
	bin := serverBinary(t)
	dir := t.TempDir() // registered first, so removed after the kill below
	s := &server{
		bin:     bin,
		dataDir: filepath.Join(dir, "data"),
		flags:   flags,
		logPath: filepath.Join(dir, "server.log"),
		client:  &http.Client{Timeout: requestTimeout},
	}
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	s.log = f
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("server log %s (last %d KiB):\n%s", s.logPath, logTailBytes>>10, tailFile(s.logPath, logTailBytes))
		}
		s.log.Close()
	})
	return s
}

// start runs the server on the same data directory, on a new free port, and
// waits until /healthz answers 200.
func (s *server) start(t testing.TB) {
	t.Helper()
	s.launch(t)
	s.awaitStart(t)
}

// awaitStart waits until the process launch started answers /healthz
// (200), failing t with its log if it exits first.
func (s *server) awaitStart(t testing.TB) {
	t.Helper()
	if !s.waitHealthy(t) {
		ps := s.cmd.ProcessState
		s.setCmd(nil, nil, s.base)
		t.Fatalf("server exited (%v) before /healthz answered; log:\n%s", ps, tailFile(s.logPath, logTailBytes))
	}
}

// launch starts the server process (with s.env) on the same data
// directory and a new free port, without waiting for it to serve.
func (s *server) launch(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatal("e2e: server already running")
	}
	addr := freeAddr(t)
	s.starts++
	if fi, err := s.log.Stat(); err == nil {
		s.logStart = fi.Size()
	}
	fmt.Fprintf(s.log, "\n===== e2e: start #%d on %s at %s (env %q) =====\n", s.starts, addr, time.Now().Format(time.RFC3339Nano), s.env)
	args := append([]string{"serve", "--addr", addr, "--data", s.dataDir, "--checkpoint-interval", "1s"}, s.flags...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(inheritedEnv(), s.env...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	orphanProof(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.setCmd(cmd, exited, "http://"+addr)
}

// inheritedEnv is the test's environment without STREAMSQL_FAULT and
// STREAMSQL_SPIN: a fault point is armed only through server.env.
func inheritedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STREAMSQL_FAULT=") && !strings.HasPrefix(kv, "STREAMSQL_SPIN=") {
			env = append(env, kv)
		}
	}
	return env
}

func (s *server) setCmd(cmd *exec.Cmd, exited chan struct{}, base string) {
	s.mu.Lock()
	s.cmd, s.exited, s.base = cmd, exited, base
	s.mu.Unlock()
}

// waitHealthy waits until /healthz answers 200 (true) or the process exits
// (false; s.cmd stays set for waitExit). No 200 within startTimeout fails t.
func (s *server) waitHealthy(t testing.TB) bool {
	t.Helper()
	health := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-s.exited:
			return false
		default:
		}
		resp, err := health.Get(s.base + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz: no 200 within %v (last: %v)", startTimeout, describe(resp, err))
		}
		time.Sleep(pollInterval)
	}
}

// waitExit waits up to timeout for the process to end by itself, and
// returns how it ended; still running after timeout fails t.
func (s *server) waitExit(t testing.TB, timeout time.Duration) *os.ProcessState {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("e2e: waitExit: server not running")
	}
	select {
	case <-s.exited:
	case <-time.After(timeout):
		t.Fatalf("server still running %v later; it was expected to die by itself", timeout)
	}
	ps := s.cmd.ProcessState
	s.setCmd(nil, nil, s.base)
	return ps
}

// runLog is the server's output since its current (or last) process
// started.
func (s *server) runLog() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	if s.logStart <= int64(len(b)) {
		b = b[s.logStart:]
	}
	return string(b)
}

// kill sends SIGKILL and waits until the process is gone.
func (s *server) kill(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("e2e: kill: server not running")
	}
	fmt.Fprintf(s.log, "\n===== e2e: SIGKILL at %s =====\n", time.Now().Format(time.RFC3339Nano))
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("kill: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(killTimeout):
		t.Fatalf("server not gone %v after SIGKILL", killTimeout)
	}
	s.setCmd(nil, nil, s.base)
}

// restart kills the server with SIGKILL and starts it on the same data dir.
func (s *server) restart(t testing.TB) {
	t.Helper()
	s.kill(t)
	s.start(t)
}

// stop is kill for cleanup: no test to fail.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(killTimeout):
	}
	s.setCmd(nil, nil, s.base)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func tailFile(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

func describe(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// response is a complete HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string {
	return fmt.Sprintf("%d %s: %s", r.status, r.header.Get("Content-Type"), bytes.TrimSpace(r.body))
}

// do sends one request and reads the whole response. It fails t on
// transport errors, saying whether the server process died.
func (s *server) do(t testing.TB, method, path, contentType string, body []byte) response {
	t.Helper()
	return s.doHeader(t, method, path, contentType, nil, body)
}

// doHeader is do with extra request headers.
func (s *server) doHeader(t testing.TB, method, path, contentType string, header http.Header, body []byte) response {
	t.Helper()
	if s.cmd == nil {
		t.Fatalf("%s %s: server not running", method, path)
	}
	r, err := s.try(method, path, contentType, header, body)
	if err != nil {
		t.Fatalf("%v%s", err, s.exitNote())
	}
	return r
}

// errServerDown is try's error while no server process is running.
var errServerDown = errors.New("server not running")

// try sends one request to the server process running now and reads the
// whole response; unlike do it returns transport errors (and errServerDown)
// instead of failing a test, and is safe to call from any goroutine while
// the test kills and restarts the server.
func (s *server) try(method, path, contentType string, header http.Header, body []byte) (response, error) {
	s.mu.Lock()
	base, running := s.base, s.cmd != nil
	s.mu.Unlock()
	if !running {
		return response{}, fmt.Errorf("%s %s: %w", method, path, errServerDown)
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return response{}, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading the response: %w", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (s *server) exitNote() string {
	select {
	case <-s.exited:
		return fmt.Sprintf(" (the server process exited: %v)", s.cmd.ProcessState)
	default:
		return ""
	}
}

// decodeJSON decodes b into v, numbers as json.Number.
func decodeJSON(t testing.TB, what string, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: decoding %q: %v", what, truncate(b, 2000), err)
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// expectOK fails t unless r is a 200.
func expectOK(t testing.TB, what string, r response) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: got %s, want 200", what, truncate([]byte(r.String()), 4000))
	}
}

// columnList is a results "columns" array: names, or objects with a "name".
type columnList []string

func (c *columnList) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(columnList, 0, len(raw))
	for _, r := range raw {
		var name string
		if json.Unmarshal(r, &name) == nil {
			out = append(out, name)
			continue
		}
		var obj struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(r, &obj); err != nil || obj.Name == "" {
			return fmt.Errorf("column %s: neither a name nor an object with a name", r)
		}
		out = append(out, obj.Name)
	}
	*c = out
	return nil
}

// stmtResult is one entry of a POST /v1/sql response.
type stmtResult struct {
	Statement int              `json:"statement"`
	Kind      string           `json:"kind"`
	Name      string           `json:"name"`
	Columns   columnList       `json:"columns"`
	Rows      []map[string]any `json:"rows"`
}

// sql sends stmts (one or more statements, raw SQL) to POST /v1/sql and
// returns one result per statement; anything but 200 fails t.
func (s *server) sql(t testing.TB, stmts string) []stmtResult {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1/sql", "application/sql", []byte(stmts))
	if r.status != http.StatusOK {
		t.Fatalf("POST /v1/sql: got %s, want 200\nSQL:\n%s", r, stmts)
	}
	var out struct {
		Results []stmtResult `json:"results"`
	}
	decodeJSON(t, "POST /v1/sql", r.body, &out)
	return out.Results
}

// problem is an application/problem+json error.
type problem struct {
	httpStatus int
	Title      string
	Detail     string
	fields     map[string]any // the whole document
}

func (p problem) String() string {
	b, _ := json.Marshal(p.fields)
	return fmt.Sprintf("%d %s", p.httpStatus, b)
}

// intField returns an integer member such as "statement", "line", "column".
func (p problem) intField(name string) (int64, bool) {
	switch v := p.fields[name].(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		return n, err == nil
	case float64:
		return int64(v), v == float64(int64(v))
	}
	return 0, false
}

// mentions reports whether the title, the detail or any other string member
// contains the word s (an identifier: "ts" is not found in "rows"),
// case-insensitively.
func (p problem) mentions(s string) bool {
	re := regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(s) + `\b`)
	for _, v := range p.fields {
		if str, ok := v.(string); ok && re.MatchString(str) {
			return true
		}
	}
	return false
}

// parseProblem decodes an error response and checks its form: content type
// application/problem+json, a "status" member equal to the HTTP status, and
// a title or detail.
func parseProblem(t testing.TB, what string, r response) problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	p := problem{httpStatus: r.status}
	decodeJSON(t, what, r.body, &p.fields)
	p.Title, _ = p.fields["title"].(string)
	p.Detail, _ = p.fields["detail"].(string)
	if st, ok := p.intField("status"); !ok || st != int64(r.status) {
		t.Errorf("%s: problem status member %v, want %d", what, p.fields["status"], r.status)
	}
	if p.Title == "" && p.Detail == "" {
		t.Errorf("%s: problem without title or detail: %s", what, r.body)
	}
	return p
}

// sqlError sends stmts to POST /v1/sql expecting an error, and returns it.
// A 200 fails t.
func (s *server) sqlError(t testing.TB, stmts string) problem {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1/sql", "application/sql", []byte(stmts))
	if r.status == http.StatusOK {
		t.Fatalf("POST /v1/sql succeeded (%s), want an error\nSQL:\n%s", truncate(r.body, 2000), stmts)
	}
	return parseProblem(t, "POST /v1/sql", r)
}

// ingestAck is the answer to an accepted ingest request.
type ingestAck struct {
	Accepted    int64 `json:"accepted"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
}

func rowsPath(table string) string { return "/v1/tables/" + url.PathEscape(table) + "/rows" }

// ndjson encodes one JSON value per line.
func ndjson[T any](t testing.TB, items []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // Encode ends every value with a newline
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// postRows ingests rows as NDJSON and checks the acknowledgement: 200,
// accepted == len(rows), last_offset - first_offset + 1 == len(rows).
func (s *server) postRows(t testing.TB, table string, rows []Row) ingestAck {
	t.Helper()
	return s.ingest(t, table, "application/x-ndjson", ndjson(t, rows), len(rows))
}

// postRowsArray ingests rows as one JSON array.
func (s *server) postRowsArray(t testing.TB, table string, rows []Row) ingestAck {
	t.Helper()
	body, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	return s.ingest(t, table, "application/json", body, len(rows))
}

func (s *server) ingest(t testing.TB, table, contentType string, body []byte, n int) ingestAck {
	t.Helper()
	path := rowsPath(table)
	r := s.do(t, http.MethodPost, path, contentType, body)
	expectOK(t, "POST "+path, r)
	var ack ingestAck
	decodeJSON(t, "POST "+path, r.body, &ack)
	if ack.Accepted != int64(n) || ack.LastOffset-ack.FirstOffset+1 != int64(n) {
		t.Fatalf("POST %s of %d rows: acknowledged %+v", path, n, ack)
	}
	return ack
}

// postRaw posts body as is and returns the response, whatever its status.
func (s *server) postRaw(t testing.TB, path, contentType string, body []byte) response {
	t.Helper()
	return s.do(t, http.MethodPost, path, contentType, body)
}

// checkpointInfo is one entry of a POST /v1/checkpoints response.
type checkpointInfo struct {
	Query string          `json:"query"`
	ID    json.Number     `json:"id"`
	Sinks json.RawMessage `json:"sinks"`
}

// checkpoint triggers a checkpoint of every query and waits until it is
// complete; it covers every row acknowledged before the call.
func (s *server) checkpoint(t testing.TB) []checkpointInfo {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1/checkpoints", "", nil)
	expectOK(t, "POST /v1/checkpoints", r)
	var out struct {
		Checkpoints []checkpointInfo `json:"checkpoints"`
	}
	decodeJSON(t, "POST /v1/checkpoints", r.body, &out)
	return out.Checkpoints
}

// checkpointAndCheck triggers a checkpoint of every query and waits for
// it (checkpoint), then runs check for each of names as a subtest under
// stage, with the checkpoint reported for that query; a query the
// response does not mention is an error.
func (s *server) checkpointAndCheck(t *testing.T, stage string, names []string, check func(t *testing.T, name string, cp checkpointInfo)) {
	t.Helper()
	cps := map[string]checkpointInfo{}
	for _, c := range s.checkpoint(t) {
		cps[c.Query] = c
	}
	t.Run(stage, func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				cp, ok := cps[name]
				if !ok {
					t.Errorf("POST /v1/checkpoints reported no checkpoint of %s", name)
				}
				check(t, name, cp)
			})
		}
	})
}

// resultSet is a view's results.
type resultSet struct {
	Columns columnList       `json:"columns"`
	Rows    []map[string]any `json:"rows"`
}

// results reads a view's results as of the last completed checkpoint.
func (s *server) results(t testing.TB, view string) resultSet {
	t.Helper()
	path := "/v1/queries/" + url.PathEscape(view) + "/results?consistency=committed"
	r := s.do(t, http.MethodGet, path, "", nil)
	expectOK(t, "GET "+path, r)
	var rs resultSet
	decodeJSON(t, "GET "+path, r.body, &rs)
	return rs
}

// counters are a query's counters.
type counters struct {
	RowsIn     int64 `json:"rows_in"`
	RowsOut    int64 `json:"rows_out"`
	LateRows   int64 `json:"late_rows"`
	OutOfRange int64 `json:"out_of_range"`
}

// queryInfo is the part of GET /v1/queries/{name} the tests read; raw holds
// the whole document for messages.
type queryInfo struct {
	Name     string   `json:"name"`
	SQL      string   `json:"sql"`
	State    string   `json:"state"`
	Error    string   `json:"error"`
	Counters counters `json:"counters"`
	raw      map[string]any
}

// queryStatus returns GET /v1/queries/{name}'s status and, on 200, the query.
func (s *server) queryStatus(t testing.TB, name string) (int, queryInfo) {
	t.Helper()
	path := "/v1/queries/" + url.PathEscape(name)
	r := s.do(t, http.MethodGet, path, "", nil)
	var q queryInfo
	if r.status != http.StatusOK {
		return r.status, q
	}
	decodeJSON(t, "GET "+path, r.body, &q)
	decodeJSON(t, "GET "+path, r.body, &q.raw)
	return r.status, q
}

// query returns GET /v1/queries/{name}; anything but 200 fails t.
func (s *server) query(t testing.TB, name string) queryInfo {
	t.Helper()
	status, q := s.queryStatus(t, name)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/queries/%s: status %d, want 200", name, status)
	}
	return q
}

// status returns the status of GET path.
func (s *server) status(t testing.TB, path string) int {
	t.Helper()
	return s.do(t, http.MethodGet, path, "", nil).status
}

// waitRunning waits until every named query is in state "running"; a query
// in state "failed" fails t at once.
func (s *server) waitRunning(t testing.TB, names ...string) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for _, name := range names {
		for {
			status, q := s.queryStatus(t, name)
			if status == http.StatusOK && q.State == "running" {
				break
			}
			if q.State == "failed" {
				t.Fatalf("query %s failed: %v", name, q.raw["error"])
			}
			if time.Now().After(deadline) {
				t.Fatalf("query %s not running within %v: status %d, state %q", name, readyTimeout, status, q.State)
			}
			time.Sleep(pollInterval)
		}
	}
}

// table returns GET /v1/tables/{table}.
func (s *server) table(t testing.TB, table string) map[string]any {
	t.Helper()
	path := "/v1/tables/" + url.PathEscape(table)
	r := s.do(t, http.MethodGet, path, "", nil)
	expectOK(t, "GET "+path, r)
	var m map[string]any
	decodeJSON(t, "GET "+path, r.body, &m)
	return m
}

// endOffset returns the table's log end offset, if GET /v1/tables/{table}
// reports one as "end_offset" (or "log_end_offset"), at the top level or one
// object down.
func (s *server) endOffset(t testing.TB, table string) (int64, bool) {
	t.Helper()
	return findOffset(s.table(t, table), 1)
}

func findOffset(m map[string]any, depth int) (int64, bool) {
	for _, k := range []string{"end_offset", "log_end_offset"} {
		if n, ok := m[k].(json.Number); ok {
			if v, err := n.Int64(); err == nil {
				return v, true
			}
		}
	}
	if depth > 0 {
		for _, v := range m {
			if sub, ok := v.(map[string]any); ok {
				if off, ok := findOffset(sub, depth-1); ok {
					return off, true
				}
			}
		}
	}
	return 0, false
}

// postIdem posts an NDJSON body to table with an Idempotency-Key, from any
// goroutine (see try); it returns the response whatever its status.
func (s *server) postIdem(table, key string, body []byte) (response, error) {
	return s.try(http.MethodPost, rowsPath(table), "application/x-ndjson", http.Header{"Idempotency-Key": {key}}, body)
}

// replayed reports whether an ingest answer is the stored first answer to
// an earlier request with the same Idempotency-Key.
func (r response) replayed() bool { return r.header.Get("Idempotent-Replayed") == "true" }

// checkpointStat is one entry of GET /v1/queries/{name}/checkpoints.
type checkpointStat struct {
	ID         json.Number      `json:"id"`
	Status     string           `json:"status"`
	Error      string           `json:"error"`
	Started    string           `json:"started"`
	DurationMS int64            `json:"duration_ms"`
	Bytes      int64            `json:"bytes"`
	Offsets    map[string]int64 `json:"offsets"`
}

// checkpointHistory returns GET /v1/queries/{name}/checkpoints, newest
// first; anything but 200 fails t.
func (s *server) checkpointHistory(t testing.TB, name string) []checkpointStat {
	t.Helper()
	path := "/v1/queries/" + url.PathEscape(name) + "/checkpoints"
	r := s.do(t, http.MethodGet, path, "", nil)
	expectOK(t, "GET "+path, r)
	var out struct {
		Checkpoints []checkpointStat `json:"checkpoints"`
	}
	decodeJSON(t, "GET "+path, r.body, &out)
	return out.Checkpoints
}

// stopQuery stops a query with a final checkpoint (POST .../stop) and
// checks that it reports state "stopped".
func (s *server) stopQuery(t testing.TB, name string) {
	t.Helper()
	path := "/v1/queries/" + url.PathEscape(name) + "/stop"
	r := s.do(t, http.MethodPost, path, "", nil)
	expectOK(t, "POST "+path, r)
	if q := s.query(t, name); q.State != "stopped" {
		t.Fatalf("POST %s: state %q afterwards, want stopped", path, q.State)
	}
}

// resumeQuery resumes a stopped query (POST .../resume) and waits until it
// runs.
func (s *server) resumeQuery(t testing.TB, name string) {
	t.Helper()
	path := "/v1/queries/" + url.PathEscape(name) + "/resume"
	r := s.do(t, http.MethodPost, path, "", nil)
	expectOK(t, "POST "+path, r)
	s.waitRunning(t, name)
}
