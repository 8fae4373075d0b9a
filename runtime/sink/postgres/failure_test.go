package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

func TestServerKilledAndRestarted(t *testing.T) {
	spec := testSpec(newSchema(t), "out", true)
	p := open(t, spec)
	var want []plan.Row
	for e := uint64(1); e <= 3; e++ {
		r := row(int64(e), "r", float64(e), int64(e), true, int64(e))
		want = append(want, r)
		if err := p.CommitEpoch(ctx(t), e, []sink.Change{upsert(r)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			srv.Start()
		}
	}()
	err := p.CommitEpoch(ctx(t), 4, []sink.Change{upsert(row(4, "lost", 4, 4, true, 4))})
	if err == nil || sink.IsPermanent(err) {
		t.Fatalf("CommitEpoch with the server down: %v, want a retryable error", err)
	}
	if err := p.Open(ctx(t)); err == nil || sink.IsPermanent(err) {
		t.Fatalf("Open with the server down: %v, want a retryable error", err)
	}
	if _, err := p.Committed(ctx(t)); err == nil || sink.IsPermanent(err) {
		t.Fatalf("Committed with the server down: %v, want a retryable error", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	if err := p.Open(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := committed(t, p); n != 3 {
		t.Fatalf("Committed after the restart = %d, want 3", n)
	}
	wantRows(t, readTable(t, spec), want)
	r := row(4, "r", 4, 4, true, 4)
	if err := p.CommitEpoch(ctx(t), 4, []sink.Change{upsert(r)}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, readTable(t, spec), append(want, r))
}

// cutProxy forwards TCP connections to the server; armed, it passes a
// COMMIT on to the server and then cuts the connection before the
// server's answer reaches the client.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cut    atomic.Int32
	mu     sync.Mutex
	conns  []net.Conn
}

func startProxy(t *testing.T, port int) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x := &cutProxy{ln: ln, target: "127.0.0.1:" + strconv.Itoa(port)}
	t.Cleanup(func() {
		ln.Close()
		x.mu.Lock()
		for _, c := range x.conns {
			c.Close()
		}
		x.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", x.target)
			if err != nil {
				c.Close()
				continue
			}
			x.mu.Lock()
			x.conns = append(x.conns, c, s)
			x.mu.Unlock()
			drop := new(atomic.Bool)
			go x.toClient(c, s, drop)
			go x.toServer(c, s, drop)
		}
	}()
	return x
}

// toServer forwards the client's bytes; seeing the armed COMMIT, it has
// toClient drop the server's answer.
func (x *cutProxy) toServer(c, s net.Conn, drop *atomic.Bool) {
	defer s.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			// pgx commits with a simple query "commit".
			if x.armed.Load() && bytes.Contains(buf[:n], []byte("commit\x00")) {
				x.armed.Store(false)
				x.cut.Add(1)
				drop.Store(true)
			}
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// toClient forwards the server's bytes, but when the answer to the
// COMMIT arrives (the server has committed) cuts the client off instead.
func (x *cutProxy) toClient(c, s net.Conn, drop *atomic.Bool) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if drop.Load() {
			s.Close()
			return
		}
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (x *cutProxy) dsn() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", x.ln.Addr())
}

func TestCommitOutcomeUnknown(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		x := startProxy(t, srv.Port)
		spec := testSpec(newSchema(t), "out", true)
		spec.Connection = x.dsn()
		p := openPath(t, spec, stageAt)
		if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))}); err != nil {
			t.Fatal(err)
		}
		x.armed.Store(true)
		err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2))})
		if x.cut.Load() != 1 {
			t.Fatalf("the proxy did not cut the COMMIT (CommitEpoch: %v)", err)
		}
		if err == nil || sink.IsPermanent(err) || errors.Is(err, sink.ErrCommitted) || !strings.Contains(err.Error(), "outcome unknown") {
			t.Fatalf("CommitEpoch cut during COMMIT: %v, want a retryable 'outcome unknown' error", err)
		}
		// The caller reads Committed (the publisher reconnects): the
		// server did commit.
		if n := committed(t, p); n != 2 {
			t.Fatalf("Committed = %d, want 2", n)
		}
		wantRows(t, readTable(t, spec), []plan.Row{row(1, "a", 1, 1, true, 1), row(2, "b", 2, 2, true, 2)})
		if err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2))}); !errors.Is(err, sink.ErrCommitted) {
			t.Fatalf("%v, want ErrCommitted", err)
		}
	})
}

// childEnv tells a test binary it is TestFaultPoints' child: "DSN SCHEMA STAGEAT".
const childEnv = "STREAMSQL_PGSINK_FAULT_CHILD"

