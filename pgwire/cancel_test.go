package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"
)

// bigRows is the size of view big: 8 MB of rows, more than the socket
// buffers of a client that reads 16 KB at a time, so that the server is
// still sending when a CancelRequest comes.
const bigRows = 4000

// setupBig creates view big of bigRows rows of 2 KB.
func (e *env) setupBig() {
	e.t.Helper()
	ctx := ctxT(e.t)
	for _, sql := range []string{
		`CREATE TABLE bigt (id BIGINT NOT NULL, s VARCHAR(4096)) ENGINE=http`,
		`CREATE VIEW big AS SELECT id, s FROM bigt`,
	} {
		if _, err := e.eng.Exec(ctx, sql); err != nil {
			e.t.Fatalf("%s: %v", sql, err)
		}
	}
	var b strings.Builder
	pad := strings.Repeat("x", 2048)
	for i := range bigRows {
		fmt.Fprintf(&b, "{\"id\": %d, \"s\": %q}\n", i, pad)
	}
	if _, err := e.eng.Ingest(ctx, "bigt", b.String(), ""); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.eng.Checkpoint(ctx, "big"); err != nil {
		e.t.Fatal(err)
	}
}

// dialSlow dials with a small receive buffer.
func (e *env) dialSlow() *frontend {
	e.t.Helper()
	f := e.dial()
	if err := f.nc.(*net.TCPConn).SetReadBuffer(16 << 10); err != nil {
		e.t.Fatal(err)
	}
	return f
}

// startupKey runs the startup and returns BackendKeyData.
func (f *frontend) startupKey() *pgproto3.BackendKeyData {
	f.t.Helper()
	f.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x", "database": "streamsql"}})
	var key *pgproto3.BackendKeyData
	for {
		m, err := f.fe.Receive()
		if err != nil {
			f.t.Fatal(err)
		}
		switch m := m.(type) {
		case *pgproto3.BackendKeyData:
			key = &pgproto3.BackendKeyData{ProcessID: m.ProcessID, SecretKey: append([]byte(nil), m.SecretKey...)}
		case *pgproto3.ReadyForQuery:
			if key == nil {
				f.t.Fatal("no BackendKeyData")
			}
			return key
		}
	}
}

// cancel sends a CancelRequest on a new connection and waits until the
// server closes it (it has acted on the request then).
func (e *env) cancel(pid uint32, secret []byte) {
	e.t.Helper()
	f := e.dial()
	f.send(&pgproto3.CancelRequest{ProcessID: pid, SecretKey: secret})
	f.closed()
}

