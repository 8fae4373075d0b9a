package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL wire protocol of `serve --pg-addr`, with the clients
// people use: psql (Debian's postgresql-client), psycopg2 (Debian's
// python3-psycopg2) and pgx, logging in with the token (SCRAM-SHA-256) on
// loopback. What each reads of a view equals GET
// /v1/queries/{name}/results, compared as values (each client's types
// normalized to one text form).

const pgToken = "pgwire-e2e-token-0123456789"

// bearer adds the token to every request of the harness's client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// ensureDebian returns the path of a file of Debian's package pkg
// (found by have), installing the package with apt-get when it is missing
// and the test runs as root; otherwise the test fails with the command to
// run. It never skips.
func ensureDebian(t *testing.T, pkg string, have func() (string, bool)) string {
	t.Helper()
	if p, ok := have(); ok {
		return p
	}
	if os.Geteuid() != 0 {
		t.Fatalf("Debian's %s is missing and this test is not root, so it cannot install it: run `apt-get install -y %s` as root", pkg, pkg)
	}
	install := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("apt-get %s: %v\n%s", strings.Join(args, " "), err, lastBytes(b, 4096))
		}
		return err
	}
	t.Logf("%s is missing: apt-get install -y %s", pkg, pkg)
	if install("install", "-y", "-q", "--no-install-recommends", pkg) != nil {
		if err := install("update", "-q"); err != nil {
			t.Fatalf("apt-get update failed (%v): cannot install Debian's %s", err, pkg)
		}
		if err := install("install", "-y", "-q", "--no-install-recommends", pkg); err != nil {
			t.Fatalf("apt-get install -y %s failed (%v)", pkg, err)
		}
	}
	p, ok := have()
	if !ok {
		t.Fatalf("apt-get installed %s but it is still missing", pkg)
	}
	return p
}

func ensurePsql(t *testing.T) string {
	return ensureDebian(t, "postgresql-client", func() (string, bool) {
		p, err := exec.LookPath("psql")
		return p, err == nil
	})
}

// ensurePsycopg2 returns Debian's python (/usr/bin/python3, not one of
// pyenv's) once it imports psycopg2.
func ensurePsycopg2(t *testing.T) string {
	const python = "/usr/bin/python3"
	return ensureDebian(t, "python3-psycopg2", func() (string, bool) {
		return python, exec.Command(python, "-c", "import psycopg2").Run() == nil
	})
}

// pgRow is a row as text values, in the view's column order; NULL is nil.
type pgRow []*string

func (r pgRow) String() string {
	var b strings.Builder
	for i, v := range r {
		if i > 0 {
			b.WriteString(" | ")
		}
		if v == nil {
			b.WriteString("NULL")
		} else {
			b.WriteString(strconv.Quote(*v))
		}
	}
	return b.String()
}

func pgText(s string) *string { return &s }

// The normal forms: integers in decimal, doubles in Go's shortest form,
// booleans true/false, timestamps RFC 3339 in UTC with milliseconds.
func normFloat(f float64) *string { return pgText(strconv.FormatFloat(f, 'g', -1, 64)) }
func normTime(tm time.Time) *string {
	return pgText(tm.UTC().Format("2006-01-02T15:04:05.000Z"))
}

// normParse normalizes a client's text value of column kind k.
func normParse(t *testing.T, k, v string) *string {
	t.Helper()
	switch k {
	case "double":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("a double %q: %v", v, err)
		}
		return normFloat(f)
	case "bool":
		switch v {
		case "t", "true", "True":
			return pgText("true")
		case "f", "false", "False":
			return pgText("false")
		}
		t.Fatalf("a boolean %q", v)
	case "timestamp":
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if tm, err := time.Parse(layout, v); err == nil {
				return normTime(tm)
			}
		}
		t.Fatalf("a timestamp %q", v)
	}
	return pgText(v)
}

// kinds are the column kinds of view ev.
var evKinds = []string{"bigint", "text", "double", "bool", "timestamp"}

const evSelect = "SELECT id, name, score, ok, ts FROM ev ORDER BY id"

func sortRows(rows []pgRow) {
	sort.Slice(rows, func(i, j int) bool {
		a, _ := strconv.ParseInt(*rows[i][0], 10, 64)
		b, _ := strconv.ParseInt(*rows[j][0], 10, 64)
		return a < b
	})
}

