package httpapi

// docs/openapi.yaml against the server: the file is a valid OpenAPI 3
// document (kin-openapi), it has every route the router serves with the
// same methods and no path the router does not serve, and real answers of
// the server (and the requests that got them) match its schemas.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"
)

const openAPIFile = "../docs/openapi.yaml"

func init() {
	// Bodies kin-openapi has no decoder for: SQL is text, and an NDJSON
	// body is validated line by line against the media type's schema
	// (the schema of one line, as docs/openapi.yaml says).
	openapi3filter.RegisterBodyDecoder("application/sql", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", ndjsonDecoder)
}

// ndjsonDecoder checks every line of body against schema and returns the
// first line's value (validated again by the caller).
func ndjsonDecoder(body io.Reader, _ http.Header, schema *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	var first any
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		n++
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("NDJSON line %d: %w", n, err)
		}
		if err := schema.Value.VisitJSON(v); err != nil {
			return nil, fmt.Errorf("NDJSON line %d: %w", n, err)
		}
		if n == 1 {
			first = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("empty NDJSON body")
	}
	return first, nil
}

// loadOpenAPI loads and validates docs/openapi.yaml.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIFile)
	if err != nil {
		t.Fatalf("%s: %v", openAPIFile, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI 3 document: %v", openAPIFile, err)
	}
	return doc
}

// consoleFS stands in for the console's built files.
var consoleFS = fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>streamsql</title>")}}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// routeKey writes a chi pattern or an OpenAPI path one way: parameters
// as {}, and chi's trailing wildcard (/debug/pprof/*, the console's /*)
// as the one parameter OpenAPI gives it.
func routeKey(p string) string {
	p = pathParam.ReplaceAllString(p, "{}")
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*") + "{}"
	}
	return p
}

func TestOpenAPIValid(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.Paths.Len() == 0 {
		t.Fatal("no paths")
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Summary == "" {
				t.Errorf("%s %s has no summary", method, path)
			}
			if op.Responses.Len() == 0 {
				t.Errorf("%s %s has no responses", method, path)
			}
		}
	}
}

// TestOpenAPIRoutes walks the real server's router and the file: every
// route is in the file with the same methods, and every path of the file
// is a route.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	e := start(t, config{opts: Options{Web: consoleFS}})
	served := map[string][]string{} // routeKey -> methods
	patterns := map[string]string{} // routeKey -> chi pattern, for messages
	err := chi.Walk(e.h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		k := routeKey(route)
		served[k] = append(served[k], method)
		patterns[k] = route
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	paths := map[string]string{}
	var empties []string // paths ending in "/": the empty case of a wildcard route
	for path, item := range doc.Paths.Map() {
		if strings.HasSuffix(path, "/") {
			empties = append(empties, path)
			continue
		}
		k := routeKey(path)
		if other, dup := paths[k]; dup {
			t.Errorf("%s has %s and %s: the same route", openAPIFile, other, path)
		}
		paths[k] = path
		for method := range item.Operations() {
			documented[k] = append(documented[k], method)
		}
	}
	for _, path := range empties {
		// "/" and "/debug/pprof/": OpenAPI's path parameters cannot be
		// empty, so the empty case of chi's trailing wildcard is a path of
		// its own, with methods the wildcard route serves.
		methods := slices.Collect(maps.Keys(doc.Paths.Find(path).Operations()))
		served, ok := served[path+"{}"]
		if !ok {
			t.Errorf("%s has %s, but the server has no route %s*", openAPIFile, path, path)
			continue
		}
		for _, m := range methods {
			if !slices.Contains(served, m) {
				t.Errorf("%s has %s %s, which the server does not answer (it answers %v)", openAPIFile, m, path, served)
			}
		}
	}
	keys := func(m map[string][]string) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, k := range keys(served) {
		methods := served[k]
		slices.Sort(methods)
		doc, ok := documented[k]
		if !ok {
			t.Errorf("the server routes %s %s, which %s does not have", strings.Join(methods, ","), patterns[k], openAPIFile)
			continue
		}
		slices.Sort(doc)
		if !slices.Equal(methods, doc) {
			t.Errorf("%s: the server answers %v, %s documents %v", patterns[k], methods, openAPIFile, doc)
		}
	}
	for _, k := range keys(documented) {
		if _, ok := served[k]; !ok {
			t.Errorf("%s has %v %s, which the server does not route", openAPIFile, documented[k], paths[k])
		}
	}
	if len(served) < 20 {
		t.Fatalf("chi.Walk found %d routes: the walk did not see the router", len(served))
	}
}

