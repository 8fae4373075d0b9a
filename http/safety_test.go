package httpapi

// Safety: cross-origin requests, response headers, methods, content types
// and encodings, body limits and timeouts, the stream cap, identifiers in
// paths. No sleeps: a timeout is the server's, waited for by reading its
// answer; a released stream is announced by Options.streamDone.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	sqlvalue "github.com/streamsql/streamsql/value"
)

// endOffset is table's log end offset.
func (e *env) endOffset(table string) int64 {
	e.t.Helper()
	return integer(e.t, e.ok(e.get("/v1/tables/" + table))["end_offset"])
}

// TestCrossOrigin: browsers' cross-origin requests with unsafe methods are
// refused (403) before anything happens, /v1/login included; curl (no
// Origin, no Sec-Fetch-Site), same-origin requests and safe methods pass.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, opts: Options{Token: "s3cret", Web: consoleFiles}})
	host := strings.TrimPrefix(e.url, "http://")
	e.sql(bidsDDL)
	row := `{"auction": 1, "price": 1, "ts": 1}`
	for _, h := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "http://evil.example"},                                 // a browser without Sec-Fetch-Site
		{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, // a current browser
	} {
		e.problem(e.do("POST", "/v1/sql", "application/sql", "CREATE VIEW x AS SELECT auction FROM bids", h...), 403, "another origin")
		e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", row, h...), 403)
		e.problem(e.do("DELETE", "/v1/queries/x", "", "", h...), 403)
		p := e.problem(e.do("POST", "/v1/login", "application/json", `{"token": "s3cret"}`, append(h, "Authorization", "")...), 403)
		if p["title"] != "cross-origin request refused" {
			t.Errorf("title %v", p["title"])
		}
		// Safe methods are not state-changing: they pass (and need the token).
		if r := e.get("/v1/tables", h...); r.status != 200 {
			t.Errorf("GET with %v: %s", h, r)
		}
	}
	if n := e.endOffset("bids"); n != 0 {
		t.Errorf("a refused cross-origin ingest appended: end_offset %d", n)
	}
	e.problem(e.get("/v1/queries/x"), 404) // the refused CREATE VIEW left nothing
	// curl, the console (same origin), and a browser without
	// Sec-Fetch-Site whose Origin is this host.
	for _, h := range [][]string{
		nil,
		{"Sec-Fetch-Site", "same-origin", "Origin", e.url},
		{"Sec-Fetch-Site", "none"}, // typed into the address bar
		{"Origin", e.url},
	} {
		e.ingest("bids", row, h...)
		if r := e.do("POST", "/v1/login", "application/json", `{"token": "s3cret"}`, append(h, "Authorization", "")...); r.status != 200 {
			t.Errorf("login with %v: %s", h, r)
		}
	}
	if n := e.endOffset("bids"); n != 4 {
		t.Errorf("end_offset %d after 4 allowed ingests", n)
	}
	// No CORS: a preflight gets no Access-Control-Allow-* header.
	r := e.do("OPTIONS", "/v1/sql", "", "", "Origin", "http://evil.example", "Access-Control-Request-Method", "POST", "Host", host)
	for k := range r.header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("preflight answered with %s: %s", k, r.header.Get(k))
		}
	}
}

