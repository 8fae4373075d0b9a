package httpapi

// The console's API: the session cookie of --token, the console's files,
// the example queries and the plan as data.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

var consoleFiles = fstest.MapFS{
	"index.html":       {Data: []byte("<!doctype html><title>console</title>")},
	"assets/app-1.js":  {Data: []byte("console.log(1)")},
	"assets/app-1.css": {Data: []byte("body{}")},
}

// sessionOf is the session cookie a login answer sets, or nil.
func sessionOf(r resp) *http.Cookie {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}

// TestLoginCookie: a login with the token sets a session cookie (HttpOnly,
// SameSite=Strict, Path=/, Max-Age and Expires of the session's TTL) that
// stands in for the token until it expires, the console logs out, or the
// server restarts (with the same token or another); each login is a
// session of its own.
func TestLoginCookie(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	dir := t.TempDir()
	e := start(t, config{dir: dir, checkpoint: time.Second, opts: Options{Token: "s3cret", Web: consoleFiles, SessionTTL: time.Hour, now: clock}})
	noAuth := []string{"Authorization", ""}
	// The console's files need no token: it asks for one itself.
	if r := e.get("/", noAuth...); r.status != 200 || !strings.Contains(string(r.body), "console") {
		t.Fatalf("GET / without a token: %s", r)
	}
	e.problem(e.get("/v1/queries", noAuth...), 401)

	e.problem(e.do("POST", "/v1/login", "application/json", `{"token": "wrong"}`, noAuth...), 401, "wrong token")
	e.problem(e.do("POST", "/v1/login", "application/json", `{"token": "s3cret2"}`, noAuth...), 401)
	e.problem(e.do("POST", "/v1/login", "application/json", `not json`, noAuth...), 400)
	login := func() (*http.Cookie, string) {
		t.Helper()
		r := e.do("POST", "/v1/login", "application/json", `{"token": "s3cret"}`, noAuth...)
		if r.status != 200 {
			t.Fatalf("login with the token: %s", r)
		}
		session := sessionOf(r)
		if session == nil || session.Value == "" {
			t.Fatalf("login set no %s cookie: %v", sessionCookie, r.header["Set-Cookie"])
		}
		return session, sessionCookie + "=" + session.Value
	}
	session, cookie := login()
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" {
		t.Errorf("session cookie %q: want HttpOnly, SameSite=Strict, Path=/", session.Raw)
	}
	if session.MaxAge != 3600 || !session.Expires.Equal(clock().Add(time.Hour).Truncate(time.Second)) {
		t.Errorf("session cookie %q: want Max-Age=3600 and Expires in an hour", session.Raw)
	}
	if strings.Contains(session.Value, "s3cret") {
		t.Errorf("the session cookie holds the token: %q", session.Value)
	}
	authed := func(cookie string) int {
		t.Helper()
		return e.get("/v1/queries", "Authorization", "", "Cookie", cookie).status
	}
	// The cookie stands in for the header: GET, POST, the live endpoints.
	if s := authed(cookie); s != 200 {
		t.Errorf("/v1/queries with the session cookie: %d", s)
	}
	if r := e.do("POST", "/v1/sql", "application/sql", "SHOW TABLES", "Authorization", "", "Cookie", cookie); r.status != 200 {
		t.Errorf("POST /v1/sql with the session cookie: %s", r)
	}
	// A forged or stale cookie, and a wrong header next to a good cookie.
	e.problem(e.get("/v1/queries", "Authorization", "", "Cookie", sessionCookie+"=x"+session.Value), 401)
	e.problem(e.get("/v1/queries", "Authorization", "", "Cookie", sessionCookie+"=s3cret"), 401)
	e.problem(e.get("/v1/queries", "Authorization", "Bearer nope", "Cookie", cookie), 401)

	// Each login is its own session; logout ends the one it is sent with.
	_, cookie2 := login()
	if cookie2 == cookie {
		t.Errorf("two logins, one session: %s", cookie)
	}
	r := e.do("POST", "/v1/logout", "", "", "Authorization", "", "Cookie", cookie)
	if r.status != 204 || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d, Set-Cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
	if s := authed(cookie); s != 401 {
		t.Errorf("the cookie of a session logged out: %d, want 401", s)
	}
	if s := authed(cookie2); s != 200 {
		t.Errorf("another session after a logout: %d", s)
	}
	// Sessions expire.
	advance(time.Hour - time.Second)
	if s := authed(cookie2); s != 200 {
		t.Errorf("a session a second before it expires: %d", s)
	}
	advance(time.Second)
	if s := authed(cookie2); s != 401 {
		t.Errorf("an expired session: %d, want 401", s)
	}
	// A restart, with the same token or another, ends every session.
	_, cookie3 := login()
	if s := authed(cookie3); s != 200 {
		t.Errorf("a new session: %d", s)
	}
	e.close()
	e = start(t, config{dir: dir, checkpoint: time.Second, opts: Options{Token: "s3cret", now: clock}})
	if s := authed(cookie3); s != 401 {
		t.Errorf("a session after a restart: %d, want 401", s)
	}
	other := start(t, config{checkpoint: time.Second, opts: Options{Token: "other", now: clock}})
	other.problem(other.get("/v1/queries", "Authorization", "", "Cookie", cookie3), 401)

	// Without a token there is nothing to log in to.
	open := start(t, config{checkpoint: time.Second})
	r = open.do("POST", "/v1/login", "application/json", `{"token": ""}`)
	if m := open.ok(r); m["token_required"] != false || r.header.Get("Set-Cookie") != "" {
		t.Errorf("login without --token: %s (Set-Cookie %q)", r, r.header.Get("Set-Cookie"))
	}
}