// apiCheck sends requests to a real server and validates each request
// and its answer against docs/openapi.yaml.
type apiCheck struct {
	t      *testing.T
	e      *env
	router routers.Router
	opts   *openapi3filter.Options
	seen   map[string]bool // "METHOD path status" checked
}

func newAPICheck(t *testing.T, e *env) *apiCheck {
	doc := loadOpenAPI(t)
	doc.Servers = openapi3.Servers{{URL: e.url}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &apiCheck{t: t, e: e, router: router, seen: map[string]bool{},
		opts: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}}
}

// call sends the request, checks that its status is want, validates
// request and answer, and returns the answer's body.
func (c *apiCheck) call(method, path, ctype, body string, want int) []byte {
	c.t.Helper()
	req, err := http.NewRequest(method, c.e.url+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, got, want)
	}
	c.validate(req, body, resp.StatusCode, resp.Header, got)
	return got
}

// validate checks the answer, and for an answer below 400 the request
// too (a 4xx answers a request meant to be wrong).
func (c *apiCheck) validate(req *http.Request, body string, status int, header http.Header, got []byte) {
	c.t.Helper()
	what := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.RequestURI(), status)
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Errorf("%s: no route in %s: %v", what, openAPIFile, err)
		return
	}
	c.seen[fmt.Sprintf("%s %s %d", req.Method, route.Path, status)] = true
	req.Body = io.NopCloser(strings.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: c.opts}
	ctx := context.Background()
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && status < 400 {
		c.t.Errorf("%s: the request does not match %s: %v", what, openAPIFile, err)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: c.opts}
	out.SetBodyBytes(got)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		c.t.Errorf("%s: the answer does not match %s: %v\nbody: %.600s", what, openAPIFile, err, got)
	}
}