// TestHostCheck: without a token only loopback Host values (and
// AllowedHosts) are answered; another name gets 421 naming the Host and
// the flag on every route, even when the request is same-origin with that
// name (DNS rebinding), and nothing happens. With a token any Host is
// served (the token protects).
func TestHostCheck(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, opts: Options{Web: consoleFiles, AllowedHosts: []string{"streamsql.internal", "Other.Example:8080"}}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.url, "http://"))
	evil := "rebind.attacker.example:" + port
	rebind := []string{"Host", evil, "Origin", "http://" + evil, "Sec-Fetch-Site", "same-origin"}
	e.problem(e.do("POST", "/v1/sql", "application/sql", "CREATE TABLE pwn (a BIGINT) ENGINE=http", rebind...), 421,
		`Host "`+evil+`" is not loopback`, "--allowed-host", "--token")
	for _, p := range []string{"/healthz", "/", "/assets/app-1.js", "/v1/tables", "/debug/pprof/", "/debug/pprof/cmdline", "/metrics", "/nope"} {
		e.problem(e.get(p, rebind...), 421, evil)
	}
	e.problem(e.do("POST", "/v1/login", "application/json", `{"token": ""}`, rebind...), 421)
	for _, h := range []string{"evil.example", "127.0.0.1.evil.example", "localhost.evil.example:" + port, "[::2]:" + port, "10.0.0.1", "0.0.0.0:" + port,
		"other.example:9090", "other.example", "streamsql.internal.evil"} {
		e.problem(e.get("/healthz", "Host", h), 421)
	}
	// HTTP/1.0 without a Host.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.0\r\n\r\n")
	if res, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || res.StatusCode != 421 {
		t.Errorf("HTTP/1.0 without Host: %v, %v", res, err)
	}
	if r := e.sql("SHOW TABLES")[0]; len(r["rows"].([]any)) != 0 {
		t.Errorf("a refused request created a table: %v", r["rows"])
	}
	for _, h := range []string{"localhost", "localhost:" + port, "LOCALHOST:" + port, "localhost.:" + port, "console.localhost:" + port,
		"127.0.0.1", "127.0.0.1:" + port, "127.1.2.3:" + port, "[::1]:" + port, "[::1]", "streamsql.internal", "StreamSQL.Internal:443",
		"other.example:8080"} {
		if r := e.get("/healthz", "Host", h); r.status != 200 {
			t.Errorf("Host %q: %s", h, r)
		}
	}
	e.ok(e.do("POST", "/v1/sql", "application/sql", "SHOW TABLES", "Host", "localhost:"+port, "Origin", "http://localhost:"+port, "Sec-Fetch-Site", "same-origin"))

	// With a token, the token decides.
	tok := start(t, config{checkpoint: time.Second, opts: Options{Token: "s3cret"}})
	if r := tok.get("/v1/tables", "Host", "streamsql.example.com"); r.status != 200 {
		t.Errorf("with a token and another Host: %s", r)
	}
	tok.problem(tok.get("/v1/tables", "Host", "streamsql.example.com", "Authorization", ""), 401)
}

func TestCheckAllowedHost(t *testing.T) {
	for _, h := range []string{"streamsql.internal", "a.b:8080", "10.1.2.3", "[fd00::1]:80", "[fd00::1]"} {
		if err := CheckAllowedHost(h); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	for _, h := range []string{"", "http://a.b", "a b", "a/b", "a:99999", "a:x", "u@a"} {
		if err := CheckAllowedHost(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
}

// TestResponseHeaders: every response says nosniff and DENY for framing;
// the console's pages carry a Content-Security-Policy; nothing opens CORS.
func TestResponseHeaders(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, opts: Options{Web: consoleFiles}})
	for _, r := range []resp{e.get("/"), e.get("/assets/app-1.js"), e.get("/v1/tables"), e.get("/v1/nope"), e.get("/healthz"),
		e.do("POST", "/v1/sql", "application/sql", "SELEC"), e.get("/v1/tables", "Origin", "http://evil.example")} {
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%d %s: X-Content-Type-Options %q, X-Frame-Options %q", r.status, r.body, r.header.Get("X-Content-Type-Options"), r.header.Get("X-Frame-Options"))
		}
		if v := r.header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("Access-Control-Allow-Origin %q", v)
		}
	}
	for _, p := range []string{"/", "/index.html", "/assets/app-1.js"} {
		if csp := e.get(p).header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", p, csp)
		}
	}
}