// TestSessionTable: the table of sessions stays bounded; a login beyond
// it ends the session closest to its expiry, and expired ones go first.
func TestSessionTable(t *testing.T) {
	now := time.Unix(0, 0)
	ss := newSessions(time.Hour, func() time.Time { return now })
	first, _ := ss.create()
	now = now.Add(time.Minute)
	ids := []string{}
	for range maxSessions - 1 {
		id, _ := ss.create()
		ids = append(ids, id)
	}
	if !ss.valid(first) || len(ss.expiry) != maxSessions {
		t.Fatalf("%d sessions, first valid %v", len(ss.expiry), ss.valid(first))
	}
	last, _ := ss.create()
	if ss.valid(first) || !ss.valid(last) || !ss.valid(ids[0]) || len(ss.expiry) != maxSessions {
		t.Errorf("beyond the bound: first %v, last %v, second %v, %d sessions", ss.valid(first), ss.valid(last), ss.valid(ids[0]), len(ss.expiry))
	}
	now = now.Add(2 * time.Hour)
	ss.create()
	if len(ss.expiry) != 1 {
		t.Errorf("%d sessions after all but one expired", len(ss.expiry))
	}
}

func TestConsoleFiles(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Second, opts: Options{Web: consoleFiles}})
	r := e.get("/")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET /: %s (Content-Type %q, Cache-Control %q)", r, r.header.Get("Content-Type"), r.header.Get("Cache-Control"))
	}
	r = e.get("/assets/app-1.js")
	if r.status != 200 || !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Errorf("GET /assets/app-1.js: %s (Cache-Control %q)", r, r.header.Get("Cache-Control"))
	}
	// API paths the router lacks stay problem+json 404s (the console
	// falls back on them, e.g. polling results while /changes is absent).
	e.problem(e.get("/v1/queries/x/nothing"), 404, "no such endpoint")
	e.problem(e.get("/v1"), 404)
	e.problem(e.do("POST", "/index.html", "", ""), 404)
	if r := e.get("/no-such-file"); r.status != 404 {
		t.Errorf("GET /no-such-file: %s", r)
	}
}

func TestExamples(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.ok(e.get("/v1/examples"))
	tables, _ := m["tables_sql"].(string)
	if !strings.Contains(tables, "CREATE TABLE IF NOT EXISTS bid") {
		t.Fatalf("tables_sql: %q", tables)
	}
	list, _ := m["examples"].([]any)
	names := map[string]bool{}
	e.sql(tables)
	e.sql(tables) // IF NOT EXISTS: offering the tables twice is harmless
	for i, x := range list {
		ex := x.(map[string]any)
		name, title, sql := ex["name"].(string), ex["title"].(string), ex["sql"].(string)
		names[name] = true
		if title == "" || strings.HasPrefix(sql, "--") || !strings.Contains(strings.ToUpper(sql), "SELECT") {
			t.Errorf("example %s: title %q, sql %q", name, title, sql)
		}
		// Every example runs as a view over the tables offered with them.
		view := fmt.Sprintf("example%d", i)
		e.sql("CREATE VIEW " + view + " AS " + sql)
		e.ok(e.do("DELETE", "/v1/queries/"+view, "", ""))
	}
	for _, want := range []string{"nexmark/q5", "nexmark/q7", "tumble_max_price", "channel_stats"} {
		if !names[want] {
			t.Errorf("no example %s in %v", want, names)
		}
	}
}

