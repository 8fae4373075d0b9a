package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
)

type env struct {
	t    testing.TB
	eng  *queries.Engine
	srv  *Server
	addr string
}

// start opens an engine on a temp dir and serves it on 127.0.0.1:0.
func start(t testing.TB, opts Options) *env {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := queries.Open(queries.Config{DataDir: t.TempDir(), CheckpointInterval: time.Second, EmitInterval: 20 * time.Millisecond, Logger: quiet, NoSampler: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		eng.Close(ctx)
	})
	return &env{t: t, eng: eng, srv: srv, addr: ln.Addr().String()}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) url() string { return "postgres://x@" + e.addr + "/streamsql?sslmode=disable" }

func (e *env) connect(mode pgx.QueryExecMode) *pgx.Conn {
	e.t.Helper()
	cfg, err := pgx.ParseConfig(e.url())
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	c, err := pgx.ConnectConfig(ctxT(e.t), cfg)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// setup creates table t and view v over it, posts rows with every type
// and NULLs, and checkpoints v.
func (e *env) setup() {
	e.t.Helper()
	ctx := ctxT(e.t)
	for _, sql := range []string{
		`CREATE TABLE t (id BIGINT NOT NULL, d DOUBLE, s VARCHAR(64), b BOOLEAN, ts TIMESTAMP(3)) ENGINE=http`,
		`CREATE VIEW v AS SELECT id, d, s, b, ts FROM t`,
	} {
		if _, err := e.eng.Exec(ctx, sql); err != nil {
			e.t.Fatalf("%s: %v", sql, err)
		}
	}
	body := `[{"id": 1, "d": 1.5, "s": "one", "b": true, "ts": "2024-01-02T03:04:05.678Z"},
		{"id": 2, "d": null, "s": null, "b": null, "ts": null},
		{"id": 3, "d": 1e20, "s": "drei ü", "b": false, "ts": "1999-12-31T23:59:59.001Z"},
		{"id": 4, "d": -0.00001, "s": "", "b": true, "ts": "2000-01-01T00:00:00.000Z"}]`
	if _, err := e.eng.Ingest(ctx, "t", body, ""); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.eng.Checkpoint(ctx, "v"); err != nil {
		e.t.Fatal(err)
	}
}

// want is the engine's own results of v (GET /v1/queries/v/results), by
// id, as the Go values pgx reads.
func (e *env) want() [][]any {
	e.t.Helper()
	_, rows, err := e.eng.Results("v", true)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = make([]any, len(r))
		for j, v := range r {
			switch v.K {
			case plan.TypeNull:
				out[i][j] = nil
			case plan.TypeBigint:
				out[i][j] = v.I
			case plan.TypeDouble:
				out[i][j] = v.F()
			case plan.TypeVarchar:
				out[i][j] = v.S
			case plan.TypeBoolean:
				out[i][j] = v.I != 0
			case plan.TypeTimestamp:
				out[i][j] = time.UnixMilli(v.I).UTC()
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].(int64) < out[j][0].(int64) })
	if len(out) != 4 {
		e.t.Fatalf("the engine has %d rows of v, want 4", len(out))
	}
	return out
}

