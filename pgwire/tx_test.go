package pgwire

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// answer reads a simple query's answer: the messages (tags, notices and
// errors with their codes, DataRows counted) and ReadyForQuery's status.
func (f *frontend) answer() string {
	f.t.Helper()
	var out []string
	rows := 0
	for {
		m, err := f.fe.Receive()
		if err != nil {
			f.t.Fatalf("after %v: %v", out, err)
		}
		switch m := m.(type) {
		case *pgproto3.DataRow:
			rows++
			continue
		case *pgproto3.RowDescription:
			continue
		case *pgproto3.CommandComplete:
			out = append(out, string(m.CommandTag))
		case *pgproto3.NoticeResponse:
			out = append(out, "NOTICE "+m.Severity+" "+m.Code)
		case *pgproto3.ErrorResponse:
			out = append(out, "ERROR "+m.Code)
		case *pgproto3.ReadyForQuery:
			if rows > 0 {
				out = append(out, fmt.Sprintf("%d rows", rows))
			}
			return strings.Join(append(out, string(m.TxStatus)), ", ")
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		}
	}
}

// TestTransactionStates: BEGIN, COMMIT and ROLLBACK with PostgreSQL's
// tags, notices and ReadyForQuery status; a failed block refuses all but
// its end (25P02), and its COMMIT answers ROLLBACK.
func TestTransactionStates(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	f := e.dial()
	f.startup()
	for _, tc := range []struct{ sql, want string }{
		{"BEGIN", "BEGIN, T"},
		{"SELECT id FROM v", "SELECT 4, 4 rows, T"},
		{"begin", "NOTICE WARNING 25001, BEGIN, T"},
		{"SHOW TimeZone", "SHOW, 1 rows, T"},
		{"SELECT nosuch FROM v", "ERROR 42703, E"},
		{"SELECT id FROM v", "ERROR 25P02, E"},
		{"SHOW TimeZone", "ERROR 25P02, E"},
		{"SET application_name = 'x'", "ERROR 25P02, E"},
		{"BEGIN", "ERROR 25P02, E"},
		{"SAVEPOINT a", "ERROR 25P02, E"},
		{" ; ", "EmptyQueryResponse, E"},
		{"COMMIT;", "ROLLBACK, I"},
		{"COMMIT", "NOTICE WARNING 25P01, COMMIT, I"},
		{"ROLLBACK", "NOTICE WARNING 25P01, ROLLBACK, I"},
		{"SELECT nosuch FROM v", "ERROR 42703, I"},
		{"START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE", "START TRANSACTION, T"},
		{"SAVEPOINT a", "ERROR 0A000, E"},
		{"ABORT", "ROLLBACK, I"},
		{"BEGIN WORK", "BEGIN, T"},
		{"RELEASE SAVEPOINT a", "ERROR 0A000, E"},
		{"rollback transaction", "ROLLBACK, I"},
		{"Begin Transaction Isolation Level Serializable", "BEGIN, T"},
		{"CREATE VIEW w AS SELECT id FROM t", "CREATE VIEW, T"},
		{"END", "COMMIT, I"},
		{"begin isolation level nonsense", "ERROR 42601, I"},
	} {
		f.send(&pgproto3.Query{String: tc.sql})
		if got := f.answer(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.sql, got, tc.want)
		}
	}
	// Statements in a block run at once: a view created in one is there
	// before the block ends, for every connection.
	f.send(&pgproto3.Query{String: "BEGIN"})
	f.answer()
	f.send(&pgproto3.Query{String: "CREATE VIEW x AS SELECT id FROM t"})
	f.answer()
	g := e.dial()
	g.startup()
	g.send(&pgproto3.Query{String: "SELECT id FROM x"})
	if got := g.answer(); !strings.HasPrefix(got, "SELECT") {
		t.Errorf("a view of an open block from another connection: %s", got)
	}
	f.send(&pgproto3.Query{String: "ROLLBACK"})
	f.answer()
	g.send(&pgproto3.Query{String: "SELECT id FROM x"})
	if got := g.answer(); !strings.HasPrefix(got, "SELECT") {
		t.Errorf("a view of a rolled back block: %s (statements are not undone)", got)
	}
}