func TestQueryGraph(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	withAgg(t, e)
	q := e.ok(e.get("/v1/queries/agg"))
	g, _ := q["graph"].(map[string]any)
	stages, _ := g["stages"].([]any)
	if len(stages) < 2 {
		t.Fatalf("graph: %v", q["graph"])
	}
	// One operator per line of the plan text, in the same order.
	var planOps []string
	for _, l := range strings.Split(q["plan"].(string), "\n") {
		if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "  output:") {
			planOps = append(planOps, strings.TrimSpace(l))
		}
	}
	stageLines := map[int64]string{} // "Stage 1 parallelism=1 <- stage 0 hash[0] append-only"
	for _, l := range strings.Split(q["plan"].(string), "\n") {
		var id int64
		if _, err := fmt.Sscanf(l, "Stage %d", &id); err == nil {
			stageLines[id] = l
		}
	}
	var ops []map[string]any
	for i, s := range stages {
		st := s.(map[string]any)
		if integer(t, st["id"]) != int64(i) || integer(t, st["parallelism"]) < 1 {
			t.Errorf("stage %d: %v", i, st)
		}
		inputs := st["inputs"].([]any)
		if i == 0 && len(inputs) != 0 || i > 0 && len(inputs) == 0 {
			t.Errorf("stage %d inputs: %v", i, inputs)
		}
		for _, in := range inputs {
			in := in.(map[string]any)
			if from := integer(t, in["from"]); from >= int64(i) || in["partition"] != "hash" && in["partition"] != "forward" {
				t.Errorf("stage %d input %v", i, in)
			}
			// The input's kind is the plan's, for the same edge.
			kind, _ := in["kind"].(string)
			if kind != "append-only" && kind != "upsert" && kind != "retract" || !strings.Contains(stageLines[int64(i)], fmt.Sprintf("<- stage %d ", integer(t, in["from"]))) || !strings.Contains(stageLines[int64(i)], kind) {
				t.Errorf("stage %d input %v: kind %q, plan line %q", i, in, kind, stageLines[int64(i)])
			}
		}
		if f, err := st["queue_fill"].(json.Number).Float64(); err != nil || f < 0 || f > 1 {
			t.Errorf("stage %d queue_fill %v", i, st["queue_fill"])
		}
		for _, o := range st["operators"].([]any) {
			ops = append(ops, o.(map[string]any))
		}
	}
	if len(ops) != len(planOps) {
		t.Fatalf("%d operators in the graph, %d in the plan:\n%s", len(ops), len(planOps), q["plan"])
	}
	for i, o := range ops {
		if o["explain"] != planOps[i] || !strings.HasPrefix(planOps[i], o["name"].(string)) {
			t.Errorf("operator %d: %v, plan line %q", i, o, planOps[i])
		}
	}
	first, last := ops[0], ops[len(ops)-1]
	if first["name"] != "Source" || integer(t, first["rows"]) != 4 {
		t.Errorf("source operator: %v, want 4 rows read", first)
	}
	if last["name"] != "Sink" || integer(t, last["rows"]) < 3 {
		t.Errorf("sink operator: %v, want at least the 3 result rows", last)
	}
	if integer(t, stages[0].(map[string]any)["rows_out"]) != 4 {
		t.Errorf("the source stage sent %v rows on, want 4", stages[0].(map[string]any)["rows_out"])
	}
	if k, _ := json.Marshal(q["key"]); string(k) != `["window_start","window_end","auction"]` {
		t.Errorf("key %s, want window_start, window_end, auction", k)
	}
	if q["restore"] != nil {
		t.Errorf("a running query reports restore progress: %v", q["restore"])
	}
}