func readAll(t *testing.T, rows pgx.Rows) [][]any {
	t.Helper()
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if tm, ok := v.(time.Time); ok {
				vals[i] = tm.UTC()
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func same(a, b [][]any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestResultsEqualTheEngines(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	want := e.want()
	const q = "SELECT id, d, s, b, ts FROM v ORDER BY id"
	for _, tc := range []struct {
		name string
		mode pgx.QueryExecMode
		args []any
	}{
		{"simple protocol, text", pgx.QueryExecModeSimpleProtocol, nil},
		{"extended, binary", pgx.QueryExecModeCacheStatement, nil},
		{"extended, describe exec", pgx.QueryExecModeDescribeExec, nil},
		{"extended, text", pgx.QueryExecModeCacheStatement, []any{pgx.QueryResultFormats{pgx.TextFormatCode}}},
		{"extended, mixed", pgx.QueryExecModeCacheStatement, []any{pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.TextFormatCode, pgx.TextFormatCode, pgx.BinaryFormatCode, pgx.TextFormatCode}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.connect(tc.mode)
			rows, err := c.Query(ctxT(t), q, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			descs := rows.FieldDescriptions()
			got := readAll(t, rows)
			if !same(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
			oids := []uint32{oidInt8, oidFloat8, oidText, oidBool, oidTimestamp}
			for i, d := range descs {
				if d.DataTypeOID != oids[i] {
					t.Errorf("column %s: type %d, want %d", d.Name, d.DataTypeOID, oids[i])
				}
			}
			// The same connection after an error.
			_, err = c.Exec(ctxT(t), "SELECT nosuch FROM v")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42703" || pe.Position != int32(strings.Index("SELECT nosuch FROM v", "nosuch")+1) {
				t.Fatalf("unknown column: %#v", err)
			}
			var n int64
			if err := c.QueryRow(ctxT(t), "SELECT id FROM v WHERE id = 3").Scan(&n); err != nil || n != 3 {
				t.Errorf("after the error: %d, %v", n, err)
			}
		})
	}
}

func TestTextValues(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	c := e.connect(pgx.QueryExecModeSimpleProtocol)
	// Raw text as the server wrote it.
	res := c.PgConn().Exec(ctxT(t), "SELECT id, d, s, b, ts FROM v ORDER BY id")
	all, err := res.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range all[0].Rows {
		var f []string
		for _, v := range r {
			if v == nil {
				f = append(f, "NULL")
			} else {
				f = append(f, string(v))
			}
		}
		got = append(got, strings.Join(f, "|"))
	}
	want := []string{"1|1.5|one|t|2024-01-02 03:04:05.678", "2|NULL|NULL|NULL|NULL", "3|1e+20|drei ü|f|1999-12-31 23:59:59.001", "4|-1e-05||t|2000-01-01 00:00:00.000"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tag := all[0].CommandTag.String(); tag != "SELECT 4" {
		t.Errorf("tag %q", tag)
	}
}

func TestFormatFloat(t *testing.T) {
	a, b := 0.1, 0.2
	if got := formatFloat(a + b); got != "0.30000000000000004" {
		t.Errorf("formatFloat(0.1 + 0.2) = %q", got)
	}
	for f, want := range map[float64]string{1.5: "1.5", 1e20: "1e+20", 1e15: "1e+15", 123456789012345: "123456789012345", 0.0001: "0.0001",
		0.00001: "1e-05", -2.5e-7: "-2.5e-07", 100: "100", math.NaN(): "NaN", math.Inf(-1): "-Infinity", math.Copysign(0, -1): "-0"} {
		if got := formatFloat(f); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestStatementsAndErrors(t *testing.T) {
	e := start(t, Options{})
	c := e.connect(pgx.QueryExecModeSimpleProtocol)
	ctx := ctxT(t)
	for _, tc := range []struct{ sql, tag string }{
		{"CREATE TABLE t (id BIGINT, ts TIMESTAMP(3)) ENGINE=http", "CREATE TABLE"},
		{"CREATE VIEW v AS SELECT id FROM t", "CREATE VIEW"},
		{"SET search_path = public", "SET"},
		{"SET TIME ZONE 'UTC'", "SET"},
		{"SET application_name TO 'mine'", "SET"},
		{"SET extra_float_digits = 3", "SET"},
		{"SHOW TABLES", "SHOW"},
		{"DROP VIEW v", "DROP VIEW"},
	} {
		tag, err := c.Exec(ctx, tc.sql)
		if err != nil || tag.String() != tc.tag {
			t.Errorf("%s: %q, %v; want %q", tc.sql, tag, err, tc.tag)
		}
	}
	for q, want := range map[string]string{
		"SELECT version()":          "PostgreSQL " + ServerVersion + " (the PostgreSQL wire protocol of streamsql)",
		"SHOW server_version":       ServerVersion,
		"select current_database()": "streamsql",
		"SELECT current_schema()":   "public",
		"SHOW application_name":     "mine",
		"SHOW TimeZone":             "UTC",
	} {
		var s string
		if err := c.QueryRow(ctx, q).Scan(&s); err != nil || s != want {
			t.Errorf("%s: %q, %v; want %q", q, s, err, want)
		}
	}
	if got := c.PgConn().ParameterStatus("application_name"); got != "mine" {
		t.Errorf("application_name reported as %q", got)
	}
	for _, tc := range []struct {
		sql, code, at string
	}{
		{"SELEC 1", "42601", ""},
		{"SELECT * FROM nope", "42P01", "nope"},
		{"CREATE TABLE t (id BIGINT) ENGINE=http", "42710", ""},
		{"SET TIME ZONE 'Europe/Paris'", "22023", ""},
	} {
		_, err := c.Exec(ctx, tc.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: %v, want SQLSTATE %s", tc.sql, err, tc.code)
			continue
		}
		if tc.at != "" && pe.Position != int32(strings.Index(tc.sql, tc.at)+1) {
			t.Errorf("%s: position %d, want that of %q", tc.sql, pe.Position, tc.at)
		}
	}
	// Empty text and comments only (pgx's Ping sends "-- ping").
	if _, err := c.Exec(ctx, " ; "); err != nil {
		t.Errorf("empty query: %v", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	res, err := c.PgConn().Exec(ctx, "/* nothing */").ReadAll()
	if err != nil || len(res) != 1 || res[0].CommandTag.String() != "" {
		t.Errorf("a comment: %v, %v", res, err)
	}
	x := e.connect(pgx.QueryExecModeCacheStatement)
	// A stored query takes no parameters (refused at Parse, at the $1).
	const cv = "CREATE VIEW w2 AS SELECT id FROM t WHERE id = $1"
	var pe *pgconn.PgError
	if _, err := x.Exec(ctx, cv, 1); !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "not allowed in CREATE VIEW") || pe.Position != int32(strings.Index(cv, "$1")+1) {
		t.Errorf("a parameter in CREATE VIEW: %v, want 0A000 at %d", err, strings.Index(cv, "$1")+1)
	}
	if _, err := x.Exec(ctx, "CREATE VIEW w AS SELECT id FROM t"); err != nil {
		t.Errorf("DDL over the extended protocol: %v", err)
	}
}

// TestProtocol32: a client asking for protocol 3.2 is offered 3.0.
func TestProtocol32(t *testing.T) {
	e := start(t, Options{})
	ctx := ctxT(t)
	c, err := pgx.Connect(ctx, e.url()+"&max_protocol_version=3.2")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var v string
	if err := c.QueryRow(ctx, "SHOW TABLES").Scan(&v); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("SHOW TABLES: %v", err)
	}
}

// frontend is a raw protocol client.
type frontend struct {
	t  testing.TB
	nc net.Conn
	fe *pgproto3.Frontend
}

func (e *env) dial() *frontend {
	e.t.Helper()
	nc, err := net.DialTimeout("tcp", e.addr, 10*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	e.t.Cleanup(func() { nc.Close() })
	return &frontend{t: e.t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

func (f *frontend) send(msgs ...pgproto3.FrontendMessage) {
	f.t.Helper()
	for _, m := range msgs {
		f.fe.Send(m)
	}
	if err := f.fe.Flush(); err != nil {
		f.t.Fatal(err)
	}
}

// until reads messages up to one of type T, returning their types.
func (f *frontend) until(stop string) []string {
	f.t.Helper()
	var got []string
	for {
		m, err := f.fe.Receive()
		if err != nil {
			f.t.Fatalf("after %v: %v", got, err)
		}
		name := strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
		if er, ok := m.(*pgproto3.ErrorResponse); ok {
			name += "(" + er.Code + ")"
		}
		got = append(got, name)
		if strings.HasPrefix(name, stop) {
			return got
		}
	}
}

func (f *frontend) startup() {
	f.t.Helper()
	f.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x", "database": "streamsql"}})
	f.until("ReadyForQuery")
}

// closed checks that the server closes the connection.
func (f *frontend) closed() {
	f.t.Helper()
	// What is left (an ErrorResponse) is read up to the end.
	f.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, f.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		f.t.Error("the connection is still open")
	}
}

func TestPortals(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	f := e.dial()
	f.startup()
	f.send(&pgproto3.Parse{Name: "s", Query: "SELECT id FROM v ORDER BY id"},
		&pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"},
		&pgproto3.Describe{ObjectType: 'P', Name: "p"},
		&pgproto3.Execute{Portal: "p", MaxRows: 3},
		&pgproto3.Execute{Portal: "p", MaxRows: 3},
		&pgproto3.Close{ObjectType: 'P', Name: "p"},
		&pgproto3.Sync{})
	got := strings.Join(f.until("ReadyForQuery"), " ")
	want := "ParseComplete ParameterDescription RowDescription BindComplete RowDescription DataRow DataRow DataRow PortalSuspended DataRow CommandComplete CloseComplete ReadyForQuery"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// An error skips to Sync; the statement "s" stays.
	f.send(&pgproto3.Bind{DestinationPortal: "q", PreparedStatement: "nope"}, &pgproto3.Execute{Portal: "q"}, &pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	got = strings.Join(append(f.until("ReadyForQuery"), f.until("ReadyForQuery")...), " ")
	want = "ErrorResponse(26000) ReadyForQuery BindComplete DataRow DataRow DataRow DataRow CommandComplete ReadyForQuery"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	f.send(&pgproto3.Terminate{})
	f.closed()
}

func TestPsql(t *testing.T) {
	psql := needPsql(t)
	e := start(t, Options{})
	e.setup()
	_, port, _ := net.SplitHostPort(e.addr)
	run := func(sql string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, "-X", "-h", "127.0.0.1", "-p", port, "-U", "x", "-d", "streamsql", "-v", "ON_ERROR_STOP=1", "-A", "-F", ",", "-c", sql)
		cmd.Env = []string{"PGSSLMODE=prefer", "PGCONNECT_TIMEOUT=10"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("SELECT id, d, s, b, ts FROM v ORDER BY id")
	want := "id,d,s,b,ts\n1,1.5,one,t,2024-01-02 03:04:05.678\n2,,,,\n3,1e+20,drei ü,f,1999-12-31 23:59:59.001\n4,-1e-05,,t,2000-01-01 00:00:00.000\n(4 rows)\n"
	if err != nil || out != want {
		t.Errorf("psql: %v\n%s\nwant\n%s", err, out, want)
	}
	out, err = run("SELECT nosuch FROM v")
	if err == nil || !strings.Contains(out, "ERROR:  unknown column nosuch") || !strings.Contains(out, "LINE 1: SELECT nosuch FROM v\n               ^") {
		t.Errorf("psql error: %v\n%s", err, out)
	}
	out, err = run(`\dt`)
	if want := "List of relations\nSchema,Name,Type,Owner\npublic,t,table,streamsql\n(1 row)\n"; err != nil || out != want {
		t.Errorf("psql \\dt: %v\n%s\nwant\n%s", err, out, want)
	}
	out, err = run("CREATE VIEW w AS SELECT id FROM t")
	if err != nil || out != "CREATE VIEW\n" {
		t.Errorf("psql DDL: %v\n%s", err, out)
	}
}

// waitGoroutines waits (bounded) until the goroutines are back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBadInput(t *testing.T) {
	e := start(t, Options{MaxMessage: 1 << 20})
	e.setup()
	// A server with a token, for wrong passwords.
	locked := start(t, Options{Token: testToken})
	wrong := "postgres://x:wrong@" + locked.addr + "/streamsql?sslmode=disable"
	// One connection first, so that lazily started goroutines are there.
	e.connect(pgx.QueryExecModeSimpleProtocol).Close(ctxT(t))
	base := runtime.NumGoroutine()
	baseHeap := heapInUse()
	t.Run("malformed startup", func(t *testing.T) {
		f := e.dial()
		f.nc.Write([]byte{0, 0, 0, 8, 0, 0, 0x12, 0x34})
		if got := f.until("ErrorResponse"); got[0] != "ErrorResponse(08P01)" {
			t.Errorf("got %v", got)
		}
		f.closed()
	})
	t.Run("short startup length", func(t *testing.T) {
		f := e.dial()
		f.nc.Write([]byte{0, 0, 0, 2})
		f.until("ErrorResponse")
		f.closed()
	})
	t.Run("protocol 2", func(t *testing.T) {
		f := e.dial()
		f.nc.Write([]byte{0, 0, 0, 8, 0, 2, 0, 0})
		f.until("ErrorResponse")
		f.closed()
	})
	t.Run("unknown message", func(t *testing.T) {
		f := e.dial()
		f.startup()
		f.nc.Write([]byte{'z', 0, 0, 0, 4})
		if got := f.until("ErrorResponse"); got[0] != "ErrorResponse(08P01)" {
			t.Errorf("got %v", got)
		}
		f.closed()
	})
	t.Run("huge length", func(t *testing.T) {
		f := e.dial()
		f.startup()
		f.nc.Write([]byte{'Q', 0x40, 0, 0, 0})
		if got := f.until("ErrorResponse"); got[0] != "ErrorResponse(54000)" {
			t.Errorf("got %v", got)
		}
		f.closed()
	})
	t.Run("disconnect mid-query", func(t *testing.T) {
		for range 20 {
			f := e.dial()
			f.startup()
			f.send(&pgproto3.Query{String: "SELECT id, d, s, b, ts FROM v ORDER BY id"})
			f.nc.Close()
		}
	})
	t.Run("many", func(t *testing.T) {
		// 1,000 bad clients of every kind above, and wrong passwords,
		// one after the other.
		for i := range 1000 {
			if i%5 == 4 {
				_, err := pgx.Connect(ctxT(t), wrong)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "28P01" {
					t.Fatalf("a wrong password: %v, want 28P01", err)
				}
				continue
			}
			f := e.dial()
			switch i % 5 {
			case 0:
				f.nc.Write([]byte{0, 0, 0, 8, 0, 0, 0x12, 0x34})
			case 1:
				f.startup()
				f.nc.Write([]byte{'z', 0, 0, 0, 4})
			case 2:
				f.startup()
				f.nc.Write([]byte{'Q', 0x40, 0, 0, 0})
			case 3:
				f.startup()
				f.send(&pgproto3.Query{String: "SELECT id FROM v"})
				f.nc.Close()
				continue
			}
			f.closed()
			f.nc.Close()
		}
	})
	t.Run("cancel request", func(t *testing.T) {
		f := e.dial()
		f.send(&pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}})
		f.closed()
	})
	// The server still serves.
	c := e.connect(pgx.QueryExecModeCacheStatement)
	if got := readAll(t, must(c.Query(ctxT(t), "SELECT id, d, s, b, ts FROM v ORDER BY id"))); !same(got, e.want()) {
		t.Errorf("after the bad clients: %v", got)
	}
	c.Close(ctxT(t))
	waitGoroutines(t, base)
	// Nothing the bad clients made is kept: the heap is back to about
	// where it was (a generous bound: the engine's own caches move too).
	after := heapInUse()
	t.Logf("heap in use: %.1f MiB before the bad clients, %.1f MiB after; goroutines %d", float64(baseHeap)/(1<<20), float64(after)/(1<<20), runtime.NumGoroutine())
	if after > baseHeap+32<<20 {
		t.Errorf("heap in use %d MiB after the bad clients, %d MiB before", after>>20, baseHeap>>20)
	}
}

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func must(r pgx.Rows, err error) pgx.Rows {
	if err != nil {
		panic(err)
	}
	return r
}

// selfSigned is a TLS configuration with a fresh certificate for
// 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pgwire test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

func TestPassword(t *testing.T) {
	const token = "pgwire-test-token-0123"
	e := start(t, Options{Token: token, TLS: selfSigned(t)})
	ctx := ctxT(t)
	for _, tc := range []struct {
		url, code string
	}{
		{"postgres://x:" + token + "@" + e.addr + "/streamsql?sslmode=require", ""},
		{"postgres://x:" + token + "@" + e.addr + "/streamsql?sslmode=disable", ""}, // SCRAM without TLS
		{"postgres://x:wrong@" + e.addr + "/streamsql?sslmode=require", "28P01"},
		{"postgres://x@" + e.addr + "/streamsql?sslmode=require", "28P01"},
	} {
		c, err := pgx.Connect(ctx, tc.url)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.url, err)
				continue
			}
			var v string
			if err := c.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
				t.Errorf("%s: %v", tc.url, err)
			}
			// Twice through the engine (a background read watches the
			// connection while a statement runs, over TLS too).
			for range 2 {
				if _, err := c.Exec(ctx, "SHOW TABLES"); err != nil {
					t.Errorf("%s: SHOW TABLES: %v", tc.url, err)
				}
			}
			c.Close(ctx)
			continue
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.url, err, tc.code)
		}
	}
	// psql over TLS with the token as its password.
	if psql, err := exec.LookPath("psql"); err == nil {
		_, port, _ := net.SplitHostPort(e.addr)
		pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(pctx, psql, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", port, "-U", "x", "-d", "streamsql", "-c", "SHOW server_version")
		cmd.Env = []string{"PGSSLMODE=require", "PGPASSWORD=" + token, "PGCONNECT_TIMEOUT=10"}
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != ServerVersion+"\n" {
			t.Errorf("psql over TLS: %v\n%s", err, out)
		}
		cmd = exec.CommandContext(pctx, psql, "-X", "-h", "127.0.0.1", "-p", port, "-U", "x", "-d", "streamsql", "-c", "SHOW server_version")
		cmd.Env = []string{"PGSSLMODE=require", "PGPASSWORD=wrong", "PGCONNECT_TIMEOUT=10"}
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "password authentication failed") {
			t.Errorf("psql with a wrong password: %v\n%s", err, out)
		}
	}
	// Without TLS configured, SSLRequest gets 'N': sslmode=require fails,
	// prefer falls back to plain.
	e = start(t, Options{})
	if _, err := pgx.Connect(ctx, "postgres://x@"+e.addr+"/streamsql?sslmode=require"); err == nil {
		t.Error("sslmode=require without TLS connected")
	}
	c, err := pgx.Connect(ctx, "postgres://x@"+e.addr+"/streamsql?sslmode=prefer")
	if err != nil {
		t.Fatalf("sslmode=prefer: %v", err)
	}
	c.Close(ctx)
}

// TestClose: Close closes the listener and open connections and waits for
// their goroutines.
func TestClose(t *testing.T) {
	e := start(t, Options{})
	c := e.connect(pgx.QueryExecModeCacheStatement)
	f := e.dial()
	f.startup()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.closed()
	if err := c.Ping(ctxT(t)); err == nil {
		t.Error("a connection still answers after Close")
	}
	if _, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
		t.Error("the listener still accepts after Close")
	}
	e.srv.mu.Lock()
	n := len(e.srv.conns)
	e.srv.mu.Unlock()
	if n != 0 {
		t.Errorf("%d connections left", n)
	}
}

// TestWatch: while a statement runs, a client that leaves cancels its
// context; a byte that arrives meanwhile is kept for the next message.
func TestWatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	srv, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{s: srv}
	c.setBackend(server)

	// A byte during the statement: kept, the context not cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	stop := c.watch(cancel)
	client.Write([]byte{'Q', 0, 0, 0, 5, 0})
	// The next Read sees 'Q' first whether the watch took it or not.
	stop()
	if ctx.Err() != nil {
		t.Fatal("a byte from the client cancelled the statement")
	}
	msg, err := c.be.Receive()
	if q, ok := msg.(*pgproto3.Query); err != nil || !ok || q.String != "" {
		t.Fatalf("after the watch: %#v, %v", msg, err)
	}

	// The client leaves during the statement: cancelled.
	ctx, cancel = context.WithCancel(context.Background())
	stop = c.watch(cancel)
	client.Close()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client left, the statement's context is not cancelled")
	}
	stop()
}

