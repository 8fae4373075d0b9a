package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamsql/streamsql/queries"
)

// DefaultMaxMessage is the largest message body a client may send
// (Options.MaxMessage): beyond it the connection is closed with an error.
const DefaultMaxMessage = 16 << 20

// ServerVersion is what server_version reports: PostgreSQL 15's protocol
// and the server behind it.
const ServerVersion = "15.0 (streamsql)"

// startupTimeout bounds the startup: TLS, the startup message and the
// password.
const startupTimeout = 30 * time.Second

// ErrServerClosed is what Serve returns once Close has been called.
var ErrServerClosed = errors.New("pgwire: server closed")

// Options configure a Server.
type Options struct {
	// Token, when set, is the password every client must give, asked
	// for with SCRAM-SHA-256 (auth.go), which never sends it. Empty:
	// every client is trusted (loopback only: the caller's bind rule).
	Token string
	// CleartextPassword: over TLS, ask for the password in cleartext
	// (AuthenticationCleartextPassword) instead of SCRAM, for clients
	// that do not speak SCRAM. Without TLS it is always SCRAM.
	CleartextPassword bool
	// TLS, when set, answers SSLRequest with 'S' and upgrades the
	// connection; nil answers 'N'.
	TLS *tls.Config
	// MaxMessage is the largest message body in bytes; 0 is
	// DefaultMaxMessage.
	MaxMessage int
	Logger     *slog.Logger

	// beforeStatement, when set, is called with each statement's text
	// before it runs: a fault point for tests (a panic).
	beforeStatement func(sql string)
}

// Server serves one engine to PostgreSQL clients.
type Server struct {
	eng  *queries.Engine
	opts Options
	log  *slog.Logger
	auth *auth // nil without a token

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pid    atomic.Uint32

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
	// keys are the connections' BackendKeyData by process ID, for
	// CancelRequest.
	keys map[uint32]*backendKey
}

// New returns a server of eng; Serve runs it on a listener. It fails only
// when the SCRAM credential of opts.Token cannot be made (no randomness,
// a TLS certificate that does not parse).
func New(eng *queries.Engine, opts Options) (*Server, error) {
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a, err := newAuth(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{eng: eng, opts: opts, log: log, auth: a, ctx: ctx, cancel: cancel, lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{},
		keys: map[uint32]*backendKey{}}, nil
}

// Serve accepts connections on ln until Close (then it returns
// ErrServerClosed) or until accepting fails for good. Each connection is
// served on its own goroutine.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors or the like: wait and retry, as
				// net/http does.
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
					return ErrServerClosed
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			return err
		}
		backoff = 5 * time.Millisecond
		if !s.track(nc) {
			nc.Close()
			return ErrServerClosed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(nc)
			s.serveConn(nc)
		}()
	}
}

func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[nc] = struct{}{}
	return true
}

func (s *Server) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	nc.Close()
}

// Close stops the listeners, closes every connection (a statement running
// on one has its context cancelled) and waits for their goroutines, or
// until ctx is done.
func (s *Server) Close(ctx context.Context) error {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		ln.Close()
	}
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// conn is one client connection's state; only its goroutine touches it.
type conn struct {
	s   *Server
	nc  net.Conn
	rd  *watchedConn // what be reads from: nc with a background read's byte
	be  *pgproto3.Backend
	ctx context.Context
	// stmt is the context of the message being answered (loop): ctx,
	// or a child a CancelRequest cancels with errCanceled.
	stmt    context.Context
	key     *backendKey       // nil until the startup is done
	tx      byte              // ReadyForQuery's status: 'I', 'T' or 'E' (tx.go)
	params  map[string]string // the session's parameters (ParameterStatus, SHOW, SET)
	stmts   map[string]*prepared
	portals map[string]*portal
	// skipping: an error in the extended protocol discards messages
	// until the next Sync.
	skipping bool
}

func (s *Server) serveConn(nc net.Conn) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	c := &conn{s: s, nc: nc, ctx: ctx, stmt: ctx, tx: 'I', stmts: map[string]*prepared{}, portals: map[string]*portal{}}
	defer s.forgetKey(c)
	c.setBackend(nc)
	defer func() {
		// As net/http does for a handler: a broken invariant met while
		// serving one connection ends that connection, logged with its
		// stack; the server and its other connections go on.
		if r := recover(); r != nil {
			s.log.Error("pgwire: panic serving a connection", "remote", nc.RemoteAddr().String(), "panic", r, "stack", string(debug.Stack()))
			c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "XX000",
				Message: fmt.Sprintf("internal error: %v (the server logged it and closes this connection; others go on)", r)})
			c.be.Flush()
		}
	}()
	nc.SetDeadline(time.Now().Add(startupTimeout))
	if err := c.startup(); err != nil {
		s.log.Debug("pgwire: startup failed", "remote", nc.RemoteAddr().String(), "err", err)
		return
	}
	nc.SetDeadline(time.Time{})
	if err := c.loop(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("pgwire: connection ended", "remote", nc.RemoteAddr().String(), "err", err)
	}
}