// TestMethods: a known endpoint with another method is a 405 naming the
// allowed ones (also behind the console's catch-all); unknown paths are
// 404s.
func TestMethods(t *testing.T) {
	t.Parallel()
	for _, web := range []bool{false, true} {
		opts := Options{}
		if web {
			opts.Web = consoleFiles
		}
		e := start(t, config{checkpoint: time.Second, opts: opts})
		for _, c := range []struct{ method, path, allow string }{
			{"PUT", "/v1/sql", "POST"},
			{"GET", "/v1/sql", "POST"},
			{"GET", "/v1/login", "POST"},
			{"PATCH", "/v1/tables", "GET"},
			{"PUT", "/v1/queries/q", "GET, DELETE"},
			{"GET", "/v1/queries/q/stop", "POST"},
		} {
			r := e.do(c.method, c.path, "", "")
			e.problem(r, 405, c.method+" is not allowed on "+c.path)
			if r.header.Get("Allow") != c.allow {
				t.Errorf("web %v: %s %s: Allow %q, want %q", web, c.method, c.path, r.header.Get("Allow"), c.allow)
			}
		}
		e.problem(e.get("/v1/nope"), 404, "no such endpoint: GET /v1/nope")
		e.problem(e.do("POST", "/v1/queries/q/nothing", "", ""), 404, "no such endpoint")
		if web {
			e.problem(e.do("POST", "/index.html", "", ""), 404)
		}
	}
}

// gz compresses b.
func gz(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestContentEncoding: gzip bodies are taken (rows and SQL), counted
// decompressed against --max-body, so a gzip bomb is a 413; bad gzip is a
// 400 and other encodings a 415. Nothing is appended by a refused request.
func TestContentEncoding(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	e := start(t, config{checkpoint: time.Second, opts: Options{MaxBody: limit}})
	e.sql(bidsDDL)
	rows := strings.Repeat(`{"auction": 1, "price": 1, "ts": 1}`+"\n", 100)
	if m := e.ingest("bids", gz(t, []byte(rows)), "Content-Encoding", "gzip"); integer(t, m["accepted"]) != 100 {
		t.Fatalf("gzip ingest: %v", m)
	}
	e.ingest("bids", gz(t, []byte(rows)), "Content-Encoding", "x-gzip")
	if m := e.ok(e.do("POST", "/v1/sql", "application/sql", gz(t, []byte("SHOW TABLES")), "Content-Encoding", "GZIP")); len(resultsOf(t, m)) != 1 {
		t.Errorf("gzip SQL: %v", m)
	}
	// A bomb: 8 MiB of spaces in 8 KiB of gzip, well under the limit as sent.
	bomb := gz(t, append([]byte(`{"auction": 1, "price": 1, "ts": 1}`), bytes.Repeat([]byte(" "), 8<<20)...))
	if len(bomb) >= limit {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", bomb, "Content-Encoding", "gzip"), 413, "decompressed body is larger than the 65536-byte limit (--max-body)")
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", rows, "Content-Encoding", "gzip"), 400, "not valid gzip")
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", gz(t, []byte(rows))[:40], "Content-Encoding", "gzip"), 400, "not valid gzip")
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", rows, "Content-Encoding", "br"), 415, `Content-Encoding "br" is not supported`)
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", rows, "Content-Encoding", "gzip, gzip"), 415)
	e.problem(e.do("POST", "/v1/sql", "application/sql", "SHOW TABLES", "Content-Encoding", "deflate"), 415)
	if n := e.endOffset("bids"); n != 200 {
		t.Errorf("end_offset %d, want 200: a refused request appended", n)
	}
}

// TestCapReader: decompression stops at the limit: no more than limit+1
// bytes are ever pulled from the decompressor.
func TestCapReader(t *testing.T) {
	src := &countReader{}
	_, err := io.Copy(io.Discard, &capReader{r: src, n: 1000})
	if !errors.Is(err, errTooLarge) || src.n > 1001 {
		t.Fatalf("error %v after reading %d bytes", err, src.n)
	}
	src = &countReader{max: 1000}
	if b, err := io.ReadAll(&capReader{r: src, n: 1000}); err != nil || len(b) != 1000 {
		t.Fatalf("exactly the limit: %d bytes, %v", len(b), err)
	}
}

// countReader is an endless (or max-byte) reader of zeros that counts.
type countReader struct{ n, max int }

func (c *countReader) Read(p []byte) (int, error) {
	if c.max > 0 && c.n >= c.max {
		return 0, io.EOF
	}
	if c.max > 0 {
		p = p[:min(len(p), c.max-c.n)]
	}
	clear(p)
	c.n += len(p)
	return len(p), nil
}

// TestContentTypes: bodies of the wrong media type or charset are refused
// with 415 naming what is accepted; what curl -d sends is accepted.
func TestContentTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sql(bidsDDL)
	row := `{"auction": 1, "price": 1, "ts": 1}`
	for _, ct := range []string{"text/csv", "multipart/form-data; boundary=x", "application/xml", "text/plain; charset"} {
		e.problem(e.do("POST", "/v1/tables/bids/rows", ct, row), 415, "send application/x-ndjson")
		e.problem(e.do("POST", "/v1/sql", ct, "SHOW TABLES"), 415, "application/sql")
	}
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/json; charset=latin1", row), 415, "charset latin1 is not accepted for rows")
	e.problem(e.do("POST", "/v1/sql", "text/plain; charset=utf-16", "SHOW TABLES"), 415, "charset utf-16 is not accepted for SQL")
	for _, ct := range []string{"", "application/x-ndjson", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "application/octet-stream"} {
		if r := e.do("POST", "/v1/tables/bids/rows", ct, row); r.status != 200 {
			t.Errorf("ingest as %q: %s", ct, r)
		}
	}
	if n := e.endOffset("bids"); n != 6 {
		t.Errorf("end_offset %d, want 6", n)
	}
	// {"sql": ...} is strict: another member is named, not ignored.
	e.problem(e.do("POST", "/v1/sql", "application/json", `{"sql": "SHOW TABLES", "timeout": 5}`), 400, `unknown field "timeout"`)
	e.problem(e.do("POST", "/v1/sql", "application/json", `{"sql": "SHOW TABLES"} {"sql": "SHOW TABLES"}`), 400, "data after the object")
	e.problem(e.do("POST", "/v1/sql", "application/json", `{"sql": "SHOW TABLES", "x": `+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+`}`), 400)
}

// TestRowLimits: a row over the row size limit is a 413 naming it, a value
// nested too deep a 400 naming row and column; nothing is appended.
func TestRowLimits(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, limits: sqlvalue.Limits{MaxRowSize: 200, MaxDepth: 8}})
	e.sql(bidsDDL)
	row := `{"auction": 1, "price": 1, "ts": 1}` + "\n"
	long := `{"auction": 1, "price": 1, "ts": 1, "channel": "` + strings.Repeat("x", 200) + `"}` + "\n"
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", row+row+long), 413, "row 2: row is 250 bytes, over the 200-byte limit on one row (--max-row-size)")
	deep := `{"auction": 1, "price": ` + strings.Repeat("[", 10) + strings.Repeat("]", 10) + `, "ts": 1}`
	e.problem(e.do("POST", "/v1/tables/bids/rows", "application/x-ndjson", row+deep), 400, "row 1, column price: JSON nested deeper than 8 levels")
	if n := e.endOffset("bids"); n != 0 {
		t.Errorf("end_offset %d, want 0", n)
	}
}

