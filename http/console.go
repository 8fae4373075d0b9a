package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"

	"github.com/streamsql/streamsql/queries"
)

// sessionCookie is the console's session: with --token, POST /v1/login
// checks the token once and sets it, and the auth middleware accepts it in
// place of the Authorization header (EventSource cannot send headers).
const sessionCookie = "streamsql_session"

// session is the session cookie's value: an HMAC of a fixed label keyed
// by the token. It proves the token was given without being the token,
// survives restarts, and stops working when the token changes.
func (s *server) session() string {
	m := hmac.New(sha256.New, []byte(s.opts.Token))
	m.Write([]byte("streamsql console session v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// login answers POST /v1/login {"token": "..."}: 200 with the session
// cookie (HttpOnly, SameSite=Strict) when the token is right, 401 when not.
// Without a token configured it answers 200 and sets nothing.
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
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.session(), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, 200, map[string]any{"token_required": true})
}

// logout clears the session cookie.
func (s *server) logout(w http.ResponseWriter, _ *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// examples answers GET /v1/examples: the example queries and the SQL that
// creates the tables they read.
func (s *server) examples(w http.ResponseWriter, _ *http.Request) {
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