// TestOpenAPIResponses validates real requests and answers of every
// route but the CPU profile and trace (which take seconds) against the
// file's schemas and status codes.
func TestOpenAPIResponses(t *testing.T) {
	// Checkpoints only when asked (committed results need them).
	e := start(t, config{checkpoint: time.Hour, opts: Options{Web: consoleFS}})
	c := newAPICheck(t, e)
	const sqlType, ndjson = "application/sql", "application/x-ndjson"

	c.call("GET", "/healthz", "", "", 200)
	c.call("GET", "/", "", "", 200)
	c.call("HEAD", "/", "", "", 200)
	c.call("HEAD", "/index.html", "", "", 200)
	c.call("GET", "/nope.js", "", "", 404)
	c.call("POST", "/v1/login", "application/json", `{"token": ""}`, 200)
	c.call("POST", "/v1/logout", "", "", 204)

	c.call("POST", "/v1/sql", sqlType, `
CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, channel VARCHAR(32), ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1s"}';
CREATE VIEW per_auction AS SELECT window_start, window_end, auction, COUNT(*) AS bids, SUM(price) AS volume
  FROM bids GROUP BY TUMBLE(ts, '10s'), auction`, 200)
	c.call("POST", "/v1/sql", "application/json", `{"sql": "SHOW TABLES; DESCRIBE bids; EXPLAIN per_auction"}`, 200)
	c.call("POST", "/v1/sql", sqlType, "SELEC 1", 400)
	c.call("POST", "/v1/sql", sqlType, "CREATE VIEW bad AS SELECT nope FROM bids", 422)
	c.call("POST", "/v1/sql", "text/csv", "SHOW TABLES", 415)

	c.call("POST", "/v1/tables/bids/rows", ndjson, `{"auction": 1, "price": 100, "channel": "a", "ts": "2024-01-01T00:00:01.000Z"}
{"auction": 1, "price": 250, "ts": 1704067203000}
{"auction": 2, "price": 7, "ts": "2024-01-01T00:00:25.000Z"}
`, 200)
	c.call("POST", "/v1/tables/bids/rows", "application/json", `[{"auction": 3, "price": 1, "ts": "2024-01-01T00:00:26.000Z"}]`, 200)
	c.call("POST", "/v1/tables/bids/rows", ndjson, `{"auction": "x", "price": 1, "ts": 0}`, 400)
	c.call("POST", "/v1/tables/nope/rows", ndjson, `{"a": 1}`, 404)

	c.call("POST", "/v1/checkpoints", "", "", 200)
	c.call("POST", "/v1/checkpoints?query=per_auction&timeout=30s", "", "", 200)
	c.call("POST", "/v1/checkpoints?timeout=soon", "", "", 400)
	c.call("POST", "/v1/checkpoints?query=nope", "", "", 404)

	c.call("GET", "/v1/tables", "", "", 200)
	c.call("GET", "/v1/tables/bids", "", "", 200)
	c.call("GET", "/v1/tables/nope", "", "", 404)
	c.call("GET", "/v1/queries", "", "", 200)
	c.call("GET", "/v1/queries/per_auction", "", "", 200)
	c.call("GET", "/v1/queries/nope", "", "", 404)
	c.call("GET", "/v1/queries/per_auction/checkpoints", "", "", 200)
	c.call("GET", "/v1/queries/per_auction/metrics", "", "", 200)
	rows := c.call("GET", "/v1/queries/per_auction/results", "", "", 200)
	if !bytes.Contains(rows, []byte(`"volume":350`)) {
		t.Errorf("results lack auction 1's window (volume 350): %s", rows)
	}
	c.call("GET", "/v1/queries/per_auction/results?consistency=latest&format=ndjson", "", "", 200)
	c.call("GET", "/v1/queries/per_auction/results?format=csv", "", "", 200)
	c.call("GET", "/v1/queries/per_auction/results?consistency=soon", "", "", 400)
	c.call("GET", "/v1/queries/per_auction/changes?from=x", "", "", 400)
	c.call("POST", "/v1/sql", sqlType, "SELECT * FROM per_auction WHERE bids > 1", 200)

	c.call("GET", "/v1/examples", "", "", 200)
	c.call("GET", "/metrics", "", "", 200)
	c.call("GET", "/debug/pprof/", "", "", 200)
	c.call("GET", "/debug/pprof/heap?debug=1", "", "", 200)
	c.call("GET", "/debug/pprof/cmdline", "", "", 200)
	c.call("GET", "/debug/pprof/symbol", "", "", 200)
	c.call("POST", "/debug/pprof/symbol", "text/plain", "0x1", 200)

	c.changes("/v1/queries/per_auction/changes?snapshot=true")

	c.call("POST", "/v1/queries/per_auction/stop", "", "", 200)
	c.call("POST", "/v1/queries/per_auction/resume", "", "", 200)
	c.call("DELETE", "/v1/queries/per_auction", "", "", 200)
	c.call("DELETE", "/v1/queries/per_auction", "", "", 404)

	// Every documented operation but the long ones was called.
	doc := loadOpenAPI(t)
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if path == "/debug/pprof/profile" || path == "/debug/pprof/trace" {
				continue
			}
			called := false
			for k := range c.seen {
				if strings.HasPrefix(k, method+" "+path+" ") {
					called = true
				}
			}
			if !called {
				t.Errorf("%s %s: no call checked its answer", method, path)
			}
		}
	}
}

// changes reads a /changes stream up to its snapshot_end and validates
// the request, the status and every record read against the file.
func (c *apiCheck) changes(path string) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.e.url+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		c.t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	var lines bytes.Buffer
	types := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines.Write(sc.Bytes())
		lines.WriteByte('\n')
		var rec struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			c.t.Fatalf("GET %s: a line is not JSON: %v: %s", path, err, sc.Bytes())
		}
		types[rec.Type]++
		if rec.Type == "snapshot_end" {
			break
		}
	}
	if types["schema"] != 1 || types["snapshot"] == 0 || types["snapshot_end"] != 1 {
		c.t.Fatalf("GET %s: records %v, want a schema, snapshots and a snapshot_end", path, types)
	}
	u, _ := url.Parse(c.e.url + path)
	c.validate(&http.Request{Method: "GET", URL: u, Header: http.Header{}}, "", resp.StatusCode, resp.Header, lines.Bytes())
}
