package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
)

const testToken = "pgwire-test-token-0123"

// dialTLS is dial with an SSLRequest and a TLS upgrade first.
func (e *env) dialTLS() *frontend {
	e.t.Helper()
	f := e.dial()
	f.send(&pgproto3.SSLRequest{})
	var b [1]byte
	if _, err := f.nc.Read(b[:]); err != nil || b[0] != 'S' {
		e.t.Fatalf("SSLRequest: %q, %v", b, err)
	}
	tc := tls.Client(f.nc, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		e.t.Fatal(err)
	}
	f.nc = tc
	f.fe = pgproto3.NewFrontend(tc, tc)
	return f
}

// receive reads one message and fails unless it is a T.
func receive[T pgproto3.BackendMessage](f *frontend) T {
	f.t.Helper()
	m, err := f.fe.Receive()
	if err != nil {
		f.t.Fatalf("receive: %v", err)
	}
	v, ok := m.(T)
	if !ok {
		var want T
		f.t.Fatalf("got %#v, want a %T", m, want)
	}
	return v
}

// saslStart sends the startup message and reads AuthenticationSASL: the
// mechanisms offered.
func (f *frontend) saslStart() []string {
	f.t.Helper()
	f.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x", "database": "streamsql"}})
	return receive[*pgproto3.AuthenticationSASL](f).AuthMechanisms
}

// fatalCode reads up to the ErrorResponse, checks its code and that the
// server closes the connection.
func (f *frontend) fatalCode(code string) {
	f.t.Helper()
	got := f.until("ErrorResponse")
	if last := got[len(got)-1]; last != "ErrorResponse("+code+")" {
		f.t.Errorf("got %v, want ErrorResponse(%s)", got, code)
	}
	f.closed()
}