// TestBodyTimeout: a body that stops arriving gets a 408 once the body
// timeout passes (the server's clock; the test only reads the answer).
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, opts: Options{BodyTimeout: 200 * time.Millisecond}})
	e.sql(bidsDDL)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/tables/bids/rows HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n{\"auction\": 1,")
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // only against a hang
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	checkProblem(t, resp{status: res.StatusCode, header: res.Header, body: b}, 408, "did not arrive within 200ms (--body-timeout)")
	// A body that arrives in time is not cut off, and the handler's wait
	// for the sync afterwards is not bounded by the timeout.
	e.ingest("bids", `{"auction": 1, "price": 1, "ts": 1}`)
}

// TestMaxStreams: beyond MaxStreams open /changes streams a long-lived
// request gets 429 with Retry-After naming the limit; a closed stream frees
// its slot.
func TestMaxStreams(t *testing.T) {
	t.Parallel()
	done := make(chan struct{}, 8)
	e := start(t, config{checkpoint: time.Second, opts: Options{MaxStreams: 2, streamDone: func() { done <- struct{}{} }}})
	e.sql(bidsDDL + `; CREATE VIEW v AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction`)
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/queries/v/changes", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); res.Body.Close() })
		return res, cancel
	}
	r1, cancel1 := open()
	r2, _ := open()
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("streams 1 and 2: %d, %d", r1.StatusCode, r2.StatusCode)
	}
	r := e.get("/v1/queries/v/changes")
	e.problem(r, 429, "2 streams (/changes, checkpoint waits, profiles) are open, the server's limit (--max-streams)")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	// A refused stream and other requests take no slot.
	e.ingest("bids", `{"auction": 1, "price": 1, "ts": 1}`)
	e.problem(e.get("/v1/queries/nope/changes"), 429)
	e.problem(e.do("POST", "/v1/checkpoints", "", ""), 429)
	cancel1()
	r1.Body.Close()
	<-done
	r3, _ := open()
	if r3.StatusCode != 200 {
		t.Fatalf("a stream after one closed: %d", r3.StatusCode)
	}
	e.problem(e.get("/v1/queries/v/changes"), 429)
}

