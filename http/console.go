package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/streamsql/streamsql/queries"
)

// sessionCookie is the console's session: with --token, POST /v1/login
// checks the token once and sets it, and the auth middleware accepts it in
// place of the Authorization header (EventSource cannot send headers).
const sessionCookie = "streamsql_session"

// DefaultSessionTTL is how long a console session lasts (--session-ttl).
const DefaultSessionTTL = 12 * time.Hour

// maxSessions bounds the session table: a login beyond it ends the
// session closest to its expiry.
const maxSessions = 1024

// sessions are the console's logins: a random id per login, kept by its
// SHA-256 (a lookup's timing says nothing about the ids) with its expiry.
// They live in memory only: logout ends one at once, and a restart (the
// only way to change the token) ends them all, so the console logs in
// again.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu     sync.Mutex
	expiry map[[sha256.Size]byte]time.Time
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, expiry: map[[sha256.Size]byte]time.Time{}}
}

// create starts a session: its id and its expiry.
func (ss *sessions) create() (string, time.Time) {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := ss.now()
	exp := now.Add(ss.ttl)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var first [sha256.Size]byte // the session expiring first
	var firstExp time.Time
	for k, e := range ss.expiry {
		switch {
		case !now.Before(e):
			delete(ss.expiry, k)
		case firstExp.IsZero() || e.Before(firstExp):
			first, firstExp = k, e
		}
	}
	if len(ss.expiry) >= maxSessions {
		delete(ss.expiry, first)
	}
	ss.expiry[sha256.Sum256([]byte(id))] = exp
	return id, exp
}

// valid reports whether id is a session that has not expired or ended.
func (ss *sessions) valid(id string) bool {
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	e, ok := ss.expiry[k]
	if ok && !ss.now().Before(e) {
		delete(ss.expiry, k)
		return false
	}
	return ok
}

// end ends the session id (logout).
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	delete(ss.expiry, sha256.Sum256([]byte(id)))
	ss.mu.Unlock()
}

// login answers POST /v1/login {"token": "..."}: 200 with a new session
// cookie (HttpOnly, SameSite=Strict, Secure over TLS, expiring with the session) when the
// token is right, 401 when not. Without a token configured it answers 200
// and sets nothing. The body is read up to loginLimit only.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r, loginLimit)
	if err != nil {
		problem(w, err)
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		problem(w, &queries.Error{Status: 400, Title: "malformed request", Detail: `body must be {"token": "..."}: ` + err.Error(), Statement: -1})
		return
	}
	if s.opts.Token == "" {
		writeJSON(w, 200, map[string]any{"token_required": false})
		return
	}
	if !tokenEqual(req.Token, s.opts.Token) {
		problem(w, &queries.Error{Status: 401, Title: "unauthorized", Detail: "wrong token", Statement: -1})
		return
	}
	id, exp := s.sessions.create()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(s.sessions.ttl / time.Second), Expires: exp.UTC()})
	writeJSON(w, 200, map[string]any{"token_required": true, "expires": exp.UTC().Format(time.RFC3339)})
}

// logout ends the session of the request's cookie, if any, and clears it.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// examples answers GET /v1/examples: the example queries and the SQL that
// creates the tables they read.
func (s *server) examples(w http.ResponseWriter, _ *http.Request) {
	if err := s.e.WriteExampleFiles(); err != nil {
		s.log.Warn("writing the examples' files", "err", err)
	}
	writeJSON(w, 200, map[string]any{"tables_sql": queries.ExampleTablesSQL, "examples": queries.Examples()})
}

// console serves the console's files (GET and HEAD); API paths it does
// not know get the API's 404, or 405 when another method serves them.
// index.html is revalidated on every load; the other assets carry a
// content hash in their names and are cached. Every file carries the
// console's Content-Security-Policy.
func (s *server) console(files fs.FS) http.HandlerFunc {
	fsrv := http.FileServerFS(files)
	return func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, "/v1/") || p == "/v1" {
			s.notRouted(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", consoleCSP)
		if strings.HasPrefix(p, "/assets/") {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		fsrv.ServeHTTP(w, r)
	}
}