func (c *conn) setBackend(nc net.Conn) {
	c.nc = nc
	c.rd = &watchedConn{Conn: nc}
	c.be = pgproto3.NewBackend(c.rd, nc)
	c.be.SetMaxBodyLen(c.s.opts.MaxMessage)
}

// watchedConn is a connection whose reads may be watched while a
// statement runs (watch): a byte read then is returned by the next Read.
type watchedConn struct {
	net.Conn
	pending []byte
}

func (w *watchedConn) Read(p []byte) (int, error) {
	if len(w.pending) > 0 {
		n := copy(p, w.pending)
		w.pending = w.pending[n:]
		return n, nil
	}
	return w.Conn.Read(p)
}

// watch reads the connection in the background while a statement runs,
// so that a client that leaves cancels it (cancel). The returned stop
// ends the read (a deadline in the past) and keeps a byte it read for the
// next message; the connection's goroutine calls it before it reads or
// writes again.
func (c *conn) watch(cancel context.CancelFunc) (stop func()) {
	var (
		buf  [1]byte
		n    int
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		n, err = c.rd.Conn.Read(buf[:])
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			cancel() // the client left, or the connection broke
		}
	}()
	return func() {
		c.rd.Conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		c.rd.Conn.SetReadDeadline(time.Time{})
		if n > 0 {
			c.rd.pending = append(c.rd.pending, buf[0])
		}
	}
}

// fatal sends a FATAL ErrorResponse (the connection closes after it).
func (c *conn) fatal(code, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	c.be.Flush()
	return errors.New(msg)
}

// startup runs the connection's start: SSL and GSS requests, the startup
// message, the password, the parameters. An error closes the connection.
func (c *conn) startup() error {
	tlsDone := false
	for {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return err
			}
			// A malformed packet, or a protocol this server does not speak.
			return c.fatal("08P01", "invalid startup packet: %v (this server speaks protocol 3.0)", err)
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if c.s.opts.TLS == nil || tlsDone {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return err
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return err
			}
			tc := tls.Server(c.nc, c.s.opts.TLS)
			if err := tc.HandshakeContext(c.ctx); err != nil {
				return fmt.Errorf("TLS handshake: %w", err)
			}
			tlsDone = true
			c.setBackend(tc)
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return err
			}
		case *pgproto3.CancelRequest:
			// Answered by closing the connection, whatever it did
			// (as PostgreSQL: nothing tells a guess from a hit).
			c.s.cancelStatement(m.ProcessID, m.SecretKey)
			return errCancelRequest
		case *pgproto3.StartupMessage:
			return c.start(m, tlsDone)
		default:
			return c.fatal("08P01", "unexpected startup message %T", msg)
		}
	}
}

func (c *conn) start(m *pgproto3.StartupMessage, tlsDone bool) error {
	// Protocol options (_pq_.*) are none that this server knows.
	var unknown []string
	for k := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	switch m.ProtocolVersion {
	case pgproto3.ProtocolVersion30, pgproto3.ProtocolVersion32:
		if m.ProtocolVersion != pgproto3.ProtocolVersion30 || len(unknown) > 0 {
			// A newer minor version: offered down to 3.0, as PostgreSQL
			// does, with the options it does not know.
			c.be.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
		}
	default:
		return c.fatal("0A000", "unsupported frontend protocol %d.%d: this server speaks 3.0", m.ProtocolVersion>>16, m.ProtocolVersion&0xffff)
	}
	user := m.Parameters["user"]
	db := m.Parameters["database"]
	if db == "" {
		db = user
	}
	if db == "" {
		db = "streamsql"
	}
	if err := c.authenticate(user, tlsDone); err != nil {
		return err
	}
	c.params = map[string]string{
		"server_version":              ServerVersion,
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"TimeZone":                    "UTC",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"IntervalStyle":               "postgres",
		"is_superuser":                "off",
		"application_name":            m.Parameters["application_name"],
		"session_authorization":       user,
	}
	unreported := map[string]string{"search_path": `"$user", public`, "extra_float_digits": "1", "database": db, "user": user}
	c.be.Send(&pgproto3.AuthenticationOk{})
	for _, k := range []string{"server_version", "server_encoding", "client_encoding", "DateStyle", "TimeZone", "integer_datetimes",
		"standard_conforming_strings", "IntervalStyle", "is_superuser", "application_name", "session_authorization"} {
		c.be.Send(&pgproto3.ParameterStatus{Name: k, Value: c.params[k]})
	}
	for k, v := range unreported {
		c.params[k] = v
	}
	key, err := c.s.newKey()
	if err != nil {
		return c.fatal("XX000", "%v", err)
	}
	c.key = key
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: key.pid, SecretKey: key.secret[:]})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	return c.be.Flush()
}