// TestSCRAM: with a token the password is asked for with SCRAM-SHA-256
// (and -PLUS over TLS); pgx and psql log in, a wrong password is 28P01,
// a broken exchange 08P01, and the server goes on serving.
func TestSCRAM(t *testing.T) {
	e := start(t, Options{Token: testToken, TLS: selfSigned(t)})
	e.setup()
	ctx := ctxT(t)
	base := func(pw, mode string) string {
		return "postgres://x:" + pw + "@" + e.addr + "/streamsql?sslmode=" + mode
	}
	for _, tc := range []struct {
		url, code string
		plus      bool
	}{
		{base(testToken, "disable"), "", false},
		{base(testToken, "require") + "&channel_binding=disable", "", false},
		{base(testToken, "require") + "&channel_binding=require", "", true},
		{base("wrong", "disable"), "28P01", false},
		{base("wrong", "require"), "28P01", false},
		{"postgres://x@" + e.addr + "/streamsql?sslmode=disable", "28P01", false},
	} {
		c, err := pgx.Connect(ctx, tc.url)
		if tc.code != "" {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != tc.code {
				t.Errorf("%s: %v, want %s", tc.url, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if got := readAll(t, must(c.Query(ctx, "SELECT id, d, s, b, ts FROM v ORDER BY id"))); !same(got, e.want()) {
			t.Errorf("%s: %v", tc.url, got)
		}
		c.Close(ctx)
	}

	// What is offered: -PLUS only over TLS.
	f := e.dial()
	if got := f.saslStart(); !slices.Equal(got, []string{"SCRAM-SHA-256"}) {
		t.Errorf("without TLS: %v", got)
	}
	f = e.dialTLS()
	if got := f.saslStart(); !slices.Equal(got, []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}) {
		t.Errorf("over TLS: %v", got)
	}

	// The exchange by hand with a SCRAM client: the server's signature
	// checks out.
	f = e.dial()
	f.saslStart()
	conv := scramClient(t, testToken).NewConversation()
	c1, _ := conv.Step("")
	f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(c1)})
	c2, err := conv.Step(string(receive[*pgproto3.AuthenticationSASLContinue](f).Data))
	if err != nil {
		t.Fatal(err)
	}
	f.send(&pgproto3.SASLResponse{Data: []byte(c2)})
	if _, err := conv.Step(string(receive[*pgproto3.AuthenticationSASLFinal](f).Data)); err != nil || !conv.Valid() {
		t.Errorf("the server's signature: %v", err)
	}
	receive[*pgproto3.AuthenticationOk](f)
	f.until("ReadyForQuery")

	psql := needPsql(t)
	_, port, _ := net.SplitHostPort(e.addr)
	for _, tc := range []struct{ env, want string }{
		{"PGSSLMODE=disable PGPASSWORD=" + testToken, ServerVersion + "\n"},
		{"PGSSLMODE=require PGCHANNELBINDING=require PGPASSWORD=" + testToken, ServerVersion + "\n"},
		{"PGSSLMODE=disable PGPASSWORD=wrong", `password authentication failed for user "x"`},
	} {
		pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(pctx, psql, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", port, "-U", "x", "-d", "streamsql", "-c", "SHOW server_version")
		cmd.Env = append(strings.Fields(tc.env), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		cancel()
		wantOK := !strings.Contains(tc.env, "wrong")
		if (err == nil) != wantOK || !strings.Contains(string(out), tc.want) {
			t.Errorf("psql with %s: %v\n%s", tc.env, err, out)
		}
	}
}

// needPsql returns psql's path; it installs Debian's postgresql-client
// when it is missing and the test runs as root, and fails otherwise.
func needPsql(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		t.Fatal("psql is missing: run apt-get install -y postgresql-client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "postgresql-client"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	p, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is missing after apt-get install postgresql-client: %v", err)
	}
	return p
}

func scramClient(t *testing.T, password string) *scram.Client {
	t.Helper()
	c, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSCRAMBadInput: broken exchanges are FATAL (08P01, a wrong proof
// 28P01), close the connection, never panic, and leak nothing.
func TestSCRAMBadInput(t *testing.T) {
	e := start(t, Options{Token: testToken, TLS: selfSigned(t)})
	// One connection first, so that lazily started goroutines are there.
	c, err := pgx.Connect(ctxT(t), "postgres://x:"+testToken+"@"+e.addr+"/streamsql?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	c.Close(ctxT(t))
	base := runtime.NumGoroutine()
	// first runs the first step with a real client; the test goes on
	// from the server's first message.
	first := func(f *frontend, password string) (*scram.ClientConversation, string) {
		f.saslStart()
		conv := scramClient(t, password).NewConversation()
		c1, _ := conv.Step("")
		f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(c1)})
		return conv, string(receive[*pgproto3.AuthenticationSASLContinue](f).Data)
	}
	for _, tc := range []struct {
		name, code string
		run        func(f *frontend)
	}{
		{"unknown mechanism", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-1", Data: []byte("n,,n=,r=abc")})
		}},
		{"PLUS without TLS", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte("p=tls-server-end-point,,n=,r=abc")})
		}},
		{"channel binding flag without PLUS", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("p=tls-server-end-point,,n=,r=abc")})
		}},
		{"garbage first message", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("\x00\xff garbage")})
		}},
		{"empty first message", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256"})
		}},
		{"a cleartext password instead", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.PasswordMessage{Password: testToken})
		}},
		{"a query instead", "08P01", func(f *frontend) {
			f.saslStart()
			f.send(&pgproto3.Query{String: "SELECT 1"})
		}},
		{"too long", "08P01", func(f *frontend) {
			f.saslStart()
			// The header of a message over the limit, no body (unread
			// bytes would reset the connection before the error is read).
			f.nc.Write([]byte{'p', 0, 1, 0x10, 0})
		}},
		{"garbage final message", "08P01", func(f *frontend) {
			first(f, testToken)
			f.send(&pgproto3.SASLResponse{Data: []byte("c=biws,r=,p=???")})
		}},
		{"wrong nonce", "08P01", func(f *frontend) {
			conv, s1 := first(f, testToken)
			c2, err := conv.Step(s1)
			if err != nil {
				t.Fatal(err)
			}
			// The server's nonce with its last character changed.
			i := strings.Index(c2, ",p=") - 1
			c2 = c2[:i] + string(c2[i]^1) + c2[i+1:]
			f.send(&pgproto3.SASLResponse{Data: []byte(c2)})
		}},
		{"wrong proof", "28P01", func(f *frontend) {
			conv, s1 := first(f, "not the token")
			c2, _ := conv.Step(s1)
			f.send(&pgproto3.SASLResponse{Data: []byte(c2)})
		}},
		{"the first message twice", "08P01", func(f *frontend) {
			first(f, testToken)
			f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abc")})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := e.dial()
			tc.run(f)
			f.fatalCode(tc.code)
		})
	}
	t.Run("disconnect mid-exchange", func(t *testing.T) {
		f := e.dial()
		first(f, testToken)
		f.nc.Close()
	})
	t.Run("wrong channel binding", func(t *testing.T) {
		f := e.dialTLS()
		f.saslStart()
		conv := scramClient(t, testToken).NewConversationWithChannelBinding(scram.ChannelBinding{Type: scram.ChannelBindingTLSServerEndpoint, Data: make([]byte, 32)})
		c1, _ := conv.Step("")
		f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte(c1)})
		c2, err := conv.Step(string(receive[*pgproto3.AuthenticationSASLContinue](f).Data))
		if err != nil {
			t.Fatal(err)
		}
		f.send(&pgproto3.SASLResponse{Data: []byte(c2)})
		f.fatalCode("08P01")
	})
	t.Run("downgrade over TLS", func(t *testing.T) {
		// "y": the client can bind but saw no -PLUS, which was offered.
		f := e.dialTLS()
		f.saslStart()
		f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("y,,n=,r=abcdefgh")})
		f.fatalCode("08P01")
	})
	c, err = pgx.Connect(ctxT(t), "postgres://x:"+testToken+"@"+e.addr+"/streamsql?sslmode=disable")
	if err != nil {
		t.Fatalf("after the bad clients: %v", err)
	}
	c.Close(ctxT(t))
	waitGoroutines(t, base)
}

