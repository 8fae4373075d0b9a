package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const sqlUsage = `usage: streamsql sql [flags] ['STATEMENTS']

Sends SQL to a server's POST /v1/sql and prints the results. Statements
come from the arguments (joined with spaces) or, without arguments, from
stdin; with a terminal on stdin and stdout and no arguments it is an
interactive shell (statements end with ';', \? lists its commands).

Output: --format table (aligned columns, the default on a terminal), json
(the server's answer as it is, the default otherwise: for scripts) or csv.
An error prints the server's message on stderr, with the statement's line
and a caret under the column when the server gives one, and exits 1.

--addr takes host:port, :port (127.0.0.1), http://host:port or
https://host:port (a URL may end in a path prefix, for a server behind a
reverse proxy). Defaults: $STREAMSQL_ADDR, $STREAMSQL_TOKEN.
`

const defaultAddr = "127.0.0.1:8080"

func (c *cli) sqlCmd(args []string) error {
	cmd := newCommand("sql", sqlUsage)
	fs := cmd.fs
	addr := fs.String("addr", defaultAddr, "the server: host:port, :port, http://host:port or https://host:port ($STREAMSQL_ADDR when not given)")
	token := fs.String("token", "", "bearer token ($STREAMSQL_TOKEN when not given)")
	format := fs.String("format", "", "output: table, json or csv (default table on a terminal, json otherwise)")
	expanded := fs.Bool("x", false, "table output as expanded rows: one line per column (the shell's \\x)")
	cacert := fs.String("cacert", "", "with https://, trust only the CA certificates in this PEM `file` (a self-signed server's own certificate, a private CA)")
	insecure := fs.Bool("insecure", false, "with https://, do not check the server's certificate (testing only)")
	history := fs.String("history", historyPath(c.getenv), "the shell's history `file` (\"\": none; default $STREAMSQL_HISTORY, else $XDG_STATE_HOME/streamsql/history, else ~/.streamsql_history)")
	rest, err := cmd.parse(c, args)
	if err != nil {
		return err
	}
	fromEnv := false
	if a := c.getenv("STREAMSQL_ADDR"); a != "" && !flagSet(fs, "addr") {
		*addr, fromEnv = a, true
	}
	if !flagSet(fs, "token") {
		*token = c.getenv("STREAMSQL_TOKEN")
	}
	base, err := parseAddr(*addr)
	if err != nil {
		if fromEnv {
			return cmd.fail("$STREAMSQL_ADDR: %w", err)
		}
		return cmd.fail("%w", err)
	}
	if *format != "" {
		if err := oneOf("format", *format, "table", "json", "csv"); err != nil {
			return cmd.fail("%w", err)
		}
	}
	if !strings.HasPrefix(base, "https://") && (*cacert != "" || *insecure) {
		return cmd.fail("--cacert and --insecure are for an https:// --addr, not %s", base)
	}
	if err := checkToken(*token); err != nil {
		return cmd.fail("%w", err)
	}
	cl, err := newClient(base, *token, *cacert, *insecure)
	if err != nil {
		return err
	}
	pr := &printer{out: c.stdout, format: *format, expanded: *expanded}
	if len(rest) == 0 && c.stdinTTY && c.stdoutTTY {
		if pr.format == "" {
			pr.format = "table"
		}
		return c.shell(cl, pr, *history)
	}
	if pr.format == "" {
		pr.format = "json"
		if c.stdoutTTY {
			pr.format = "table"
		}
	}
	text := strings.Join(rest, " ")
	if len(rest) == 0 {
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return fmt.Errorf("reading SQL from stdin: %w", err)
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		return cmd.fail("no SQL: give statements as an argument or on stdin")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.runSQL(ctx, cl, pr, text)
}

// runSQL sends text, prints the results or the error (errReported).
func (c *cli) runSQL(ctx context.Context, cl *client, pr *printer, text string) error {
	a, err := cl.exec(ctx, text)
	var p *problem
	if errors.As(err, &p) {
		writeProblem(c.stderr, p, text)
		return errReported
	}
	if err != nil {
		return err
	}
	return pr.print(a)
}

// flagSet reports whether flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// historyPath is the shell's default history file: $STREAMSQL_HISTORY,
// else $XDG_STATE_HOME/streamsql/history, else ~/.streamsql_history ("" if
// there is no home either).
func historyPath(getenv func(string) string) string {
	if p := getenv("STREAMSQL_HISTORY"); p != "" {
		return p
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "streamsql", "history")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".streamsql_history")
	}
	return ""
}

const addrForms = "use host:port, :port, http://host:port or https://host:port"