// TestEscapedNames: names in paths are unescaped exactly once (a client
// escaping '+' as %2B, as encodeURIComponent does, finds the table; %2541
// is "%41", not "A") and looked up as SQL looks them up (lower-cased);
// names that are not one (".", "..", leading spaces, bidi controls,
// zero-width characters, not NFC) are refused at CREATE.
func TestEscapedNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sql("CREATE TABLE `a+b c` (x BIGINT) ENGINE=http; CREATE VIEW `v+1` AS SELECT x, COUNT(*) AS n FROM `a+b c` GROUP BY x")
	if m := e.ok(e.do("POST", "/v1/tables/a%2Bb%20c/rows", "application/x-ndjson", `{"x": 1}`)); integer(t, m["accepted"]) != 1 {
		t.Errorf("ingest: %v", m)
	}
	if m := e.ok(e.get("/v1/queries/v%2B1")); m["name"] != "v+1" {
		t.Errorf("query: %v", m)
	}
	e.problem(e.get("/v1/tables/a%2Fb"), 404, "unknown table a/b")
	e.sqlErr("CREATE TABLE `a/b` (x BIGINT) ENGINE=http", 400, `table name "a/b" contains '/'`)
	e.sqlErr("CREATE VIEW `v\x01` AS SELECT x FROM `a+b c`", 400, `view name "v\x01" contains the control character U+0001`)
	e.sqlErr("CREATE VIEW w AS SELECT x AS `x\ny` FROM `a+b c`", 400, `column name "x\ny"`)

	// One unescape: %25 is '%', and what follows it stays as it is.
	e.sql("CREATE TABLE `x%41` (x BIGINT) ENGINE=http; CREATE TABLE xa (x BIGINT) ENGINE=http")
	if m := e.ok(e.get("/v1/tables/x%2541")); m["name"] != "x%41" {
		t.Errorf("/v1/tables/x%%2541 found %v, want the table x%%41", m["name"])
	}
	e.ok(e.do("POST", "/v1/tables/x%2541/rows", "application/x-ndjson", `{"x": 1}`))
	if n := e.endOffset("xa"); n != 0 {
		t.Errorf("a row posted to /v1/tables/x%%2541 went to xa (end_offset %d)", n)
	}
	// Case: SQL lower-cases table and view names, and so does a URL.
	e.sql("CREATE TABLE Bids2 (x BIGINT) ENGINE=http; CREATE VIEW `V+2` AS SELECT x FROM bids2")
	for _, p := range []string{"/v1/tables/Bids2", "/v1/tables/BIDS2", "/v1/tables/bids2"} {
		if m := e.ok(e.get(p)); m["name"] != "bids2" {
			t.Errorf("%s: %v", p, m["name"])
		}
	}
	e.ok(e.do("POST", "/v1/tables/BIDS2/rows", "application/x-ndjson", `{"x": 1}`))
	if m := e.ok(e.get("/v1/queries/V%2B2")); m["name"] != "v+2" {
		t.Errorf("/v1/queries/V%%2B2: %v", m["name"])
	}
	e.ok(e.get("/v1/queries/V%2B2/results?consistency=latest"))
	// Names that are not names are refused at CREATE, naming them.
	for _, c := range []struct{ name, want string }{
		{".", `table name "." is a path segment of its own`},
		{"..", `table name ".." is a path segment of its own`},
		{" t", `table name " t" starts with the space character U+0020`},
		{"t\u202eab", `table name "t\u202eab" contains the invisible format character U+202E`},
		{"t\u200b", `contains the invisible format character U+200B`},
		{"cafe\u0301", `is not in Unicode normalization form NFC ("cafe\u0301"; write it as "caf\u00e9"`},
	} {
		e.sqlErr("CREATE TABLE `"+c.name+"` (x BIGINT) ENGINE=http", 400, c.want)
		e.sqlErr("CREATE VIEW `"+c.name+"` AS SELECT x FROM bids2", 400, strings.Replace(c.want, "table", "view", 1))
	}
}