// TestCleartextPassword: with CleartextPassword the password is asked
// for in cleartext over TLS only; without TLS it is still SCRAM.
func TestCleartextPassword(t *testing.T) {
	e := start(t, Options{Token: testToken, TLS: selfSigned(t), CleartextPassword: true})
	f := e.dialTLS()
	f.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x"}})
	receive[*pgproto3.AuthenticationCleartextPassword](f)
	f.send(&pgproto3.PasswordMessage{Password: "wrong"})
	f.fatalCode("28P01")
	f = e.dial()
	if got := f.saslStart(); !slices.Equal(got, []string{"SCRAM-SHA-256"}) {
		t.Errorf("without TLS: %v", got)
	}
	ctx := ctxT(t)
	for _, mode := range []string{"require", "disable"} {
		c, err := pgx.Connect(ctx, "postgres://x:"+testToken+"@"+e.addr+"/streamsql?sslmode="+mode)
		if err != nil {
			t.Errorf("sslmode=%s: %v", mode, err)
			continue
		}
		c.Close(ctx)
	}
}

// TestSCRAMCredential: the credential is derived once per server start:
// one salt for every connection of a server, another at the next start,
// 4,096 iterations as PostgreSQL.
func TestSCRAMCredential(t *testing.T) {
	saltOf := func(e *env) string {
		f := e.dial()
		f.saslStart()
		f.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=clientnonce")})
		s1 := string(receive[*pgproto3.AuthenticationSASLContinue](f).Data)
		fields := strings.Split(s1, ",")
		if len(fields) != 3 || !strings.HasPrefix(fields[0], "r=clientnonce") || len(fields[0]) < len("r=clientnonce")+16 || fields[2] != "i=4096" {
			t.Fatalf("server-first-message %q: want r=clientnonce<server nonce>,s=<salt>,i=4096", s1)
		}
		return fields[1]
	}
	a := start(t, Options{Token: testToken})
	b := start(t, Options{Token: testToken})
	if s1, s2 := saltOf(a), saltOf(a); s1 != s2 {
		t.Errorf("one server, two salts: %s, %s", s1, s2)
	}
	if s1, s2 := saltOf(a), saltOf(b); s1 == s2 {
		t.Errorf("two servers, one salt: %s", s1)
	}
}

// FuzzSCRAMExchange: whatever the client's two messages, the server's
// side of the exchange answers or fails, never panics (a panic would end
// the server), and only the token's proof is valid.
func FuzzSCRAMExchange(f *testing.F) {
	a, err := newAuth(Options{Token: testToken})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("n,,n=,r=abc", "c=biws,r=abc,p=AAAA")
	f.Add("y,,n=x,r=abc", "c=eSws,r=abcdef,p=")
	f.Add("p=tls-server-end-point,a=x,n=,r=a", "c=,r=,x=1,p=!!")
	f.Add("n,a==2C,n==3D,r=,", ",,,")
	f.Fuzz(func(t *testing.T, first, final string) {
		conv := a.scram.NewConversation()
		if _, err := conv.Step(first); err != nil {
			return
		}
		if _, err := conv.Step(final); err == nil && conv.Valid() {
			t.Fatalf("a made-up exchange is valid: %q, %q", first, final)
		}
	})
}