// TestSetConsistency: SET consistency on a connection chooses the rows its
// pull queries read (committed by default, latest after SET), in both
// protocols; SHOW consistency answers it, no ParameterStatus reports it,
// a bad value is refused naming the allowed ones, and another connection
// keeps its own.
func TestSetConsistency(t *testing.T) {
	e := start(t, Options{})
	ctx := ctxT(t)
	// The view checkpoints only when asked: committed stays as of the
	// checkpoint below.
	for _, sql := range []string{
		`CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http`,
		`CREATE VIEW cv AS SELECT /*+ SET_VAR(checkpoint_interval='1h') */ k, COUNT(*) AS n FROM t GROUP BY k`,
	} {
		if _, err := e.eng.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := e.eng.Ingest(ctx, "t", `[{"k": 1}, {"k": 1}, {"k": 2}]`, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Checkpoint(ctx, "cv"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Ingest(ctx, "t", `[{"k": 2}, {"k": 3}]`, ""); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		_, rows, err := e.eng.Results("cv", false)
		if err == nil && len(rows) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the latest results never held the new rows: %v %v", rows, err)
		}
		time.Sleep(5 * time.Millisecond) // polling the engine, bounded by the deadline
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := e.connect(mode)
		other := e.connect(mode)
		show := func(c *pgx.Conn) string {
			t.Helper()
			var s string
			if err := c.QueryRow(ctx, "SHOW consistency").Scan(&s); err != nil {
				t.Fatalf("%v: SHOW consistency: %v", mode, err)
			}
			return s
		}
		sum := func(c *pgx.Conn) int64 {
			t.Helper()
			var n int64
			if err := c.QueryRow(ctx, "SELECT SUM(n) FROM cv").Scan(&n); err != nil {
				t.Fatalf("%v: SELECT SUM(n): %v", mode, err)
			}
			return n
		}
		if s, n := show(c), sum(c); s != "committed" || n != 3 {
			t.Errorf("%v: before SET: consistency %q, SUM %d; want committed, 3", mode, s, n)
		}
		if tag, err := c.Exec(ctx, "SET consistency = 'latest'"); err != nil || tag.String() != "SET" {
			t.Fatalf("%v: SET consistency: %q, %v", mode, tag, err)
		}
		if s, n := show(c), sum(c); s != "latest" || n != 5 {
			t.Errorf("%v: after SET: consistency %q, SUM %d; want latest, 5", mode, s, n)
		}
		if got := c.PgConn().ParameterStatus("consistency"); got != "" {
			t.Errorf("%v: consistency reported as a parameter (%q)", mode, got)
		}
		_, err := c.Exec(ctx, "SET consistency TO 'newest'")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, "consistency must be committed or latest") {
			t.Errorf("%v: SET consistency TO 'newest': %v, want the allowed values", mode, err)
		}
		if s, n := show(c), sum(c); s != "latest" || n != 5 {
			t.Errorf("%v: after a refused SET: consistency %q, SUM %d; want latest, 5", mode, s, n)
		}
		if s, n := show(other), sum(other); s != "committed" || n != 3 {
			t.Errorf("%v: another connection: consistency %q, SUM %d; want committed, 3", mode, s, n)
		}
		if _, err := c.Exec(ctx, "SET consistency TO committed"); err != nil {
			t.Fatal(err)
		}
		if s, n := show(c), sum(c); s != "committed" || n != 3 {
			t.Errorf("%v: SET back: consistency %q, SUM %d; want committed, 3", mode, s, n)
		}
	}
}

