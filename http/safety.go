package httpapi

// Safety: the limits and checks every request passes besides the token
// (docs/operations.md, "Limits and safety"): browsers' cross-origin requests, response
// headers, content types and encodings, the body's size and read time, and
// the cap on concurrent streams.

import (
	"compress/gzip"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/queries"
)

// Defaults of Options (and of serve's flags).
const (
	DefaultMaxBody     = 64 << 20
	DefaultMaxStreams  = 256
	DefaultBodyTimeout = 2 * time.Minute
	// streamRetryAfter is the Retry-After of a refused stream, in seconds.
	streamRetryAfter = 5
)

// tokenEqual compares a presented token (or session) with the expected
// one in constant time, lengths included: both are hashed first, so the
// comparison does not stop early at a length mismatch either.
func tokenEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// secure sets the headers every response carries: no content sniffing (a
// problem+json or NDJSON body is never run as a script or page) and no
// framing (the console cannot be clickjacked).
func (s *server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// checkHost refuses (421), on a server without a token, every request
// whose Host is not loopback (localhost and *.localhost, 127.0.0.0/8,
// [::1], with or without a port, in any case) and not one of
// Options.AllowedHosts (--allowed-host): a web page whose name an
// attacker re-resolves to 127.0.0.1 (DNS rebinding) is same-origin with
// itself, so only the name it sends tells its requests apart. /healthz
// and the console's files are refused too: nothing legitimate reaches a
// loopback-only server under another name unless a flag says so, and a
// page must not even learn that the server is there. With a token, the
// token (which such a page does not have) protects every route but
// those, and any Host is served.
func (s *server) checkHost(next http.Handler) http.Handler {
	if s.opts.Token != "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			w.Header().Set("Connection", "close")
			problem(w, &queries.Error{Status: http.StatusMisdirectedRequest, Title: "host not allowed", Statement: -1,
				Detail: fmt.Sprintf("Host %q is not loopback: without --token the server answers only requests to localhost, 127.0.0.1 or [::1] "+
					"(a page on another name may be a DNS rebinding attack); name the host with --allowed-host, or set --token", r.Host)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a request's Host is loopback or allowed.
func (s *server) hostAllowed(hostport string) bool {
	host, port := splitHost(hostport)
	switch {
	case host == "":
		return false
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		ah, ap := splitHost(a)
		if ah == host && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// splitHost splits a Host header (or an --allowed-host) into its host,
// lower-cased, without brackets and without a trailing dot, and its port.
func splitHost(hostport string) (host, port string) {
	host = strings.ToLower(hostport)
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") &&
		(strings.HasPrefix(host, "[") || strings.Count(host, ":") == 1) {
		host, port = host[:i], host[i+1:]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(host, "."), port
}

// CheckAllowedHost validates an --allowed-host entry: a host name or IP
// address, with an optional port.
func CheckAllowedHost(h string) error {
	host, port := splitHost(h)
	if host == "" || strings.ContainsAny(host, " /\\@?#,") || strings.Contains(h, "://") {
		return fmt.Errorf("--allowed-host %q is not a host name (give a name such as streamsql.internal, optionally with :port)", h)
	}
	if port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("--allowed-host %q: bad port %q", h, port)
		}
	}
	return nil
}

// consoleCSP is the console pages' Content-Security-Policy: scripts,
// styles and connections from this origin only (CodeMirror inserts style
// elements, hence 'unsafe-inline' for styles), never framed.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// crossOrigin refuses browsers' cross-origin requests with unsafe methods
// (POST, PUT, PATCH, DELETE), /v1/login included, before the token is
// looked at: a page on another origin cannot drive the API with the
// console's session cookie, nor with a loopback server's openness.
// Requests without Sec-Fetch-Site and Origin (curl, clients) and the
// console's own (same-origin) requests pass (net/http's
// CrossOriginProtection).
func (s *server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			problem(w, &queries.Error{Status: 403, Title: "cross-origin request refused", Statement: -1,
				Detail: fmt.Sprintf("%s %s from a page of another origin (Origin %q, Sec-Fetch-Site %q): %v",
					r.Method, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), err)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowed lists the methods the API serves path with (the console's
// catch-all aside): a 405 names them, and a path with none is a 404.
func (s *server) allowed(path string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		rctx := chi.NewRouteContext()
		if s.router.Match(rctx, m, path) && rctx.RoutePattern() != "/*" {
			out = append(out, m)
		}
	}
	return out
}

// notRouted answers a request the API has no route for: 405 with Allow
// when the path is an endpoint with other methods, else 404.
func (s *server) notRouted(w http.ResponseWriter, r *http.Request) {
	if methods := s.allowed(r.URL.Path); len(methods) > 0 && !slices.Contains(methods, r.Method) {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		problem(w, &queries.Error{Status: 405, Title: "method not allowed", Statement: -1,
			Detail: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(methods, ", "))})
		return
	}
	problem(w, &queries.Error{Status: 404, Title: "not found", Detail: "no such endpoint: " + r.Method + " " + r.URL.Path, Statement: -1})
}

// param is a table or view name from the path, unescaped exactly once
// and normalised as SQL normalises it (planner.LookupName: lower-cased):
// chi routes on r.URL.RawPath when the path has escapes that its decoded
// form does not round-trip (such as %2F), and then leaves them in its
// parameters; otherwise it routes on r.URL.Path, already unescaped, and
// unescaping that again would turn /v1/tables/x%2541 into "xA".
func param(r *http.Request, key string) string {
	v := chi.URLParam(r, key)
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
	}
	return planner.LookupName(v)
}

// checkContentType refuses (415) a body whose media type is not one of
// allowed ("" stands for no Content-Type) or whose charset is not UTF-8:
// a CSV file or a multipart form posted by mistake is named, not parsed
// as something else.
func checkContentType(r *http.Request, what string, allowed ...string) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if slices.Contains(allowed, "") {
			return nil
		}
	}
	mt, params, err := mime.ParseMediaType(ct)
	list := strings.Join(slices.DeleteFunc(slices.Clone(allowed), func(s string) bool { return s == "" }), ", ")
	switch {
	case err != nil:
		return &queries.Error{Status: 415, Title: "unsupported media type", Statement: -1,
			Detail: fmt.Sprintf("Content-Type %q of %s: %v (send %s)", ct, what, err, list)}
	case !slices.Contains(allowed, mt):
		return &queries.Error{Status: 415, Title: "unsupported media type", Statement: -1,
			Detail: fmt.Sprintf("Content-Type %s is not accepted for %s (send %s)", mt, what, list)}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "us-ascii") {
		return &queries.Error{Status: 415, Title: "unsupported media type", Statement: -1,
			Detail: fmt.Sprintf("charset %s is not accepted for %s (send UTF-8)", cs, what)}
	}
	return nil
}

// Media types of request bodies. Raw SQL and rows are also taken as
// text/plain, application/octet-stream and
// application/x-www-form-urlencoded (what curl -d sends), and without a
// Content-Type.
var (
	sqlTypes  = []string{"", "application/sql", "text/plain", "application/json", "application/x-www-form-urlencoded", "application/octet-stream"}
	rowsTypes = []string{"", "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines",
		"application/json", "text/plain", "application/x-www-form-urlencoded", "application/octet-stream"}
)

// errTooLarge is the reading error of a decompressed body over the limit.
var errTooLarge = errors.New("decompressed body over the limit")

// capReader reads at most n bytes from r and fails with errTooLarge
// (without reading further) when there are more: a gzip bomb is
// decompressed no further than the limit.
type capReader struct {
	r io.Reader
	n int64 // bytes left under the limit
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	if c.n < 0 {
		return k, errTooLarge
	}
	return k, err
}

// bodyLimit is the largest body a request may have, as sent and
// decompressed, and the setting that says so (named in the 413).
type bodyLimit struct {
	n    int64
	name string
}

// maxBody is the limit of bodies of authenticated requests (--max-body).
func (s *server) maxBody() bodyLimit { return bodyLimit{s.opts.MaxBody, "--max-body"} }

// loginLimit is the limit of a POST /v1/login body, read before the
// client has proved anything: {"token": "..."} needs no more, and a
// client without the token cannot make the server hold more than this.
var loginLimit = bodyLimit{4 << 10, "the limit of /v1/login"}

// body returns r's body as it should be read: at most lim bytes as sent,
// and with Content-Encoding: gzip at most lim bytes decompressed. Another
// encoding is refused (415).
func (s *server) body(w http.ResponseWriter, r *http.Request, lim bodyLimit) (io.Reader, func(), error) {
	sent := http.MaxBytesReader(w, r.Body, lim.n)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return sent, func() {}, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(sent)
		if err != nil {
			return nil, nil, s.readError(err, true, lim)
		}
		return &capReader{r: zr, n: lim.n}, func() { zr.Close() }, nil
	default:
		return nil, nil, &queries.Error{Status: 415, Title: "unsupported media type", Statement: -1,
			Detail: fmt.Sprintf("Content-Encoding %q is not supported (send the body as is, or gzip)", enc)}
	}
}

// readError turns an error reading a body into its problem.
func (s *server) readError(err error, gzipped bool, lim bodyLimit) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &queries.Error{Status: 413, Title: "request too large", Detail: fmt.Sprintf("body is larger than the %d-byte limit (%s)", lim.n, lim.name), Statement: -1}
	case errors.Is(err, errTooLarge):
		return &queries.Error{Status: 413, Title: "request too large", Detail: fmt.Sprintf("decompressed body is larger than the %d-byte limit (%s)", lim.n, lim.name), Statement: -1}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &queries.Error{Status: 408, Title: "request timeout", Detail: fmt.Sprintf("the body did not arrive within %s (--body-timeout)", s.opts.BodyTimeout), Statement: -1}
	case gzipped && (errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF)):
		return &queries.Error{Status: 400, Title: "malformed request", Detail: "Content-Encoding gzip: body is not valid gzip: " + err.Error(), Statement: -1}
	}
	return &queries.Error{Status: 400, Title: "malformed request", Detail: "reading body: " + err.Error(), Statement: -1}
}

// longLived gives a long-lived request (a /changes stream, a checkpoint
// wait, a profile) one of the MaxStreams slots for as long as it runs;
// when none is free it answers 429 with Retry-After.
func (s *server) longLived(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.streams <- struct{}{}:
		default:
			w.Header().Set("Retry-After", fmt.Sprint(streamRetryAfter))
			problem(w, &queries.Error{Status: 429, Title: "too many streams", Statement: -1,
				Detail: fmt.Sprintf("%d streams (/changes, checkpoint waits, profiles) are open, the server's limit (--max-streams); retry in a few seconds", cap(s.streams))})
			return
		}
		defer func() {
			<-s.streams
			if s.opts.streamDone != nil {
				s.opts.streamDone()
			}
		}()
		next.ServeHTTP(w, r)
	})
}