// parseAddr turns --addr into the server's base URL, without a trailing
// slash: host:port and :port (127.0.0.1) are http; a URL names its
// scheme, http or https, and may end in a path prefix. It resolves
// nothing: a malformed value is refused here, before any connection.
func parseAddr(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("--addr is empty: %s", addrForms)
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return "", fmt.Errorf("--addr %q: %v (%s)", s, err, addrForms)
		}
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			return "", fmt.Errorf("--addr %q: scheme %q: use http or https", s, u.Scheme)
		case u.User != nil:
			return "", fmt.Errorf("--addr %q: no user or password in the address: the token goes in --token or $STREAMSQL_TOKEN", s)
		case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
			return "", fmt.Errorf("--addr %q: no query or fragment in the address (%s)", s, addrForms)
		case u.Host == "":
			return "", fmt.Errorf("--addr %q: no host (%s)", s, addrForms)
		}
		if err := checkHost(u.Hostname()); err != nil {
			return "", fmt.Errorf("--addr %q: %w (%s)", s, err, addrForms)
		}
		if strings.HasSuffix(u.Host, ":") {
			return "", fmt.Errorf("--addr %q: empty port (%s)", s, addrForms)
		}
		if p := u.Port(); p != "" {
			if err := checkPort(p); err != nil {
				return "", fmt.Errorf("--addr %q: %w", s, err)
			}
		}
		if strings.Contains(u.Path, "//") || strings.Contains(u.Path, ":") {
			return "", fmt.Errorf("--addr %q: path %q is not a path prefix (%s)", s, u.Path, addrForms)
		}
		return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		return "", fmt.Errorf("--addr %q: %v (%s)", s, err, addrForms)
	}
	if err := checkPort(port); err != nil {
		return "", fmt.Errorf("--addr %q: %w", s, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if err := checkHost(host); err != nil {
		return "", fmt.Errorf("--addr %q: %w (%s)", s, err, addrForms)
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// checkHost accepts an IP address or a DNS name (letters, digits, '-',
// '_' and dots).
func checkHost(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	ok := h != "" && h[0] != '-' && h[0] != '.'
	for _, c := range []byte(h) {
		ok = ok && (c == '-' || c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z')
	}
	if !ok {
		return fmt.Errorf("host %q is neither a name nor an IP address", h)
	}
	return nil
}

// checkPort accepts a port number, 1 to 65535 (no service names).
func checkPort(p string) error {
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || p[0] == '+' {
		if p == "" {
			return errors.New("empty port")
		}
		return fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return nil
}

// client sends SQL to one server.
type client struct {
	base, token string
	hc          *http.Client
}

// newClient is a client of base; with https, cacert (a PEM file) replaces
// the system's CAs, and insecure skips the certificate check.
func newClient(base, token, cacert string, insecure bool) (*client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if strings.HasPrefix(base, "https://") {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
		if cacert != "" {
			b, err := os.ReadFile(cacert)
			if err != nil {
				return nil, fmt.Errorf("--cacert: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", cacert)
			}
			cfg.RootCAs = pool
		}
		tr.TLSClientConfig = cfg
	}
	return &client{base: base, token: token, hc: &http.Client{Transport: tr}}, nil
}

// answer is a 200 from POST /v1/sql: the body as sent and its results.
type answer struct {
	raw     []byte
	results []result
}

// result is one statement's result; Rows are JSON objects whose members
// are in Columns' order.
type result struct {
	Statement int               `json:"statement"`
	Kind      string            `json:"kind"`
	Name      string            `json:"name"`
	Columns   []string          `json:"columns"`
	Rows      []json.RawMessage `json:"rows"`
}

// problem is the server's application/problem+json error. Line and
// Column (1-based, 0 when absent) are in the request's text.
type problem struct {
	Status    int    `json:"status"`
	Title     string `json:"title"`
	Detail    string `json:"detail"`
	Statement *int   `json:"statement"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
}

func (p *problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// exec posts text to /v1/sql. A server error is a *problem.
func (cl *client) exec(ctx context.Context, text string) (*answer, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", cl.base+"/v1/sql", strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/sql")
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (is a server running there? streamsql serve starts one; --addr names another)", err)
		}
		if errors.Is(err, context.Canceled) {
			return nil, errors.New("canceled (statements the server had begun may have been applied)")
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s/v1/sql: %w", cl.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		var p problem
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") && json.Unmarshal(body, &p) == nil && p.Detail != "" {
			if p.Status == 0 {
				p.Status = resp.StatusCode
			}
			return nil, &p
		}
		return nil, fmt.Errorf("%s/v1/sql answered %s: %s", cl.base, resp.Status, snippet(body))
	}
	a := &answer{raw: body}
	var out struct {
		Results []result `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%s/v1/sql answered 200 with a body that is not its JSON (%v): %s", cl.base, err, snippet(body))
	}
	a.results = out.Results
	return a, nil
}

// snippet is the start of a body, for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