// TestPanicEndsOneConnection: a panic while a connection's statement runs
// ends that connection with a FATAL XX000; the server keeps serving the
// others, and nothing is left behind.
func TestPanicEndsOneConnection(t *testing.T) {
	e := start(t, Options{beforeStatement: func(sql string) {
		if strings.Contains(sql, "boom") {
			panic("a broken invariant")
		}
	}})
	e.setup()
	other := e.connect(pgx.QueryExecModeCacheStatement)
	e.connect(pgx.QueryExecModeSimpleProtocol).Close(ctxT(t))
	base := runtime.NumGoroutine()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		c := e.connect(mode)
		_, err := c.Exec(ctxT(t), "SELECT id AS boom FROM v")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "XX000" || pe.Severity != "FATAL" || !strings.Contains(pe.Message, "a broken invariant") {
			t.Errorf("%v: %v, want a FATAL XX000", mode, err)
		}
		if !c.IsClosed() && c.Ping(ctxT(t)) == nil {
			t.Errorf("%v: the connection still answers after the panic", mode)
		}
	}
	if got := readAll(t, must(other.Query(ctxT(t), "SELECT id, d, s, b, ts FROM v ORDER BY id"))); !same(got, e.want()) {
		t.Errorf("another connection after the panics: %v", got)
	}
	waitGoroutines(t, base)
}