// rest reads a query's messages to ReadyForQuery: the DataRows, then the
// other messages' names, and ReadyForQuery's status.
func (f *frontend) rest() (rows int, other []string, status byte) {
	f.t.Helper()
	for {
		m, err := f.fe.Receive()
		if err != nil {
			f.t.Fatalf("after %d rows and %v: %v", rows, other, err)
		}
		switch m := m.(type) {
		case *pgproto3.DataRow:
			rows++
			continue
		case *pgproto3.ErrorResponse:
			other = append(other, "ErrorResponse("+m.Code+": "+m.Message+")")
		case *pgproto3.ReadyForQuery:
			return rows, other, m.TxStatus
		default:
			other = append(other, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		}
	}
}

// TestCancelRequest: a CancelRequest with a connection's key stops the
// result it is sending (57014) and the connection goes on; a wrong secret,
// an unknown process ID, or a cancel between statements do nothing.
func TestCancelRequest(t *testing.T) {
	e := start(t, Options{})
	e.setupBig()
	const q = "SELECT id, s FROM big"
	f := e.dialSlow()
	key := f.startupKey()
	o := e.dialSlow()
	other := o.startupKey()
	wrong := append([]byte(nil), key.SecretKey...)
	wrong[0] ^= 1

	// Wrong keys, while the result is being sent: the whole result.
	f.send(&pgproto3.Query{String: q})
	receive[*pgproto3.RowDescription](f)
	e.cancel(key.ProcessID, wrong)
	e.cancel(key.ProcessID^0x8000, key.SecretKey)
	e.cancel(other.ProcessID, key.SecretKey)
	e.cancel(key.ProcessID, key.SecretKey[:3])
	if n, rest, status := f.rest(); n != bigRows || strings.Join(rest, " ") != "CommandComplete" || status != 'I' {
		t.Errorf("after wrong keys: %d rows, %v, %c; want %d rows and CommandComplete", n, rest, status, bigRows)
	}

	// The right key between statements: nothing.
	e.cancel(key.ProcessID, key.SecretKey)
	f.send(&pgproto3.Query{String: "SELECT id FROM big WHERE id = 7"})
	if n, rest, _ := f.rest(); n != 1 || strings.Join(rest, " ") != "RowDescription CommandComplete" {
		t.Errorf("a cancel between statements: %d rows, %v", n, rest)
	}

	// The right key while the result is sent: it stops, with 57014.
	f.send(&pgproto3.Query{String: q})
	receive[*pgproto3.RowDescription](f)
	e.cancel(key.ProcessID, key.SecretKey)
	n, rest, status := f.rest()
	if n >= bigRows || strings.Join(rest, " ") != "ErrorResponse(57014: canceling statement due to user request)" || status != 'I' {
		t.Errorf("cancelled: %d rows of %d, %v, %c", n, bigRows, rest, status)
	}
	// The same over the extended protocol, and in a transaction block,
	// which fails.
	f.send(&pgproto3.Query{String: "BEGIN"})
	f.rest()
	f.send(&pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	receive[*pgproto3.ParseComplete](f)
	receive[*pgproto3.BindComplete](f)
	receive[*pgproto3.DataRow](f)
	e.cancel(key.ProcessID, key.SecretKey)
	n, rest, status = f.rest()
	if n+1 >= bigRows || len(rest) != 1 || !strings.HasPrefix(rest[0], "ErrorResponse(57014") || status != 'E' {
		t.Errorf("cancelled Execute: %d rows of %d, %v, %c", n+1, bigRows, rest, status)
	}
	f.send(&pgproto3.Query{String: "ROLLBACK"})
	f.rest()

	// The connection goes on.
	f.send(&pgproto3.Query{String: q})
	if n, rest, status := f.rest(); n != bigRows || strings.Join(rest, " ") != "RowDescription CommandComplete" || status != 'I' {
		t.Errorf("after the cancel: %d rows, %v, %c", n, rest, status)
	}
	// The other connection was never touched.
	o.send(&pgproto3.Query{String: q})
	if n, rest, _ := o.rest(); n != bigRows || strings.Join(rest, " ") != "RowDescription CommandComplete" {
		t.Errorf("the other connection: %d rows, %v", n, rest)
	}
}

// TestCancelPgx: pgx sends a CancelRequest when a query's context is
// cancelled (with its CancelRequest context watcher) and gets 57014; and
// PgConn.CancelRequest does the same.
func TestCancelPgx(t *testing.T) {
	e := start(t, Options{})
	e.setupBig()
	cfg, err := pgx.ParseConfig(e.url())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = nc.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		return nc, err
	}
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, CancelRequestDelay: 0, DeadlineDelay: time.Minute}
	}
	c, err := pgx.ConnectConfig(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctxT(t))
	const q = "SELECT id, s FROM big"
	count := func(rows pgx.Rows) (int, error) {
		n := 0
		for rows.Next() {
			n++
		}
		return n, rows.Err()
	}

	// The context.
	ctx, cancel := context.WithCancel(ctxT(t))
	rows, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	e.waitCanceled(c.PgConn().PID())
	n, err := count(rows)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || n >= bigRows {
		t.Errorf("a cancelled context: %d rows of %d, %v; want 57014", n, bigRows, err)
	}

	// PgConn.CancelRequest, which returns once the server has it.
	rows, err = c.Query(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PgConn().CancelRequest(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	n, err = count(rows)
	if !errors.As(err, &pe) || pe.Code != "57014" || n >= bigRows {
		t.Errorf("CancelRequest: %d rows of %d, %v; want 57014", n, bigRows, err)
	}

	// The connection goes on, in the binary format too.
	if n, err := count(must(c.Query(ctxT(t), q))); n != bigRows || err != nil {
		t.Errorf("after the cancels: %d rows, %v", n, err)
	}
}

// waitCanceled waits until a CancelRequest has cancelled a statement of
// the connection of pid (pgx sends it in the background).
func (e *env) waitCanceled(pid uint32) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.srv.mu.Lock()
		k := e.srv.keys[pid]
		e.srv.mu.Unlock()
		if k == nil {
			e.t.Fatalf("no connection of process ID %d", pid)
		}
		k.mu.Lock()
		done := k.cancels > 0
		k.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the CancelRequest did not arrive")
		}
		time.Sleep(time.Millisecond)
	}
}