// TestTransactionExtended: the same over the extended protocol, where a
// block's portals outlive Sync (JDBC's fetch size).
func TestTransactionExtended(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	f := e.dial()
	f.startup()
	// sync reads to ReadyForQuery: the messages, with the tags of
	// CommandComplete, and the status.
	sync := func() string {
		t.Helper()
		var got []string
		for {
			m, err := f.fe.Receive()
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			name := strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
			switch m := m.(type) {
			case *pgproto3.ErrorResponse:
				name += "(" + m.Code + ")"
			case *pgproto3.CommandComplete:
				name += "(" + string(m.CommandTag) + ")"
			case *pgproto3.ReadyForQuery:
				return strings.Join(append(got, name+"("+string(m.TxStatus)+")"), " ")
			}
			got = append(got, name)
		}
	}
	for _, tc := range []struct {
		msgs []pgproto3.FrontendMessage
		want string
	}{
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "BEGIN"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ParseComplete BindComplete CommandComplete(BEGIN) ReadyForQuery(T)"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Name: "s", Query: "SELECT id FROM v ORDER BY id"}, &pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"},
			&pgproto3.Execute{Portal: "p", MaxRows: 3}, &pgproto3.Sync{}},
			"ParseComplete BindComplete DataRow DataRow DataRow PortalSuspended ReadyForQuery(T)"},
		// A block's portal outlives Sync.
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{}},
			"DataRow CommandComplete(SELECT 1) ReadyForQuery(T)"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "SELECT nosuch FROM v"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ErrorResponse(42703) ReadyForQuery(E)"}, // the statement is planned (and fails) at Parse
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{DestinationPortal: "q", PreparedStatement: "s"}, &pgproto3.Execute{Portal: "q"}, &pgproto3.Sync{}},
			"BindComplete ErrorResponse(25P02) ReadyForQuery(E)"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "COMMIT"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ParseComplete BindComplete CommandComplete(ROLLBACK) ReadyForQuery(I)"},
		// Outside a block, portals end at Sync.
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"}, &pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Sync{}},
			"BindComplete DataRow PortalSuspended ReadyForQuery(I)"},
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{}},
			"ErrorResponse(34000) ReadyForQuery(I)"},
	} {
		f.send(tc.msgs...)
		if got := sync(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestTransactionPgx: pgx's transactions (its Commit reads the tag: a
// failed block's COMMIT is ErrTxCommitRollback) and TxStatus.
func TestTransactionPgx(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			c := e.connect(mode)
			ctx := ctxT(t)
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s := c.PgConn().TxStatus(); s != 'T' {
				t.Errorf("in a block: %c", s)
			}
			if got := readAll(t, must(tx.Query(ctx, "SELECT id, d, s, b, ts FROM v ORDER BY id"))); !same(got, e.want()) {
				t.Errorf("in a block: %v", got)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Errorf("Commit: %v", err)
			}
			if s := c.PgConn().TxStatus(); s != 'I' {
				t.Errorf("after Commit: %c", s)
			}

			tx, err = c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadWrite})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.Exec(ctx, "SELECT nosuch FROM v")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42703" {
				t.Errorf("an error in a block: %v", err)
			}
			if s := c.PgConn().TxStatus(); s != 'E' {
				t.Errorf("in a failed block: %c", s)
			}
			_, err = tx.Exec(ctx, "SELECT id FROM v")
			if !errors.As(err, &pe) || pe.Code != "25P02" {
				t.Errorf("a statement in a failed block: %v", err)
			}
			if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
				t.Errorf("Commit of a failed block: %v, want ErrTxCommitRollback", err)
			}

			tx, err = c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Errorf("Rollback: %v", err)
			}
			var n int64
			if err := c.QueryRow(ctx, "SELECT id FROM v WHERE id = 3").Scan(&n); err != nil || n != 3 {
				t.Errorf("after the blocks: %d, %v", n, err)
			}
		})
	}
}
