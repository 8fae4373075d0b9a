package main

// The tests in this file run the built binary: help and exit codes,
// version, the sql command against a real server (plain and HTTPS), and
// the interactive shell through a pseudo-terminal.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamsql/streamsql/internal/gobin"
)

var streamsqlBin = &gobin.Binary{Pkg: "github.com/streamsql/streamsql/cmd/streamsql", Env: "STREAMSQL_BIN"}

func TestMain(m *testing.M) {
	code := m.Run()
	streamsqlBin.Cleanup()
	os.Exit(code)
}

// failGuard bounds every wait of these tests: reaching it fails the test
// (a hung process), it is never what a test measures.
const failGuard = 2 * time.Minute

func binary(t *testing.T) string {
	t.Helper()
	p, err := streamsqlBin.Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs the binary with args and env added, stdin from stdin; it
// returns the exit code, stdout and stderr.
func runBin(t *testing.T, bin string, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(testEnv(t), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("streamsql %q still running after %v", args, failGuard)
	case err == nil:
		return 0, out.String(), errb.String()
	case !errors.As(err, &ee):
		t.Fatalf("streamsql %q: %v", args, err)
	}
	return ee.ExitCode(), out.String(), errb.String()
}

// testEnv is the environment without the variables the CLI reads, and a
// history file of the test's own.
func testEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STREAMSQL_") {
			env = append(env, kv)
		}
	}
	return append(env, "STREAMSQL_HISTORY="+filepath.Join(t.TempDir(), "history"))
}

// TestHelp: every command's --help and -h, and help <command>, print its
// usage on stdout and exit 0; an unknown command or flag exits 2 with the
// usage on stderr.
func TestHelp(t *testing.T) {
	bin := binary(t)
	for _, name := range []string{"serve", "sql", "bench", "version"} {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			code, out, errs := runBin(t, bin, nil, "", args...)
			if code != 0 || !strings.HasPrefix(out, "usage: streamsql "+name) || errs != "" {
				t.Errorf("streamsql %q: exit %d, stdout %q, stderr %q; want exit 0 and the usage on stdout", args, code, out, errs)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errs := runBin(t, bin, nil, "", args...)
		if code != 0 || !strings.HasPrefix(out, "usage: streamsql <command>") || !strings.Contains(out, "version") || errs != "" {
			t.Errorf("streamsql %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for _, c := range []struct {
		args       []string
		want, head string
	}{
		{nil, "usage: streamsql <command>", "usage: streamsql <command>"},
		{[]string{"nope"}, `unknown command "nope"`, "usage: streamsql <command>"},
		{[]string{"sql", "--nope"}, "flag provided but not defined: -nope", "usage: streamsql sql"},
		{[]string{"bench", "--nope"}, "flag provided but not defined: -nope", "usage: streamsql bench"},
		{[]string{"serve", "--nope"}, "flag provided but not defined: -nope", "usage: streamsql serve"},
		{[]string{"version", "--nope"}, "flag provided but not defined: -nope", "usage: streamsql version"},
		{[]string{"serve", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together", "usage: streamsql serve"},
		{[]string{"serve", "--addr", "127.0.0.1"}, "missing port in address", "usage: streamsql serve"},
		{[]string{"sql", "--addr", "http://127.0.0.1:99999", "SHOW TABLES"}, `port "99999" is not a number from 1 to 65535`, "usage: streamsql sql"},
	} {
		code, out, errs := runBin(t, bin, nil, "", c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) || !strings.Contains(errs, c.head) {
			t.Errorf("streamsql %q: exit %d, stdout %q, stderr %q; want exit 2, %q and the usage on stderr", c.args, code, out, errs, c.want)
		}
	}
}

// TestVersion: version and --version print the module version and, for a
// go build in a git checkout, the commit checked out.
func TestVersion(t *testing.T) {
	// A build of its own with -buildvcs=true: GOFLAGS may turn stamping off.
	bin := filepath.Join(t.TempDir(), "streamsql")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	code, out, errs := runBin(t, bin, nil, "", "version")
	if code != 0 || errs != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errs)
	}
	if _, again, _ := runBin(t, bin, nil, "", "--version"); again != out {
		t.Errorf("--version printed %q, version %q", again, out)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !regexp.MustCompile(`^streamsql (v\S+|\(devel\))$`).MatchString(lines[0]) || !strings.HasPrefix(lines[len(lines)-2], "go:       go1.") {
		t.Fatalf("version printed:\n%s", out)
	}
	// Go records the commit when the module's root holds a .git directory
	// (a clone; not a git worktree, whose .git is a file) and git runs.
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(filepath.Dir(strings.TrimSpace(string(root))), ".git"))
	head, gitErr := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil || !fi.IsDir() || gitErr != nil {
		if lines[1] != "commit:   unknown (not recorded in this build)" {
			t.Errorf("no git checkout Go reads (.git: %v, git: %v), yet version printed:\n%s", err, gitErr, out)
		}
		return
	}
	if want := "commit:   " + strings.TrimSpace(string(head)) + " ("; !strings.HasPrefix(lines[1], want) {
		t.Errorf("version's commit line %q, want it to start with %q", lines[1], want)
	}
}

// testServer is a `streamsql serve` process on 127.0.0.1 and a port of its
// choosing.
type testServer struct {
	addr string // host:port
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
}

// startTestServer starts the binary's server on a fresh data directory with
// flags added and returns once it logged that it serves (it listens before
// that line, so connections are accepted from then on).
func startTestServer(t *testing.T, bin string, flags ...string) *testServer {
	t.Helper()
	s := &testServer{}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data")}, flags...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = testEnv(t)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		addrRE := regexp.MustCompile(`msg="streamsql serving" addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
		close(addrc)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(failGuard):
			s.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			s.mu.Lock()
			t.Logf("server log:\n%s", s.log.String())
			s.mu.Unlock()
		}
	})
	select {
	case a, ok := <-addrc:
		if !ok {
			t.Fatalf("server exited before serving; log:\n%s", s.logText())
		}
		s.addr = a
	case <-time.After(failGuard):
		t.Fatalf("server not serving after %v; log:\n%s", failGuard, s.logText())
	}
	return s
}