// loop reads and answers messages until the client leaves or an error
// closes the connection.
func (c *conn) loop() error {
	for {
		msg, err := c.be.Receive()
		if err != nil {
			var tooBig *pgproto3.ExceededMaxBodyLenErr
			switch {
			case errors.As(err, &tooBig):
				return c.fatal("54000", "message of %d bytes is over the limit of %d bytes", tooBig.ActualBodyLen, tooBig.MaxExpectedBodyLen)
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
				return err
			case strings.HasPrefix(err.Error(), "unknown message type"):
				return c.fatal("08P01", "%v", err)
			}
			var ne net.Error
			if errors.As(err, &ne) {
				return err
			}
			return c.fatal("08P01", "invalid message: %v", err)
		}
		if _, ok := msg.(*pgproto3.Terminate); ok {
			return nil
		}
		end := c.statement()
		err = c.handle(msg)
		end()
		if err != nil {
			return err
		}
	}
}

// errCancelRequest ends a connection that brought a CancelRequest.
var errCancelRequest = errors.New("cancel request")

// errCanceled is the cause of a statement's context a CancelRequest
// cancelled, and the error its client gets.
var errCanceled error = &pgError{code: "57014", msg: "canceling statement due to user request"}

// backendKey is a connection's BackendKeyData and the context of the
// message it answers now (nil between messages): a CancelRequest with
// the key cancels that.
type backendKey struct {
	pid    uint32
	secret [4]byte

	mu     sync.Mutex
	cancel context.CancelCauseFunc
	// cancels counts the messages a CancelRequest cancelled (the
	// connection's debug log says it, tests wait for it).
	cancels int
}

// newKey registers a connection's key: a process ID not in use and a
// random secret.
func (s *Server) newKey() (*backendKey, error) {
	k := &backendKey{}
	if _, err := rand.Read(k.secret[:]); err != nil {
		return nil, fmt.Errorf("pgwire: a cancel key: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		k.pid = s.pid.Add(1)
		if _, used := s.keys[k.pid]; !used && k.pid != 0 {
			break
		}
	}
	s.keys[k.pid] = k
	return k, nil
}

func (s *Server) forgetKey(c *conn) {
	if c.key == nil {
		return
	}
	s.mu.Lock()
	delete(s.keys, c.key.pid)
	s.mu.Unlock()
}

// cancelStatement cancels what the connection of pid runs, if secret is
// its key; a wrong secret or an unknown pid does nothing.
func (s *Server) cancelStatement(pid uint32, secret []byte) {
	s.mu.Lock()
	k := s.keys[pid]
	s.mu.Unlock()
	if k == nil || subtle.ConstantTimeCompare(secret, k.secret[:]) != 1 {
		return
	}
	k.mu.Lock()
	if k.cancel != nil {
		k.cancel(errCanceled)
		k.cancels++
		s.log.Debug("pgwire: statement cancelled by a CancelRequest", "pid", pid)
	}
	k.mu.Unlock()
}

// statement begins answering a message: c.stmt is a context a
// CancelRequest cancels until end is called.
func (c *conn) statement() (end func()) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.stmt = ctx
	c.key.mu.Lock()
	c.key.cancel = cancel
	c.key.mu.Unlock()
	return func() {
		c.key.mu.Lock()
		c.key.cancel = nil
		c.key.mu.Unlock()
		cancel(nil)
		c.stmt = c.ctx
	}
}

// canceled is errCanceled once a CancelRequest cancelled the message
// being answered.
func (c *conn) canceled() error {
	if c.stmt.Err() != nil && context.Cause(c.stmt) == errCanceled {
		return errCanceled
	}
	return nil
}

// rowBatch is how many rows are buffered between the checks of between.
const rowBatch = 256

// between is called before the i-th row of a result: every rowBatch rows
// what is buffered is sent (a large result is never held whole), and a
// cancelled statement stops there.
func (c *conn) between(i int) error {
	if i%rowBatch != 0 {
		return nil
	}
	if i > 0 {
		if err := c.be.Flush(); err != nil {
			return err
		}
	}
	return c.canceled()
}
