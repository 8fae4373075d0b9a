package e2e

// Attacks on the HTTP surface (issue 15, items 3, 4, 13 and 14), against
// the real binary: DNS rebinding against a server without a token,
// passwords of connection strings in outputs, memory held by
// unauthenticated login bodies, names in URLs, and console sessions.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// withHost sends one request with the given Host (net/http sends req.Host,
// never a Host header).
func (s *server) withHost(t testing.TB, method, path, host string, header http.Header, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v%s", method, path, host, err, s.exitNote())
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// TestAttackDNSRebinding: a page of rebind.attacker.example, re-resolved
// to 127.0.0.1, is same-origin with itself; without a token the server
// refuses its Host (421 naming it and the flag) on every route and does
// nothing. Loopback names and --allowed-host names are served.
func TestAttackDNSRebinding(t *testing.T) {
	srv := startServer(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.base, "http://"))
	evil := "rebind.attacker.example:" + port
	page := http.Header{"Origin": {"http://" + evil}, "Sec-Fetch-Site": {"same-origin"}}
	r := srv.withHost(t, "POST", "/v1/sql", evil, page, []byte("CREATE TABLE pwn (a BIGINT) ENGINE=http"))
	p := parseProblem(t, "rebinding POST /v1/sql", r)
	if p.httpStatus != 421 || !strings.Contains(p.Detail, `Host "`+evil+`"`) || !strings.Contains(p.Detail, "--allowed-host") {
		t.Errorf("rebinding POST /v1/sql: %s", p)
	}
	for _, path := range []string{"/healthz", "/", "/v1/tables", "/debug/pprof/", "/debug/pprof/cmdline", "/metrics"} {
		if r := srv.withHost(t, "GET", path, evil, page, nil); r.status != 421 {
			t.Errorf("rebinding GET %s: %s", path, truncate(r.body, 300))
		}
	}
	for _, h := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "LocalHost"} {
		if r := srv.withHost(t, "GET", "/v1/tables", h, nil, nil); r.status != 200 {
			t.Errorf("Host %s: %s", h, truncate(r.body, 300))
		}
	}
	if rows := srv.sql(t, "SHOW TABLES")[0].Rows; len(rows) != 0 {
		t.Errorf("the refused request created a table: %v", rows)
	}
	// --allowed-host names are served; other names and ports are not.
	named := startServer(t, "--allowed-host", "streamsql.test,other.test:8080")
	for _, h := range []string{"other.test:9090", "streamsql.test.attacker.example", "10.0.0.1:" + port} {
		if r := named.withHost(t, "GET", "/healthz", h, nil, nil); r.status != 421 {
			t.Errorf("Host %s: %d", h, r.status)
		}
	}
	for _, h := range []string{"streamsql.test", "STREAMSQL.test:" + port, "other.test:8080"} {
		if r := named.withHost(t, "GET", "/v1/tables", h, nil, nil); r.status != 200 {
			t.Errorf("Host %s: %s", h, truncate(r.body, 300))
		}
	}
	if out := runServe(t, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--allowed-host", "http://x.test"); !strings.Contains(out, `--allowed-host "http://x.test" is not a host name`) {
		t.Errorf("a bad --allowed-host: %s", out)
	}
}

// fakePostgres accepts PostgreSQL connections, asks for a cleartext
// password, records it and refuses the login: what a sink sends is the
// connection string the catalog holds.
type fakePostgres struct {
	ln        net.Listener
	mu        sync.Mutex
	passwords map[string]bool
}

func startFakePostgres(t *testing.T) *fakePostgres {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePostgres{ln: ln, passwords: map[string]bool{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakePostgres) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReader(c)
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			return
		}
		n, code := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > 1<<16 {
			return
		}
		if _, err := io.CopyN(io.Discard, rd, int64(n-8)); err != nil {
			return
		}
		if code == 80877103 || code == 80877104 { // SSLRequest, GSSENCRequest: no
			c.Write([]byte{'N'})
			continue
		}
		break // StartupMessage
	}
	c.Write([]byte{'R', 0, 0, 0, 8, 0, 0, 0, 3}) // AuthenticationCleartextPassword
	typ, err := rd.ReadByte()
	var lb [4]byte
	if err != nil || typ != 'p' || func() error { _, err := io.ReadFull(rd, lb[:]); return err }() != nil {
		return
	}
	pw := make([]byte, binary.BigEndian.Uint32(lb[:])-4)
	if _, err := io.ReadFull(rd, pw); err != nil {
		return
	}
	f.mu.Lock()
	f.passwords[strings.TrimRight(string(pw), "\x00")] = true
	f.mu.Unlock()
	msg := "SFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00"
	e := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(e[1:], uint32(4+len(msg)))
	c.Write(append(e, msg...))
}