// TestRedactedConnections: the password of a sink's connection string
// (in a URL, a key=value string, a query string) is in no answer of the
// API: GET /v1/tables[/{t}], SHOW CREATE TABLE, errors quoting the
// statement or the driver's parse error. The catalog keeps it, through a
// restart (the sink connects with it); rows of results are not redacted.
func TestRedactedConnections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := start(t, config{dir: dir, checkpoint: time.Second})
	secrets := []string{"url-S3cret-1", "kv-S3cret-2", "qs-S3cret-3", "bad-S3cret-4", "syn-S3cret-5", "sp ace-S3cret-6"}
	ddl := map[string]string{
		"pg_url": "postgres://alice:url-S3cret-1@127.0.0.1:1/db?sslmode=disable",
		"pg_kv":  "host=127.0.0.1 port=1 user=bob password=kv-S3cret-2 dbname=db",
		"pg_qs":  "postgres://127.0.0.1:1/db?user=carol&password=qs-S3cret-3&sslmode=disable",
		"pg_sp":  "host=127.0.0.1 port=1 password=''sp ace-S3cret-6'' dbname=db",
	}
	var all []string
	for name, conn := range ddl {
		e.sql("CREATE TABLE " + name + " (a BIGINT, PRIMARY KEY (a)) ENGINE=postgres CONNECTION='" + conn + "'")
		all = append(all, name)
	}
	e.sql("CREATE TABLE src (a BIGINT, s VARCHAR(255)) ENGINE=http; CREATE VIEW data AS SELECT s, COUNT(*) AS n FROM src GROUP BY s")
	var bodies []resp
	keep := func(r resp) resp { bodies = append(bodies, r); return r }
	keep(e.get("/v1/tables"))
	for _, name := range all {
		m := e.ok(keep(e.get("/v1/tables/" + name)))
		if !strings.Contains(m["sql"].(string), "CONNECTION='") || !strings.Contains(m["sql"].(string), "REDACTED") {
			t.Errorf("GET /v1/tables/%s: sql %q", name, m["sql"])
		}
		keep(e.do("POST", "/v1/sql", "application/sql", "SHOW CREATE TABLE "+name))
	}
	// Errors quoting the statement (the parser's "near" text) or the
	// driver's message about the connection string.
	e.problem(keep(e.do("POST", "/v1/sql", "application/sql",
		"CREATE TABLE t (a BIGINT, PRIMARY KEY (a)) ENGINE=postgres garbage CONNECTION='postgres://eve:syn-S3cret-5@h/db'")), 400, "REDACTED")
	e.sql("CREATE TABLE pg_bad (a BIGINT, PRIMARY KEY (a)) ENGINE=postgres CONNECTION='postgres://dave:bad-S3cret-4@127.0.0.1:99999999/db'")
	e.problem(keep(e.do("POST", "/v1/sql", "application/sql", "INSERT INTO pg_bad SELECT a FROM src GROUP BY a")), 422)
	keep(e.get("/v1/queries"))
	for _, r := range bodies {
		for _, s := range secrets {
			if strings.Contains(string(r.body), s) {
				t.Errorf("an answer shows the password %q: %s", s, r.body)
			}
		}
	}
	// Rows are the user's data: not redacted.
	e.ingest("src", `{"a": 1, "s": "password=hunter2 postgres://u:pw@h"}`)
	e.checkpoint()
	if r := e.sql("SELECT s FROM data"); !strings.Contains(fmt.Sprint(r[0]["rows"]), "password=hunter2 postgres://u:pw@h") {
		t.Errorf("SELECT redacted a row: %v", r[0]["rows"])
	}
	if r := e.get("/v1/queries/data/results"); !strings.Contains(string(r.body), "password=hunter2 postgres://u:pw@h") {
		t.Errorf("results redacted a row: %s", r.body)
	}
	// The catalog has the real thing, also after a restart.
	e.close()
	e = start(t, config{dir: dir, checkpoint: time.Second})
	for name, conn := range ddl {
		ti, err := e.eng.Table(name)
		if err != nil || !strings.Contains(ti.SQL, "CONNECTION='"+conn+"'") {
			t.Errorf("catalog after a restart: %s: %q, %v", name, ti.SQL, err)
		}
	}
}