func (s *testServer) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

const createBids = `CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, channel VARCHAR(32), ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW per_auction AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction;`

// TestSQL: the sql command against a real server: --addr as a URL,
// host:port, :port and $STREAMSQL_ADDR; tables, CSV and the server's JSON;
// SQL on stdin; an error printed once with its line and a caret, exit 1.
func TestSQL(t *testing.T) {
	bin := binary(t)
	srv := startTestServer(t, bin)
	_, port, _ := net.SplitHostPort(srv.addr)
	url := "http://" + srv.addr

	code, out, errs := runBin(t, bin, nil, "", "sql", "--addr", url, "--format", "table", createBids+"\nSHOW TABLES")
	want := `CREATE TABLE bids
CREATE VIEW per_auction

 name        | type  | engine
-------------+-------+---------
 bids        | table | http
 per_auction | view  | results
(2 rows)
`
	if code != 0 || out != want || errs != "" {
		t.Fatalf("sql --addr %s: exit %d, stderr %q, stdout\n%s\nwant\n%s", url, code, errs, out, want)
	}
	// Flags after the SQL; host:port, :port, the environment.
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"sql", "SHOW TABLES", "--format", "csv", "--addr", srv.addr}},
		{nil, []string{"sql", "--addr", ":" + port, "--format", "csv", "SHOW TABLES"}},
		{[]string{"STREAMSQL_ADDR=" + url}, []string{"sql", "--format", "csv", "SHOW TABLES"}},
	} {
		code, out, errs := runBin(t, bin, c.env, "", c.args...)
		if want := "name,type,engine\r\nbids,table,http\r\nper_auction,view,results\r\n"; code != 0 || out != want || errs != "" {
			t.Errorf("%v %q: exit %d, stdout %q, stderr %q; want %q", c.env, c.args, code, out, errs, want)
		}
	}
	// Not a terminal: JSON by default, the server's answer; SQL on stdin.
	code, out, errs = runBin(t, bin, nil, "DESCRIBE bids;\nSHOW TABLES;\n", "sql", "--addr", url)
	var body struct {
		Results []struct {
			Kind    string           `json:"kind"`
			Columns []string         `json:"columns"`
			Rows    []map[string]any `json:"rows"`
		} `json:"results"`
	}
	if code != 0 || errs != "" || json.Unmarshal([]byte(out), &body) != nil || len(body.Results) != 2 || body.Results[0].Kind != "describe" || len(body.Results[1].Rows) != 2 {
		t.Errorf("sql with SQL on stdin: exit %d, stderr %q, stdout %s", code, errs, out)
	}

	// An error: the server's message once, the line and a caret under the
	// column it names, nothing on stdout, exit 1.
	bad := "CREATE VIEW v AS SELECT auction,\n    nope FROM bids GROUP BY auction"
	for _, format := range []string{"table", "json", "csv"} {
		code, out, errs = runBin(t, bin, nil, "", "sql", "--addr", url, "--format", format, bad)
		m := regexp.MustCompile(`^ERROR (\d{3}): (statement 0: .*nope.*)\n(LINE 2: )(.*)\n( *)\^\n$`).FindStringSubmatch(errs)
		if code != 1 || out != "" || m == nil {
			t.Fatalf("--format %s, an unknown column: exit %d, stdout %q, stderr\n%s\nwant exit 1, the message, LINE 2 and a caret", format, code, out, errs)
		}
		if m[4] != "    nope FROM bids GROUP BY auction" || len(m[5]) != len(m[3])+strings.Index(m[4], "nope") {
			t.Errorf("the caret is not under nope:\n%s", errs)
		}
		if strings.Count(errs, m[2]) != 1 || strings.Contains(errs, "Bad Request") || strings.Contains(errs, "Unprocessable") || strings.Contains(errs, "{") {
			t.Errorf("the error is not printed once, alone:\n%s", errs)
		}
	}
	// A syntax error on the third line.
	code, _, errs = runBin(t, bin, nil, "", "sql", "--addr", url, "SHOW TABLES;\nSHOW TABLES;\nSELEC 1")
	if code != 1 || !regexp.MustCompile(`^ERROR 400: .*\nLINE 3: SELEC 1\n {8,}\^\n$`).MatchString(errs) {
		t.Errorf("a syntax error: exit %d, stderr\n%s", code, errs)
	}
	// Nobody listening: exit 1, saying so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	code, out, errs = runBin(t, bin, nil, "", "sql", "--addr", closed, "SHOW TABLES")
	if code != 1 || out != "" || !strings.Contains(errs, "connection refused") || !strings.Contains(errs, "is a server running there?") {
		t.Errorf("no server: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost and its key, and returns their paths.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "streamsql test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestTLS: serve --tls-cert --tls-key serves HTTPS; sql reaches it with
// --cacert or --insecure and refuses an unknown certificate; bad
// certificate and key files are refused at start, naming the file.
func TestTLS(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	srv := startTestServer(t, bin, "--tls-cert", cert, "--tls-key", key)
	url := "https://" + srv.addr
	if !strings.Contains(srv.logText(), "url="+url) {
		t.Errorf("the log does not say https:\n%s", srv.logText())
	}
	for _, args := range [][]string{
		{"sql", "--addr", url, "--cacert", cert, "--format", "csv", "SHOW TABLES"},
		{"sql", "--addr", url, "--insecure", "--format", "csv", "SHOW TABLES"},
	} {
		code, out, errs := runBin(t, bin, nil, "", args...)
		if code != 0 || out != "name,type,engine\r\n" || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	code, out, errs := runBin(t, bin, nil, "", "sql", "--addr", url, "SHOW TABLES")
	if code != 1 || out != "" || !strings.Contains(errs, "certificate") {
		t.Errorf("an unknown certificate: exit %d, stdout %q, stderr %q; want exit 1 naming the certificate", code, out, errs)
	}
	code, _, errs = runBin(t, bin, nil, "", "sql", "--addr", "http://"+srv.addr, "SHOW TABLES")
	if code != 1 || !strings.Contains(errs, "400") {
		t.Errorf("http to an https server: exit %d, stderr %q", code, errs)
	}

	// With a token: sql sends it; the console's session cookie is Secure.
	const token = "tls-test-token-0123456789"
	srv = startTestServer(t, bin, "--tls-cert", cert, "--tls-key", key, "--token", token)
	url = "https://" + srv.addr
	code, out, errs = runBin(t, bin, []string{"STREAMSQL_TOKEN=" + token}, "", "sql", "--addr", url, "--cacert", cert, "--format", "csv", "SHOW TABLES")
	if code != 0 || out != "name,type,engine\r\n" {
		t.Errorf("sql with $STREAMSQL_TOKEN over https: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runBin(t, bin, nil, "", "sql", "--addr", url, "--cacert", cert, "SHOW TABLES")
	if code != 1 || !strings.HasPrefix(errs, "ERROR 401: ") {
		t.Errorf("sql without the token: exit %d, stderr %q", code, errs)
	}
	pool := x509.NewCertPool()
	pemBytes, err := os.ReadFile(cert)
	if err != nil || !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("reading %s: %v", cert, err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: failGuard}
	resp, err := hc.Post(url+"/v1/login", "application/json", strings.NewReader(`{"token": "`+token+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Header.Get("Set-Cookie"); resp.StatusCode != 200 || !strings.Contains(c, "; Secure") || !strings.Contains(c, "HttpOnly") {
		t.Errorf("login over https: %s, Set-Cookie %q; want a Secure cookie", resp.Status, c)
	}

	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a PEM file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, otherKey := writeSelfSigned(t, t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", filepath.Join(dir, "missing.pem"), "--tls-key", key}, "--tls-cert: open " + filepath.Join(dir, "missing.pem") + ": no such file"},
		{[]string{"--tls-cert", cert, "--tls-key", filepath.Join(dir, "missing.pem")}, "--tls-key: open " + filepath.Join(dir, "missing.pem")},
		{[]string{"--tls-cert", garbage, "--tls-key", key}, "--tls-cert " + garbage + ": no PEM block of type CERTIFICATE"},
		{[]string{"--tls-cert", cert, "--tls-key", garbage}, "--tls-key " + garbage + ": no PEM block of type PRIVATE KEY"},
		{[]string{"--tls-cert", key, "--tls-key", key}, "--tls-cert " + key + ": no PEM block of type CERTIFICATE"},
		{[]string{"--tls-cert", cert, "--tls-key", otherKey}, "--tls-cert " + cert + " with --tls-key " + otherKey + ": tls: private key does not match public key"},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data")}, c.args...)
		code, _, errs := runBin(t, bin, nil, "", args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("serve %q: exit %d, stderr %q; want exit 1 and %q", c.args, code, errs, c.want)
		}
	}
	// TLS does not lift the bind rule.
	code, _, errs = runBin(t, bin, nil, "", "serve", "--addr", "0.0.0.0:0", "--data", filepath.Join(t.TempDir(), "data"), "--tls-cert", cert, "--tls-key", key)
	if code != 1 || !strings.Contains(errs, "listens on every interface, not only loopback: set --token") {
		t.Errorf("serve on 0.0.0.0 with TLS and no token: exit %d, stderr %q", code, errs)
	}
}

// terminal is the reading side of a pseudo-terminal: everything the
// program wrote, escape sequences and carriage returns removed.
type terminal struct {
	t    *testing.T
	f    *os.File
	mu   sync.Mutex
	buf  strings.Builder
	seen int // expect looks after this offset
	more chan struct{}
	done chan struct{}
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\r`)

func newTerminal(t *testing.T, f *os.File) *terminal {
	term := &terminal{t: t, f: f, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(term.done)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			term.mu.Lock()
			term.buf.Write(b[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return term
}

func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return ansiRE.ReplaceAllString(term.buf.String(), "")
}

// expect waits until the output after the last match holds want and
// returns the output from there up to and including it.
func (term *terminal) expect(want string) string {
	term.t.Helper()
	guard := time.After(failGuard)
	for {
		s := term.screen()
		if i := strings.Index(s[term.seen:], want); i >= 0 {
			got := s[term.seen : term.seen+i+len(want)]
			term.seen += i + len(want)
			return got
		}
		select {
		case <-term.more:
		case <-term.done:
			if s := term.screen(); !strings.Contains(s[term.seen:], want) {
				term.t.Fatalf("the shell ended without printing %q; screen:\n%s", want, s)
			}
		case <-guard:
			term.t.Fatalf("no %q after %v; screen:\n%s", want, failGuard, s)
		}
	}
}

func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := term.f.WriteString(s); err != nil {
		term.t.Fatal(err)
	}
}

// TestShell: `streamsql sql` on a terminal is an interactive shell: a
// statement over several lines runs at its ';' and prints a table; \x
// shows expanded rows; an error shows its line and a caret; Ctrl-C drops
// the statement being typed; history is saved; Ctrl-D quits with 0.
func TestShell(t *testing.T) {
	bin := binary(t)
	srv := startTestServer(t, bin)
	hist := filepath.Join(t.TempDir(), "state", "history")
	term, sh := startShell(t, bin, "http://"+srv.addr, "STREAMSQL_HISTORY="+hist)

	// Typed lines queue in the terminal: each step waits for the end of
	// its own output only.
	term.expect("streamsql> ")
	term.send("CREATE TABLE t (a BIGINT NOT NULL, b VARCHAR(10),\r")
	term.send("  ts TIMESTAMP(3) NOT NULL) ENGINE=http\r")
	term.send("  ENGINE_ATTRIBUTE='{\"event_time\": \"ts\"}';\r")
	if got := term.expect("\nCREATE TABLE t\n"); !strings.Contains(got, "VARCHAR(10),\n"+contPrompt) || !strings.Contains(got, "ENGINE=http\n"+contPrompt) {
		t.Errorf("the three-line CREATE TABLE showed no continuation prompts:\n%s", got)
	}
	term.send("DESCRIBE\r  t;\r")
	got := term.expect("(3 rows)\n")
	if !regexp.MustCompile(`(?m)^ name +\| type +\| nullable.*\n-+\+-+\+-+.*\n a +\| BIGINT +\| false`).MatchString(got) {
		t.Errorf("DESCRIBE over two lines printed no table:\n%s", got)
	}
	term.send("\\x\r")
	term.expect("Expanded display is on.\n")
	term.send("DESCRIBE t;\r")
	got = term.expect("-[ RECORD 2 ]")
	if !regexp.MustCompile(`(?m)^-\[ RECORD 1 \]-+\nname +\| a\ntype +\| BIGINT\n`).MatchString(got) {
		t.Errorf("\\x then DESCRIBE printed:\n%s", got)
	}
	term.send("\\x\r")
	term.expect("Expanded display is off.\n")
	term.send("CREATE VIEW v AS SELECT a,\r   nope FROM t;\r")
	got = term.expect("^\n")
	if m := regexp.MustCompile(`ERROR \d{3}: .*nope.*\n(LINE 2: )(   nope FROM t;)\n( *)\^\n$`).FindStringSubmatch(got); m == nil || len(m[3]) != len(m[1])+3 {
		t.Errorf("an unknown column on line 2 printed:\n%s", got)
	}
	// Ctrl-C drops the statement being typed: SHOW TABLES then runs alone.
	term.send("SELECT 1\r")
	term.expect("SELECT 1\n" + contPrompt)
	term.send("\x03")
	term.send("SHOW TABLES;\r")
	got = term.expect("(1 row)\n")
	if !regexp.MustCompile(`(?m)^ t +\| table +\| http\n\(1 row\)`).MatchString(got) {
		t.Errorf("SHOW TABLES after Ctrl-C printed:\n%s", got)
	}
	term.send("\x04") // Ctrl-D
	select {
	case <-sh.exited:
		if sh.err != nil {
			t.Errorf("the shell exited with %v after Ctrl-D, want 0", sh.err)
		}
	case <-time.After(failGuard):
		t.Fatalf("the shell still runs %v after Ctrl-D; screen:\n%s", failGuard, term.screen())
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	for _, want := range []string{
		"CREATE TABLE t (a BIGINT NOT NULL, b VARCHAR(10), ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{\"event_time\": \"ts\"}';\n",
		"DESCRIBE t;\n", "\\x\n", "SHOW TABLES;\n",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("history lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "SELECT 1") {
		t.Errorf("history has the statement Ctrl-C dropped:\n%s", h)
	}
}

// TestShellCancel: Ctrl-C while a statement runs cancels its request (the
// server sees the request end) and the shell goes on. The server is a
// stand-in whose /v1/sql answers only when the request is canceled.
func TestShellCancel(t *testing.T) {
	bin := binary(t)
	entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) == "SHOW TABLES;\n" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"results":[{"statement":0,"kind":"show","columns":["name"],"rows":[{"name":"after"}]}]}`)
			return
		}
		entered <- struct{}{}
		<-r.Context().Done()
		canceled <- struct{}{}
	}))
	t.Cleanup(srv.Close) // after the shell is gone (cleanups run last first)
	term, sh := startShell(t, bin, srv.URL)
	term.expect("streamsql> ")
	term.send("SELECT slowly;\r")
	select {
	case <-entered:
	case <-time.After(failGuard):
		t.Fatalf("the statement never reached the server; screen:\n%s", term.screen())
	}
	term.send("\x03")
	select {
	case <-canceled:
	case <-time.After(failGuard):
		t.Fatalf("Ctrl-C did not cancel the request; screen:\n%s", term.screen())
	}
	term.expect("ERROR: canceled")
	term.send("SHOW TABLES;\r")
	term.expect(" after\n(1 row)\n")
	term.send("\x04")
	select {
	case <-sh.exited:
		if sh.err != nil {
			t.Errorf("the shell exited with %v, want 0", sh.err)
		}
	case <-time.After(failGuard):
		t.Fatalf("the shell still runs after Ctrl-D; screen:\n%s", term.screen())
	}
}

// shell is a running `streamsql sql` shell: exited closes when it ends,
// with err its exit status.
type shell struct {
	exited chan struct{}
	err    error
}

// startShell starts `streamsql sql --addr addr` on a pseudo-terminal of
// 50x160 with TERM=xterm and env added, killed at the test's end.
func startShell(t *testing.T, bin, addr string, env ...string) (*terminal, *shell) {
	t.Helper()
	cmd := exec.Command(bin, "sql", "--addr", addr)
	cmd.Env = append(append(testEnv(t), "TERM=xterm"), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	sh := &shell{exited: make(chan struct{})}
	go func() { sh.err = cmd.Wait(); close(sh.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // if still running
		<-sh.exited
		f.Close()
	})
	return newTerminal(t, f), sh
}

// TestPgAddr: serve --pg-addr serves the PostgreSQL protocol beside HTTP:
// with --token the password is the token (SCRAM-SHA-256), over TLS; a
// wrong password is refused; a non-loopback --pg-addr needs --token.
func TestPgAddr(t *testing.T) {
	bin := binary(t)
	cert, key := writeSelfSigned(t, t.TempDir())
	const token = "pg-test-token-0123456789"
	srv := startTestServer(t, bin, "--pg-addr", "127.0.0.1:0", "--token", token, "--tls-cert", cert, "--tls-key", key)
	m := regexp.MustCompile(`pg_addr=(\S+)`).FindStringSubmatch(srv.logText())
	if m == nil {
		t.Fatalf("no pg_addr in the log:\n%s", srv.logText())
	}
	ctx, cancel := context.WithTimeout(context.Background(), failGuard)
	defer cancel()
	c, err := pgx.Connect(ctx, "postgres://x:"+token+"@"+m[1]+"/streamsql?sslmode=require")
	if err != nil {
		t.Fatalf("connect with the token over TLS: %v", err)
	}
	defer c.Close(ctx)
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Error("not TLS")
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t (x BIGINT) ENGINE=http"); err != nil {
		t.Errorf("CREATE TABLE: %v", err)
	}
	var v string
	if err := c.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil || !strings.Contains(v, "streamsql") {
		t.Errorf("SHOW server_version: %q, %v", v, err)
	}
	_, err = pgx.Connect(ctx, "postgres://x:wrong@"+m[1]+"/streamsql?sslmode=require")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28P01" {
		t.Errorf("a wrong password: %v, want 28P01", err)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--pg-addr", "0.0.0.0:0"}, "--pg-addr 0.0.0.0:0 listens on every interface, not only loopback: set --token"},
		{[]string{"--pg-addr", "nonsense"}, "--pg-addr nonsense"},
	} {
		args := append([]string{"serve", "--data", filepath.Join(t.TempDir(), "d")}, tc.flags...)
		code, _, errs := runBin(t, bin, nil, "", args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want it to say %q", tc.flags, code, errs, tc.want)
		}
	}
}