// TestFaultPoints crashes a child process at the sink's fault points and
// checks what PostgreSQL kept: nothing before COMMIT, the whole epoch
// with its progress row after it.
func TestFaultPoints(t *testing.T) {
	if os.Getenv("STREAMSQL_FAULT") != "" {
		t.Skip("STREAMSQL_FAULT is set for this process")
	}
	for _, point := range []string{"sink.before_commit", "sink.after_commit"} {
		for _, stageAt := range []int{1 << 30, 1} {
			t.Run(fmt.Sprintf("%s/%d", point, stageAt), func(t *testing.T) {
				schema := newSchema(t)
				cmd := exec.Command(os.Args[0], "-test.run=^TestFaultChild$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), "STREAMSQL_FAULT="+point+"@2", fmt.Sprintf("%s=%s %s %d", childEnv, srv.DSN(""), schema, stageAt))
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("child: %v, want it killed at %s\n%s", err, point, out)
				}
				if !strings.Contains(string(out), "fault: crashing at "+point) {
					t.Fatalf("child output:\n%s", out)
				}
				spec := testSpec(schema, "out", true)
				p := open(t, spec)
				n := committed(t, p)
				got := readTable(t, spec)
				if point == "sink.before_commit" {
					if n != 1 || len(got) != 1 {
						t.Fatalf("crash before COMMIT: Committed %d, %d rows; want epoch 1's 1 row", n, len(got))
					}
				} else {
					if n != 2 || len(got) != 3 {
						t.Fatalf("crash after COMMIT: Committed %d, %d rows; want epoch 2's 3 rows", n, len(got))
					}
				}
			})
		}
	}
}

func TestFaultChild(t *testing.T) {
	v := os.Getenv(childEnv)
	if v == "" {
		t.Skip("run by TestFaultPoints")
	}
	fault.ArmFromEnv() // as cmd/streamsql does at its start
	f := strings.Fields(v)
	spec := testSpec(f[1], "out", true)
	spec.Connection = f[0]
	p := open(t, spec)
	p.stageAt, _ = strconv.Atoi(f[2])
	// The point is armed for its second hit: epoch 1 commits, epoch 2
	// crashes.
	if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))}); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2)), upsert(row(3, "c", 3, 3, true, 3))}); err != nil {
		t.Fatal(err)
	}
	t.Fatal("survived the fault point")
}

// A table dropped or changed while the sink runs: the write fails
// (retryably), the publisher reconnects and checks the table again, and
// that check decides.
func TestTableChangedWhileRunning(t *testing.T) {
	schema := newSchema(t)
	spec := testSpec(schema, "out", true, "create_table", "false")
	mustExec(t, fmt.Sprintf(`CREATE TABLE %s.out (id bigint PRIMARY KEY, name text, price float8, ts timestamptz, ok bool, qty bigint)`, schema))
	p := open(t, spec)
	if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, fmt.Sprintf(`ALTER TABLE %s.out DROP COLUMN qty`, schema))
	err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2))})
	if err == nil || sink.IsPermanent(err) {
		t.Fatalf("CommitEpoch after a column was dropped: %v, want a retryable error", err)
	}
	err = p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2))})
	if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), `has no column "qty"`) {
		t.Fatalf("CommitEpoch retried: %v, want a permanent error naming the column", err)
	}
	// The column is back: the sink goes on.
	mustExec(t, fmt.Sprintf(`ALTER TABLE %s.out ADD COLUMN qty numeric`, schema))
	if err := p.Open(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2))}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, readTable(t, spec), []plan.Row{
		{plan.Int(1), plan.Str("a"), plan.Float(1), plan.Time(1), plan.Bool(true), plan.Null},
		row(2, "b", 2, 2, true, 2),
	})
}

// A write that outlives its context is canceled on the server too (pgx
// sends a cancel request when it gives up on a connection), so its locks
// are released, and the error is retryable.
func TestWriteTimeoutCancelsOnServer(t *testing.T) {
	schema := newSchema(t)
	spec := testSpec(schema, "out", true)
	p := open(t, spec)
	locker, err := pgx.Connect(ctx(t), srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx(t), fmt.Sprintf(`LOCK TABLE %s.out IN ACCESS EXCLUSIVE MODE`, pgx.Identifier{schema}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	err = p.CommitEpoch(short, 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))})
	if err == nil || sink.IsPermanent(err) {
		t.Fatalf("CommitEpoch blocked on a lock past its deadline: %v, want a retryable error", err)
	}
	// Nothing of the publisher's waits on the server any more.
	for i := 0; ; i++ {
		got := mustQuery(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'streamsql' AND wait_event_type = 'Lock'`)
		if got[0][0] == "0" {
			break
		}
		if i == 50 {
			t.Fatalf("the canceled statement still waits on the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tx.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := committed(t, p); n != 0 {
		t.Fatalf("Committed = %d", n)
	}
	if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, readTable(t, spec), []plan.Row{row(1, "a", 1, 1, true, 1)})
}