// TestUnauthenticatedBodies: with a token, a request without it gets 401
// before the server reads a byte of its body, on every route behind the
// token (seen with Expect: 100-continue: net/http sends "100 Continue"
// only when a handler first reads the body); POST /v1/login, which reads
// before it knows who is asking, reads at most 4 KiB, decompressed (413
// beyond, however large --max-body is).
func TestUnauthenticatedBodies(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, opts: Options{Token: "s3cret", Web: consoleFiles}})
	addr := strings.TrimPrefix(e.url, "http://")
	// first sends the headers of a 1 MB body and returns the first
	// response: 100 when the server started reading the body.
	first := func(method, path string, hdr ...string) int {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n", method, path, addr)
		for i := 0; i+1 < len(hdr); i += 2 {
			fmt.Fprintf(conn, "%s: %s\r\n", hdr[i], hdr[i+1])
		}
		fmt.Fprintf(conn, "\r\n")
		conn.SetReadDeadline(time.Now().Add(time.Minute)) // only against a hang
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		var code int
		fmt.Sscanf(line, "HTTP/1.1 %d", &code)
		return code
	}
	open := map[string]bool{"/healthz": true, "/v1/login": true, "/v1/logout": true, "/*": true}
	n := 0
	chi.Walk(e.h.(*chi.Mux), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if open[route] {
			return nil
		}
		path := strings.NewReplacer("{table}", "bids", "{name}", "v", "*", "").Replace(route)
		for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Cookie", sessionCookie + "=forged"}} {
			if code := first(method, path, h...); code != 401 {
				t.Errorf("%s %s without the token (%v): first answer %d, want 401 before the body", method, path, h, code)
			}
		}
		n++
		return nil
	})
	if n < 15 {
		t.Errorf("walked %d routes behind the token", n)
	}
	// With the token the body is read (the check above can fail).
	if code := first("POST", "/v1/sql", "Authorization", "Bearer s3cret"); code != 100 {
		t.Errorf("POST /v1/sql with the token: first answer %d, want 100", code)
	}
	// The login: a declared large body is refused unread, a larger one
	// (as sent or decompressed) at 4 KiB.
	if code := first("POST", "/v1/login"); code != 413 {
		t.Errorf("POST /v1/login of 1 MB: first answer %d, want 413", code)
	}
	noAuth := []string{"Authorization", ""}
	pad := `{"token": "wrong", "pad": "` + strings.Repeat("x", 5000) + `"}`
	e.problem(e.do("POST", "/v1/login", "application/json", pad, noAuth...), 413, "body is larger than the 4096-byte limit (the limit of /v1/login)")
	bomb := gz(t, append([]byte(`{"token": "wrong", "pad": "`), bytes.Repeat([]byte(" "), 2<<20)...))
	if len(bomb) > 4096 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	e.problem(e.do("POST", "/v1/login", "application/json", bomb, append(noAuth, "Content-Encoding", "gzip")...), 413,
		"decompressed body is larger than the 4096-byte limit (the limit of /v1/login)")
	// The issue's: 64 MiB in 65 KB of gzip.
	bomb = gz(t, append([]byte(`{"token": "wrong", "pad": "`), bytes.Repeat([]byte(" "), 64<<20)...))
	e.problem(e.do("POST", "/v1/login", "application/json", bomb, append(noAuth, "Content-Encoding", "gzip")...), 413, "the limit of /v1/login")
	if r := e.do("POST", "/v1/login", "application/json", gz(t, []byte(`{"token": "s3cret"}`)), append(noAuth, "Content-Encoding", "gzip")...); r.status != 200 {
		t.Errorf("gzip login: %s", r)
	}
}