func rowsText(rows []pgRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestPgwireClients: psql runs DDL, a pull query and an error with its
// position; rows come over HTTP; psycopg2 (with client-side parameters
// and its default transaction mode), pgx (binary results) and psql read
// the view as GET /v1/queries/ev/results gives it.
func TestPgwireClients(t *testing.T) {
	psql := ensurePsql(t)
	python := ensurePsycopg2(t)
	pgAddr := freeAddr(t)
	srv := startServer(t, "--token", pgToken, "--pg-addr", pgAddr)
	srv.client = &http.Client{Timeout: requestTimeout, Transport: bearer{pgToken}}
	host, port, _ := net.SplitHostPort(pgAddr)

	runPsql := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, append([]string{"-X", "-h", host, "-p", port, "-U", "e2e", "-d", "streamsql", "-v", "ON_ERROR_STOP=1"}, args...)...)
		cmd.Env = []string{"PGPASSWORD=" + pgToken, "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=20", "PGCLIENTENCODING=UTF8"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// DDL through psql.
	out, err := runPsql("-c", "CREATE TABLE e (id BIGINT NOT NULL, name VARCHAR(64), score DOUBLE, ok BOOLEAN, ts TIMESTAMP(3)) ENGINE=http",
		"-c", "CREATE VIEW ev AS SELECT id, name, score, ok, ts FROM e")
	if err != nil || out != "CREATE TABLE\nCREATE VIEW\n" {
		t.Fatalf("psql DDL: %v\n%s", err, out)
	}
	// A wrong password.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = pgx.Connect(ctx, "postgres://e2e:wrong@"+pgAddr+"/streamsql?sslmode=disable")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28P01" {
		t.Errorf("a wrong password: %v, want 28P01", err)
	}

	// Rows over HTTP, then a checkpoint.
	srv.postRows(t, "e", []Row{
		{"id": 1, "name": "it's", "score": 1.5, "ok": true, "ts": "2024-01-02T03:04:05.678Z"},
		{"id": 2, "name": nil, "score": nil, "ok": nil, "ts": nil},
		{"id": 3, "name": `say "hi" ü`, "score": 1e20, "ok": false, "ts": "1999-12-31T23:59:59.001Z"},
		{"id": 4, "name": "", "score": -0.00001, "ok": true, "ts": "2000-01-01T00:00:00.000Z"},
		{"id": 5, "name": "it's", "score": 0.1, "ok": false, "ts": "2024-01-02T03:04:05.678Z"},
		{"id": 6, "name": `C:\dir\'x`, "score": 2, "ok": true, "ts": "2024-01-02T03:04:06.000Z"},
	})
	srv.checkpoint(t)

	// The oracle: the HTTP API's results.
	rs := srv.results(t, "ev")
	if strings.Join(rs.Columns, ",") != "id,name,score,ok,ts" {
		t.Fatalf("GET results: columns %v", rs.Columns)
	}
	var want []pgRow
	for _, m := range rs.Rows {
		var r pgRow
		for i, c := range rs.Columns {
			switch v := m[c].(type) {
			case nil:
				r = append(r, nil)
			case json.Number:
				r = append(r, normParse(t, evKinds[i], v.String()))
			case bool:
				r = append(r, pgText(strconv.FormatBool(v)))
			case string:
				r = append(r, normParse(t, evKinds[i], v))
			default:
				t.Fatalf("GET results: %s is %T", c, v)
			}
		}
		want = append(want, r)
	}
	sortRows(want)
	if len(want) != 6 {
		t.Fatalf("GET results: %d rows, want 6:\n%s", len(want), rowsText(want))
	}

	t.Run("psql", func(t *testing.T) {
		out, err := runPsql("-A", "-t", "-F", "\x1f", "-P", "null=\x1e", "-c", evSelect)
		if err != nil {
			t.Fatalf("psql: %v\n%s", err, out)
		}
		var got []pgRow
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var r pgRow
			for i, f := range strings.Split(line, "\x1f") {
				if f == "\x1e" {
					r = append(r, nil)
				} else {
					r = append(r, normParse(t, evKinds[i], f))
				}
			}
			got = append(got, r)
		}
		if rowsText(got) != rowsText(want) {
			t.Errorf("psql:\n%s\nGET results:\n%s", rowsText(got), rowsText(want))
		}
		// The catalog: \d lists the table and the view, \dv the view,
		// \d ev its columns.
		out, err = runPsql("-c", `\d`, "-c", `\dv`, "-c", `\d ev`)
		for _, w := range []string{
			"List of relations", " public | e    | table | streamsql", " public | ev   | view  | streamsql",
			`View "public.ev"`, " name   | text                        |           |          | ",
			" ts     | timestamp without time zone |           |          | ",
		} {
			if err != nil || !strings.Contains(out, w) {
				t.Errorf("psql \\d, \\dv, \\d ev: %v: no %q in\n%s", err, w, out)
			}
		}
		if strings.Count(out, "List of relations") != 2 || strings.Count(out, "| table |") != 1 {
			t.Errorf("psql \\d and \\dv: want the table in \\d only:\n%s", out)
		}
		// An error with its position: psql shows the line and a caret.
		out, err = runPsql("-c", "SELECT id, nosuch FROM ev")
		if err == nil || !strings.Contains(out, "ERROR:  ") || !strings.Contains(out, "LINE 1: SELECT id, nosuch FROM ev\n                   ^") {
			t.Errorf("psql error: %v\n%s", err, out)
		}
	})

	t.Run("psycopg2", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "client.py")
		if err := os.WriteFile(script, []byte(psycopg2Script), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, script)
		cmd.Env = []string{"PGHOST=" + host, "PGPORT=" + port, "PGPASSWORD=" + pgToken, "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=20"}
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psycopg2: %v\n%s", err, b)
		}
		var res struct {
			Rows   [][]any          `json:"rows"`
			Params map[string][]any `json:"params"`
			Status map[string]int   `json:"status"`
			Error  string           `json:"error"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("psycopg2's output: %v\n%s", err, b)
		}
		toRow := func(vals []any) pgRow {
			var r pgRow
			for i, v := range vals {
				switch v := v.(type) {
				case nil:
					r = append(r, nil)
				case float64:
					if evKinds[i] == "bigint" {
						r = append(r, pgText(strconv.FormatInt(int64(v), 10)))
					} else {
						r = append(r, normFloat(v))
					}
				case bool:
					r = append(r, pgText(strconv.FormatBool(v)))
				case string:
					r = append(r, normParse(t, evKinds[i], v))
				}
			}
			return r
		}
		var got []pgRow
		for _, vals := range res.Rows {
			got = append(got, toRow(vals))
		}
		if rowsText(got) != rowsText(want) {
			t.Errorf("psycopg2:\n%s\nGET results:\n%s", rowsText(got), rowsText(want))
		}
		// Each parameter query against the same filter over the HTTP
		// results.
		for name, keep := range map[string]func(r pgRow) bool{
			"quote":         func(r pgRow) bool { return r[1] != nil && *r[1] == "it's" },
			"double quotes": func(r pgRow) bool { return r[1] != nil && *r[1] == `say "hi" ü` },
			"backslash":     func(r pgRow) bool { return r[1] != nil && *r[1] == `C:\dir\'x` },
			"float":         func(r pgRow) bool { return r[2] != nil && *r[2] == "0.1" },
			"none":          func(r pgRow) bool { return r[1] == nil },
			"timestamp":     func(r pgRow) bool { return r[4] != nil && *r[4] == "2024-01-02T03:04:05.678Z" },
			"int":           func(r pgRow) bool { return *r[0] == "3" },
		} {
			var wantIDs, gotIDs []string
			for _, r := range want {
				if keep(r) {
					wantIDs = append(wantIDs, *r[0])
				}
			}
			for _, v := range res.Params[name] {
				gotIDs = append(gotIDs, fmt.Sprint(v))
			}
			if strings.Join(gotIDs, ",") != strings.Join(wantIDs, ",") || len(wantIDs) == 0 {
				t.Errorf("psycopg2 with a %s parameter: ids %v, want %v", name, gotIDs, wantIDs)
			}
		}
		// A value that would end a MySQL-style literal at \' (psycopg2
		// doubles quotes only, as standard_conforming_strings asks).
		if ids := res.Params["injection"]; len(ids) != 0 {
			t.Errorf("psycopg2 with a value holding \\' OR 1=1: ids %v, want none", ids)
		}
		// psycopg2's default mode opened a block (BEGIN) before the
		// first statement; commit ended it; an error failed the next.
		wantStatus := map[string]int{"before": 0, "in_block": 2, "after_commit": 0, "failed": 3, "after_rollback": 0, "autocommit": 0}
		for k, v := range wantStatus {
			if got, ok := res.Status[k]; !ok || got != v {
				t.Errorf("psycopg2 transaction status %s: %d, want %d (%v)", k, got, v, res.Status)
			}
		}
		if !strings.Contains(res.Error, "25P02") {
			t.Errorf("psycopg2 in a failed block: %q, want 25P02", res.Error)
		}
	})

	t.Run("pgx", func(t *testing.T) {
		c, err := pgx.Connect(ctx, "postgres://e2e:"+pgToken+"@"+pgAddr+"/streamsql?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		// The extended protocol with binary results (pgx's default).
		rows, err := c.Query(ctx, evSelect)
		if err != nil {
			t.Fatal(err)
		}
		var got []pgRow
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var r pgRow
			for _, v := range vals {
				switch v := v.(type) {
				case nil:
					r = append(r, nil)
				case int64:
					r = append(r, pgText(strconv.FormatInt(v, 10)))
				case float64:
					r = append(r, normFloat(v))
				case bool:
					r = append(r, pgText(strconv.FormatBool(v)))
				case string:
					r = append(r, pgText(v))
				case time.Time:
					r = append(r, normTime(v))
				default:
					t.Fatalf("pgx: a %T", v)
				}
			}
			got = append(got, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for i, fd := range rows.FieldDescriptions() {
			// pgx reads text as text; the others in binary.
			if fd.Format != pgx.BinaryFormatCode && evKinds[i] != "text" {
				t.Errorf("pgx: column %d in format %d, want binary", i, fd.Format)
			}
		}
		if rowsText(got) != rowsText(want) {
			t.Errorf("pgx:\n%s\nGET results:\n%s", rowsText(got), rowsText(want))
		}
	})
}

// psycopg2Script reads view ev with psycopg2 in its default mode (a
// transaction block opened before the first statement) and prints JSON:
// the rows, the ids each parameter query finds, the transaction statuses
// (psycopg2.extensions.TRANSACTION_STATUS_*: 0 idle, 2 in a block, 3
// failed) and the error in a failed block.
const psycopg2Script = `
import datetime, json, psycopg2

conn = psycopg2.connect(user="py", dbname="streamsql")
out = {"status": {}, "params": {}}
status = lambda: conn.get_transaction_status()
out["status"]["before"] = status()
cur = conn.cursor()
cur.execute("SELECT id, name, score, ok, ts FROM ev ORDER BY id")
out["rows"] = [[v.isoformat() if isinstance(v, datetime.datetime) else v for v in r] for r in cur.fetchall()]
out["status"]["in_block"] = status()
for name, where, arg in [
    ("quote", "name = %s", "it's"),
    ("double quotes", "name = %s", 'say "hi" \u00fc'),
    ("backslash", "name = %s", "C:\\dir\\'x"),
    ("injection", "name = %s", "x\\' OR 1=1 -- "),
    ("float", "score = %s", 0.1),
    ("none", "COALESCE(name, %s) IS NULL", None),
    # A datetime is rendered '...'::timestamp, a cast streamsql's
    # parser does not take (docs/pgwire.md): the timestamp as text.
    ("timestamp", "ts = %s", datetime.datetime(2024, 1, 2, 3, 4, 5, 678000).isoformat(" ", "milliseconds")),
    ("int", "id = %s", 3),
]:
    cur.execute("SELECT id FROM ev WHERE " + where + " ORDER BY id", (arg,))
    out["params"][name] = [r[0] for r in cur.fetchall()]
conn.commit()
out["status"]["after_commit"] = status()
try:
    cur.execute("SELECT nosuch FROM ev")
except psycopg2.Error as e:
    pass
out["status"]["failed"] = status()
try:
    cur.execute("SELECT id FROM ev")
except psycopg2.Error as e:
    out["error"] = "%s %s" % (e.pgcode, e.pgerror)
conn.rollback()
out["status"]["after_rollback"] = status()
conn.autocommit = True
cur.execute("SELECT id FROM ev WHERE id = 1")
cur.fetchall()
out["status"]["autocommit"] = status()
conn.close()
print(json.dumps(out))
`