func (f *fakePostgres) got(pw string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.passwords[pw]
}

// TestAttackSecretsRedacted: the passwords of sinks' connection strings
// (a URL's, a key=value string's, a query string's) appear in no output:
// GET /v1/tables and /v1/tables/{t}, SHOW CREATE TABLE, GET /v1/queries
// and /v1/queries/{name} (the sink retrying with the driver's error),
// checkpoints, metrics, errors quoting the statement or the connection
// string, and the server log. The sink does connect with the real
// password, before and after a restart: the catalog keeps it.
func TestAttackSecretsRedacted(t *testing.T) {
	pg := startFakePostgres(t)
	pgAddr := pg.ln.Addr().String()
	pgHost, pgPort, _ := net.SplitHostPort(pgAddr)
	srv := startServer(t)
	secrets := map[string]string{ // sink table -> its password
		"pg_url": "URL-S3cret-1",
		"pg_kv":  "KV-S3cret-2",
		"pg_qs":  "QS-S3cret-3",
	}
	conns := map[string]string{
		"pg_url": "postgres://alice:URL-S3cret-1@" + pgAddr + "/db?sslmode=disable",
		"pg_kv":  "host=" + pgHost + " port=" + pgPort + " user=bob password=KV-S3cret-2 dbname=db sslmode=disable",
		"pg_qs":  "postgres://" + pgAddr + "/db?user=carol&password=QS-S3cret-3&sslmode=disable",
	}
	srv.sql(t, "CREATE TABLE src (a BIGINT NOT NULL) ENGINE=http")
	for name, conn := range conns {
		srv.sql(t, "CREATE TABLE "+name+" (a BIGINT, PRIMARY KEY (a)) ENGINE=postgres CONNECTION='"+conn+"'; INSERT INTO "+name+" SELECT a FROM src GROUP BY a")
	}
	all := []string{"URL-S3cret-1", "KV-S3cret-2", "QS-S3cret-3", "BAD-S3cret-4", "SYN-S3cret-5"}
	var outputs []string
	keep := func(what string, r response) {
		outputs = append(outputs, what+": "+string(r.body))
	}
	// Errors quoting the statement (the parser's "near" text) and the
	// connection string (a port pgx cannot parse).
	r := srv.do(t, "POST", "/v1/sql", "application/sql", []byte("CREATE TABLE t (a BIGINT, PRIMARY KEY (a)) ENGINE=postgres garbage CONNECTION='postgres://eve:SYN-S3cret-5@h/db'"))
	keep("syntax error", r)
	srv.sql(t, "CREATE TABLE pg_bad (a BIGINT, PRIMARY KEY (a)) ENGINE=postgres CONNECTION='postgres://dave:BAD-S3cret-4@127.0.0.1:99999999/db'")
	keep("bad port", srv.do(t, "POST", "/v1/sql", "application/sql", []byte("INSERT INTO pg_bad SELECT a FROM src GROUP BY a")))

	// The sinks connect with their real passwords and retry.
	waitSinks := func() {
		t.Helper()
		deadline := time.Now().Add(readyTimeout)
		for name, pw := range secrets {
			for !pg.got(pw) || srv.query(t, name).State != "retrying" {
				if time.Now().After(deadline) {
					t.Fatalf("sink %s: password seen %v, state %s", name, pg.got(pw), srv.query(t, name).State)
				}
				time.Sleep(pollInterval)
			}
		}
	}
	waitSinks()
	collect := func() {
		keep("GET /v1/tables", srv.do(t, "GET", "/v1/tables", "", nil))
		keep("GET /v1/queries", srv.do(t, "GET", "/v1/queries", "", nil))
		keep("GET /metrics", srv.do(t, "GET", "/metrics", "", nil))
		keep("POST /v1/checkpoints", srv.do(t, "POST", "/v1/checkpoints?timeout=2s", "", nil))
		for name := range conns {
			r := srv.do(t, "GET", "/v1/tables/"+name, "", nil)
			if !strings.Contains(string(r.body), "REDACTED") {
				t.Errorf("GET /v1/tables/%s: %s", name, r.body)
			}
			keep("GET /v1/tables/"+name, r)
			keep("SHOW CREATE TABLE "+name, srv.do(t, "POST", "/v1/sql", "application/sql", []byte("SHOW CREATE TABLE "+name)))
			keep("GET /v1/queries/"+name, srv.do(t, "GET", "/v1/queries/"+name, "", nil))
			keep("checkpoints of "+name, srv.do(t, "GET", "/v1/queries/"+name+"/checkpoints", "", nil))
		}
	}
	collect()
	if q := srv.query(t, "pg_url"); !strings.Contains(fmt.Sprint(q.raw["error"]), "password authentication failed") {
		t.Errorf("pg_url's error: %v", q.raw["error"])
	}
	// Again after a restart: the catalog still has the passwords.
	pg.mu.Lock()
	clear(pg.passwords)
	pg.mu.Unlock()
	srv.restart(t)
	waitSinks()
	collect()
	log, err := os.ReadFile(srv.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "sink unavailable") {
		t.Errorf("the server log has no sink error to check")
	}
	outputs = append(outputs, "server log: "+string(log))
	for _, out := range outputs {
		for _, s := range all {
			if strings.Contains(out, s) {
				t.Errorf("the password %s is shown: %s", s, truncate([]byte(out), 3000))
			}
		}
	}
}

