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
	logPath string
	log     *os.File // the process's stdout and stderr, across restarts
	client  *http.Client

	base   string // http://127.0.0.1:port of the running process
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been reaped
	starts int
}

// startServer starts a server on a fresh data directory with
// `serve --addr 127.0.0.1:PORT --data DIR --checkpoint-interval 1s` plus
// flags, and waits until /healthz answers 200. The process is killed when
// the test ends; if the test failed its log is printed.
func startServer(t *testing.T, flags ...string) *server {
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
	s.start(t)
	return s
}

// start runs the server on the same data directory, on a new free port, and
// waits until /healthz answers 200.
func (s *server) start(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatal("e2e: server already running")
	}
	addr := freeAddr(t)
	s.starts++
	fmt.Fprintf(s.log, "\n===== e2e: start #%d on %s at %s =====\n", s.starts, addr, time.Now().Format(time.RFC3339Nano))
	args := append([]string{"serve", "--addr", addr, "--data", s.dataDir, "--checkpoint-interval", "1s"}, s.flags...)
	cmd := exec.Command(s.bin, args...)
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
	s.cmd, s.exited, s.base = cmd, exited, "http://"+addr

	health := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			s.cmd = nil
			t.Fatalf("server exited (%v) before /healthz answered; log:\n%s", cmd.ProcessState, tailFile(s.logPath, logTailBytes))
		default:
		}
		resp, err := health.Get(s.base + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz: no 200 within %v (last: %v)", startTimeout, describe(resp, err))
		}
		time.Sleep(pollInterval)
	}
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
	s.cmd = nil
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
	s.cmd = nil
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
	if s.cmd == nil {
		t.Fatalf("%s %s: server not running", method, path)
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v%s", method, path, err, s.exitNote())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the response: %v%s", method, path, err, s.exitNote())
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
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
	RowsIn   int64 `json:"rows_in"`
	RowsOut  int64 `json:"rows_out"`
	LateRows int64 `json:"late_rows"`
}

// queryInfo is the part of GET /v1/queries/{name} the tests read; raw holds
// the whole document for messages.
type queryInfo struct {
	Name     string   `json:"name"`
	SQL      string   `json:"sql"`
	State    string   `json:"state"`
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
