package e2e

// A query that does not answer and a sink that hangs (issue: one row froze
// the whole API): a view whose task spins in one batch (STREAMSQL_SPIN, as
// a runaway expression would) and a PostgreSQL sink whose database is
// frozen with SIGSTOP, while an INSERT INTO a sink there waits for the
// database to answer its look at the table, and a Kafka source whose
// broker accepts connections and never answers. Meanwhile every other API call
// answers within a second (one isolated call of at most two seconds is
// forgiven: a loaded machine's fsync, not a wait, which would recur in
// every round), the spinning query is failed with its reason
// after --stall-timeout, and both can be dropped.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// apiBound is how long an API call may take while a query spins or a
// sink hangs (the bound; calls take milliseconds normally).
const apiBound = time.Second

// timedCall is one API call and what it must answer.
type timedCall struct {
	name   string
	method string
	path   string
	ct     string
	body   func(i int) []byte
	want   int
}

func TestHungQueryAndSink(t *testing.T) {
	pg := startPG(t)
	broker := blackhole(t)
	srv := startServerEnv(t, []string{"STREAMSQL_SPIN=task.process/spin"}, "--stall-timeout", "4s")
	srv.sql(t, `CREATE TABLE ev (k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE TABLE other (k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE VIEW spin AS SELECT k, COUNT(*) AS n FROM ev GROUP BY k;
		CREATE VIEW ok AS SELECT k, COUNT(*) AS n FROM other GROUP BY k;
		CREATE TABLE pgs (k BIGINT, n BIGINT, PRIMARY KEY (k)) ENGINE=postgres CONNECTION='`+pg.DSN("")+`'
		  ENGINE_ATTRIBUTE='{"table": "hang_pgs", "create_table": true}';
		INSERT INTO pgs SELECT k, COUNT(*) FROM other GROUP BY k;
		CREATE TABLE kt (k BIGINT, ts TIMESTAMP(3)) ENGINE=kafka CONNECTION='`+broker+`'
		  ENGINE_ATTRIBUTE='{"topic": "t", "event_time": "ts"}';
		CREATE VIEW kv AS SELECT k, COUNT(*) AS n FROM kt GROUP BY k`)
	srv.waitRunning(t, "ok", "pgs")
	row := func(k, i int) Row { return Row{"k": k, "ts": 1_700_000_000_000 + int64(i)} }
	srv.postRows(t, "other", []Row{row(1, 0), row(2, 1)})
	srv.checkpoint(t)

	// The database hangs, then the spinning row arrives.
	if err := pg.Freeze(); err != nil {
		t.Fatal(err)
	}
	defer pg.Thaw()
	srv.postRows(t, "ev", []Row{row(7, 2)})
	// An INSERT INTO a sink in the frozen database: its look at the table
	// waits for the database (up to 5 s) without holding anyone up.
	inserted := make(chan error, 1)
	go func() {
		r, err := srv.try("POST", "/v1/sql", "application/sql", nil, []byte(`CREATE TABLE pgs2 (k BIGINT, n BIGINT, PRIMARY KEY (k))
			ENGINE=postgres CONNECTION='`+pg.DSN("")+`' ENGINE_ATTRIBUTE='{"table": "hang_pgs2", "create_table": true}';
			INSERT INTO pgs2 SELECT k, COUNT(*) FROM other GROUP BY k`))
		if err == nil && r.status != 200 {
			err = fmt.Errorf("%s", r)
		}
		inserted <- err
	}()

	calls := []timedCall{
		{name: "healthz", method: "GET", path: "/healthz", want: 200},
		{name: "SHOW TABLES", method: "POST", path: "/v1/sql", ct: "application/sql", body: fixed("SHOW TABLES"), want: 200},
		{name: "list queries", method: "GET", path: "/v1/queries", want: 200},
		{name: "the spinning query", method: "GET", path: "/v1/queries/spin", want: 200},
		{name: "the hung sink's query", method: "GET", path: "/v1/queries/pgs", want: 200},
		{name: "a query of a hung broker", method: "GET", path: "/v1/queries/kv", want: 200},
		{name: "tables", method: "GET", path: "/v1/tables", want: 200},
		{name: "a table", method: "GET", path: "/v1/tables/ev", want: 200},
		{name: "ingest into another table", method: "POST", path: "/v1/tables/other/rows", ct: "application/x-ndjson",
			body: func(i int) []byte { return ndjson(t, []Row{row(3, 10+i)}) }, want: 200},
		{name: "another view's results", method: "GET", path: "/v1/queries/ok/results?consistency=latest", want: 200},
		{name: "a pull query", method: "POST", path: "/v1/sql", ct: "application/sql", body: fixed("SELECT * FROM ok WHERE n > 0"), want: 200},
		{name: "CREATE TABLE", method: "POST", path: "/v1/sql", ct: "application/sql",
			body: func(i int) []byte { return []byte(fmt.Sprintf("CREATE TABLE t%d (a BIGINT) ENGINE=http", i)) }, want: 200},
		{name: "CREATE VIEW", method: "POST", path: "/v1/sql", ct: "application/sql",
			body: func(i int) []byte {
				return []byte(fmt.Sprintf("CREATE VIEW v%d AS SELECT k, COUNT(*) AS n FROM other GROUP BY k", i))
			}, want: 200},
		{name: "EXPLAIN", method: "POST", path: "/v1/sql", ct: "application/sql", body: fixed("EXPLAIN SELECT k, COUNT(*) FROM ev GROUP BY k"), want: 200},
		{name: "another view's checkpoint", method: "POST", path: "/v1/checkpoints?query=ok", want: 200},
		{name: "metrics", method: "GET", path: "/metrics", want: 200},
		{name: "checkpoint history", method: "GET", path: "/v1/queries/spin/checkpoints", want: 200},
	}
	// Past the stall timeout (4s), checking every call each round.
	deadline := time.Now().Add(7 * time.Second)
	var slowest time.Duration
	var slowestName string
	rounds := 0
	forgiven := ""
	for i := 0; time.Now().Before(deadline); i++ {
		for _, c := range calls {
			d := timedWithin(t, srv, c, i, 2*apiBound)
			if d > apiBound {
				// A call that waits for the spinning task, the frozen
				// database or the hung broker is slow every time: one
				// isolated sample under 2 s is the machine (an fsync while
				// the rest of the test suite writes), not a wait.
				if forgiven != "" {
					t.Fatalf("%s took %v while a query spins and a sink hangs, want at most %v (and %s was slow before)", c.name, d, apiBound, forgiven)
				}
				forgiven = fmt.Sprintf("%s (%v, round %d)", c.name, d, i)
				t.Logf("one slow call forgiven: %s", forgiven)
			}
			if d > slowest {
				slowest, slowestName = d, c.name
			}
		}
		rounds++
	}
	t.Logf("%d rounds of %d calls while a query spun and a sink hung; slowest: %s, %v", rounds, len(calls), slowestName, slowest)
	select {
	case err := <-inserted:
		if err != nil {
			t.Fatalf("INSERT INTO a sink of the frozen database: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("INSERT INTO a sink of the frozen database: no answer in 10 s")
	}
	q := srv.query(t, "spin")
	if q.State != "failed" || !strings.Contains(q.Error, "does not answer") || !strings.Contains(q.Error, "spin/stage1/0 has worked on one message") {
		t.Fatalf("the spinning query after the stall timeout: state %q, error %q; want failed, naming its stuck task", q.State, q.Error)
	}
	if q := srv.query(t, "ok"); q.State != "running" {
		t.Fatalf("the other view: state %q (%s)", q.State, q.Error)
	}

	// Both can be dropped while they hang; the server goes on.
	timedWithin(t, srv, timedCall{name: "DROP VIEW spin", method: "POST", path: "/v1/sql", ct: "application/sql", body: fixed("DROP VIEW spin"), want: 200}, 0, 3*time.Second)
	timedWithin(t, srv, timedCall{name: "drop the hung sink's query", method: "DELETE", path: "/v1/queries/pgs", want: 200}, 0, 3*time.Second)
	for _, c := range calls {
		if !strings.Contains(c.path, "spin") && !strings.Contains(c.path, "pgs") {
			timed(t, srv, c, 1000)
		}
	}
	if err := pg.Thaw(); err != nil {
		t.Fatal(err)
	}
	// The name is free again, and the new query answers (the spin point
	// fires once).
	srv.sql(t, "CREATE VIEW spin AS SELECT k, COUNT(*) AS n FROM ev GROUP BY k")
	srv.waitRunning(t, "spin")
	srv.checkpoint(t)
	if rs := srv.results(t, "spin"); len(rs.Rows) != 1 {
		t.Fatalf("the re-created view: %d rows, want 1 (k = 7)", len(rs.Rows))
	}
}

// blackhole is the address of a server that accepts connections and
// never answers (a hung Kafka broker), until the test ends.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func fixed(s string) func(int) []byte { return func(int) []byte { return []byte(s) } }

// timed makes call c (round i) and fails t unless it answers c.want
// within apiBound.
func timed(t *testing.T, srv *server, c timedCall, i int) time.Duration {
	t.Helper()
	return timedWithin(t, srv, c, i, apiBound)
}

// timedWithin makes call c and fails t unless it answers c.want within
// bound; it returns how long it took.
func timedWithin(t *testing.T, srv *server, c timedCall, i int, bound time.Duration) time.Duration {
	t.Helper()
	var body []byte
	if c.body != nil {
		body = c.body(i)
	}
	start := time.Now()
	r, err := srv.try(c.method, c.path, c.ct, http.Header{}, body)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s (%s %s): %v after %v", c.name, c.method, c.path, err, took)
	}
	if r.status != c.want {
		t.Fatalf("%s (%s %s): %s, want %d", c.name, c.method, c.path, r, c.want)
	}
	if took > bound {
		t.Fatalf("%s (%s %s) took %v while a query spins and a sink hangs, want at most %v", c.name, c.method, c.path, took, bound)
	}
	return took
}