// vm returns VmRSS and VmHWM of pid in KiB.
func vm(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				rss = n
			} else {
				hwm = n
			}
		}
	}
	return rss, hwm
}

// TestAttackLoginMemory: the burst, 24 concurrent POST /v1/login
// with 65 KB gzip bodies decompressing to 64 MiB, each answered 413 after
// at most 4 KiB; the server's peak memory (VmHWM) grows by far less than
// one such body (it grew by 2.4 GB, and stayed, when the login read up to
// --max-body). A bound on memory, not on time.
func TestAttackLoginMemory(t *testing.T) {
	srv := startServer(t, "--token", "attack-e2e-token-0123456789")
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(`{"token": "wrong", "pad": "`))
	zw.Write(bytes.Repeat([]byte(" "), 64<<20))
	zw.Write([]byte(`"}`))
	zw.Close()
	pid := srv.cmd.Process.Pid
	_, before := vm(t, pid)
	var wg sync.WaitGroup
	codes := make([]int, 24)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := srv.try("POST", "/v1/login", "application/json", http.Header{"Content-Encoding": {"gzip"}}, buf.Bytes())
			if err == nil {
				codes[i] = r.status
			}
		}()
	}
	wg.Wait()
	rss, after := vm(t, pid)
	t.Logf("VmHWM %d KiB before, %d KiB after 24 login bombs (VmRSS %d KiB)", before, after, rss)
	for i, c := range codes {
		if c != 413 {
			t.Errorf("login bomb %d: %d, want 413", i, c)
		}
	}
	if after-before > 64<<10 {
		t.Errorf("peak memory grew by %d MiB for 24 refused logins", (after-before)>>10)
	}
	srv.alive(t)
	// A request behind the token without it: 401, whatever its body.
	r := srv.do(t, "POST", "/v1/sql", "application/sql", buf.Bytes())
	if r.status != 401 {
		t.Errorf("POST /v1/sql without the token: %d", r.status)
	}
}

// TestAttackURLNames: a path is unescaped once (/v1/tables/x%2541 is the
// table x%41, not xa); URL names are lower-cased as SQL's are; names that
// are not names are refused at CREATE, naming them.
func TestAttackURLNames(t *testing.T) {
	srv := startServer(t)
	srv.sql(t, "CREATE TABLE `x%41` (a BIGINT) ENGINE=http; CREATE TABLE xa (a BIGINT) ENGINE=http; CREATE TABLE Bids2 (a BIGINT) ENGINE=http")
	var m map[string]any
	r := srv.do(t, "GET", "/v1/tables/x%2541", "", nil)
	expectOK(t, "GET /v1/tables/x%2541", r)
	if decodeJSON(t, "table", r.body, &m); m["name"] != "x%41" {
		t.Errorf("/v1/tables/x%%2541 is %v, want x%%41", m["name"])
	}
	r = srv.do(t, "GET", "/v1/tables/BIDS2", "", nil)
	expectOK(t, "GET /v1/tables/BIDS2", r)
	if decodeJSON(t, "table", r.body, &m); m["name"] != "bids2" {
		t.Errorf("/v1/tables/BIDS2 is %v", m["name"])
	}
	expectOK(t, "POST /v1/tables/Bids2/rows", srv.do(t, "POST", "/v1/tables/Bids2/rows", "application/x-ndjson", []byte(`{"a": 1}`)))
	for _, c := range []struct{ name, want string }{
		{".", `table name "." is a path segment of its own`},
		{"..", `table name ".." is a path segment of its own`},
		{" t", `starts with the space character U+0020`},
		{"t\u202eab", `contains the invisible format character U+202E`},
		{"t\u200b", `contains the invisible format character U+200B`},
		{"cafe\u0301", `is not in Unicode normalization form NFC`},
	} {
		p := srv.sqlError(t, "CREATE TABLE `"+c.name+"` (a BIGINT) ENGINE=http")
		if p.httpStatus != 400 || !strings.Contains(p.Detail, c.want) {
			t.Errorf("CREATE TABLE %q: %s, want 400 saying %q", c.name, p, c.want)
		}
	}
}

// TestAttackSessions: a login's cookie expires (Max-Age of
// --session-ttl), works until logout and not after, is new at each
// login, and does not survive a restart.
func TestAttackSessions(t *testing.T) {
	const token = "attack-e2e-token-0123456789"
	srv := startServer(t, "--token", token)
	maxAge := 12 * 3600 // the default --session-ttl
	login := func() string {
		t.Helper()
		r := srv.do(t, "POST", "/v1/login", "application/json", []byte(`{"token": "`+token+`"}`))
		expectOK(t, "login", r)
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == "streamsql_session" {
				if c.MaxAge != maxAge || c.Expires.IsZero() || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
					t.Errorf("session cookie %q: want Max-Age=%d, Expires, HttpOnly, SameSite=Strict", r.header.Get("Set-Cookie"), maxAge)
				}
				return c.Name + "=" + c.Value
			}
		}
		t.Fatalf("no session cookie: %v", r.header)
		return ""
	}
	with := func(cookie string) int {
		t.Helper()
		return srv.doHeader(t, "GET", "/v1/tables", "", http.Header{"Cookie": {cookie}}, nil).status
	}
	a, b := login(), login()
	if a == b {
		t.Errorf("two logins, the same cookie %s", a)
	}
	if with(a) != 200 || with(b) != 200 {
		t.Fatalf("the sessions do not work: %d, %d", with(a), with(b))
	}
	if r := srv.doHeader(t, "POST", "/v1/logout", "", http.Header{"Cookie": {a}}, nil); r.status != 204 {
		t.Errorf("logout: %d", r.status)
	}
	if with(a) != 401 {
		t.Errorf("the cookie after logout: %d, want 401", with(a))
	}
	if with(b) != 200 {
		t.Errorf("the other session after a logout: %d", with(b))
	}
	srv.restart(t)
	if with(b) != 401 {
		t.Errorf("a session after a restart: %d, want 401", with(b))
	}
	srv.kill(t)
	srv.flags = []string{"--token", token, "--session-ttl", "30m"}
	srv.start(t)
	maxAge = 1800
	login()
	if out := runServe(t, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--session-ttl", "0s"); !strings.Contains(out, "--session-ttl must be a positive duration") {
		t.Errorf("--session-ttl 0s: %s", out)
	}
}
