package postgres

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

func TestNewRejectsBadSettings(t *testing.T) {
	base := testSpec("public", "x", true)
	for _, tc := range []struct {
		name string
		edit func(*sink.Spec)
		want string
	}{
		{"connection", func(s *sink.Spec) { s.Connection = "postgres://u:secret@host:notaport/db" }, "sink table pg_out: bad PostgreSQL connection string"},
		{"create_table", func(s *sink.Spec) { s.Attrs["create_table"] = "yes" }, `"create_table" is "yes"`},
		{"no key", func(s *sink.Spec) { s.PrimaryKey = nil }, "no PRIMARY KEY"},
		{"empty table", func(s *sink.Spec) { s.Attrs["table"] = "" }, `"table" is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := base
			spec.Attrs = map[string]string{}
			for k, v := range base.Attrs {
				spec.Attrs[k] = v
			}
			tc.edit(&spec)
			_, err := New(spec)
			if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v (permanent %v), want a permanent error with %q", err, sink.IsPermanent(err), tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

func TestCreateTable(t *testing.T) {
	schema := newSchema(t)
	spec := testSpec(schema, "Out", true)
	spec.Columns = append(plan.Schema{}, testColumns...)
	spec.Columns[1].Name = "Name" // created lower-cased
	spec.PrimaryKey = []int{1, 0}
	open(t, spec)
	got := mustQuery(t, fmt.Sprintf(`SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
		FROM pg_attribute a WHERE a.attrelid = '%s'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		pgx.Identifier{schema, "Out"}.Sanitize()))
	want := [][]string{
		{"id", "bigint", "t"},
		{"name", "text", "t"},
		{"price", "double precision", "f"},
		{"ts", "timestamp(3) with time zone", "f"},
		{"ok", "boolean", "f"},
		{"qty", "bigint", "f"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	key := mustQuery(t, fmt.Sprintf(`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '%s'::regclass AND contype = 'p'`,
		pgx.Identifier{schema, "Out"}.Sanitize()))
	if len(key) != 1 || key[0][0] != "PRIMARY KEY (name, id)" {
		t.Fatalf("primary key %v", key)
	}
	prog := mustQuery(t, fmt.Sprintf(`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '%s.streamsql_sink_progress'::regclass AND contype = 'p'`, schema))
	if len(prog) != 1 || prog[0][0] != "PRIMARY KEY (sink_id, epoch)" {
		t.Fatalf("progress table key %v", prog)
	}
	// Open again: the table (now existing) is accepted.
	open(t, spec)
}

func TestExistingCompatibleTable(t *testing.T) {
	schema := newSchema(t)
	// Other types of the same kinds, a UNIQUE index instead of a primary
	// key, names in other cases, extra columns the sink does not write.
	mustExec(t, fmt.Sprintf(`CREATE TABLE %s.target (
		"ID" numeric(30) NOT NULL, extra_nullable int, "Name" varchar(100), price numeric, ts timestamp without time zone,
		ok boolean, qty bigint, extra_default text NOT NULL DEFAULT 'x', extra_serial bigserial NOT NULL,
		extra_identity bigint GENERATED ALWAYS AS IDENTITY, extra_generated bigint GENERATED ALWAYS AS (qty * 2) STORED);
		CREATE UNIQUE INDEX target_id ON %s.target ("ID")`, schema, schema))
	spec := testSpec(schema, "target", true, "create_table", "false")
	p := open(t, spec)
	rows := []plan.Row{
		row(1, "ünïcødé ✓", 2.5, 1_700_000_000_123, true, 7),
		row(2, "b", -1, -1, false, 8), // 1969-12-31T23:59:59.999
	}
	if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(rows[0]), upsert(rows[1])}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, readTable(t, spec, "ID", "Name"), rows)
	// timestamp without time zone holds the UTC wall time.
	got := mustQuery(t, fmt.Sprintf(`SELECT ts::text, extra_default, extra_generated FROM %s.target ORDER BY "ID"`, schema))
	if got[0][0] != "2023-11-14 22:13:20.123" || got[1][0] != "1969-12-31 23:59:59.999" || got[0][1] != "x" || got[0][2] != "14" {
		t.Fatalf("got %v", got)
	}
}

func TestIncompatibleTables(t *testing.T) {
	for _, tc := range []struct {
		name string
		ddl  string // %[1]s: the schema
		want []string
	}{
		{"missing table", ``, []string{`PostgreSQL table "%[1]s"."target" of sink table pg_out does not exist (create it, or set "create_table": true)`}},
		{"missing column", `CREATE TABLE %[1]s.target (id bigint PRIMARY KEY, name text, price float8, ts timestamptz, ok bool)`,
			[]string{`has no column "qty" (sink column qty BIGINT)`}},
		{"wrong type", `CREATE TABLE %[1]s.target (id bigint PRIMARY KEY, name text, price float8, ts timestamptz, ok bool, qty integer)`,
			[]string{`column "qty" is integer, want bigint or numeric for sink column qty BIGINT`}},
		{"text for timestamp", `CREATE TABLE %[1]s.target (id bigint PRIMARY KEY, name text, price float8, ts text, ok bool, qty bigint)`,
			[]string{`column "ts" is text, want timestamp with or without time zone`}},
		{"no unique key", `CREATE TABLE %[1]s.target (id bigint, name text, price float8, ts timestamptz, ok bool, qty bigint)`,
			[]string{`has no PRIMARY KEY or UNIQUE constraint on exactly the sink's key ("id") (unique keys found: none)`}},
		{"key on other columns", `CREATE TABLE %[1]s.target (id bigint, name text, price float8, ts timestamptz, ok bool, qty bigint, PRIMARY KEY (id, name))`,
			[]string{`exactly the sink's key ("id")`, `PRIMARY KEY ("id", "name")`}},
		{"partial unique index", `CREATE TABLE %[1]s.target (id bigint, name text, price float8, ts timestamptz, ok bool, qty bigint);
			CREATE UNIQUE INDEX ON %[1]s.target (id) WHERE qty > 0`,
			[]string{`exactly the sink's key ("id")`, `UNIQUE ("id") partial`}},
		{"deferrable key", `CREATE TABLE %[1]s.target (id bigint PRIMARY KEY DEFERRABLE, name text, price float8, ts timestamptz, ok bool, qty bigint)`,
			[]string{`PRIMARY KEY ("id") deferrable`}},
		{"not null extra column", `CREATE TABLE %[1]s.target (id bigint PRIMARY KEY, name text, price float8, ts timestamptz, ok bool, qty bigint, region text NOT NULL, note text)`,
			[]string{`NOT NULL column(s) without a default that the sink does not write: "region" text`}},
		{"a view", `CREATE VIEW %[1]s.target AS SELECT 1::bigint AS id`,
			[]string{`is not a table`}},
		{"ambiguous case", `CREATE TABLE %[1]s.target (id bigint PRIMARY KEY, "Name" text, "NAME" text, price float8, ts timestamptz, ok bool, qty bigint)`,
			[]string{`sink column name matches several columns: "Name", "NAME"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := newSchema(t)
			if tc.ddl != "" {
				mustExec(t, fmt.Sprintf(tc.ddl, schema))
			}
			p, err := New(testSpec(schema, "target", true, "create_table", "false"))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			err = p.Open(ctx(t))
			if err == nil || !sink.IsPermanent(err) {
				t.Fatalf("Open: %v, want a permanent error", err)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "%[1]s", schema); !strings.Contains(err.Error(), w) {
					t.Fatalf("Open: %v\nwant it to say %s", err, w)
				}
			}
			if !strings.Contains(err.Error(), "sink table pg_out") {
				t.Fatalf("the error does not name the sink table: %v", err)
			}
		})
	}
}

func TestProgressTableCreatedConcurrently(t *testing.T) {
	// Sinks opening at once in a schema with no progress table yet: none
	// fails on the concurrent CREATE TABLE.
	for round := 0; round < 3; round++ {
		schema := newSchema(t)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				spec := testSpec(schema, fmt.Sprintf("out%d", i%2), true)
				p, err := New(spec)
				if err != nil {
					errs[i] = err
					return
				}
				defer p.Close()
				errs[i] = p.Open(ctx(t))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenUnreachableIsRetryable(t *testing.T) {
	spec := testSpec("public", "x", true)
	spec.Connection = "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Open(ctx(t))
	if err == nil || sink.IsPermanent(err) || !strings.Contains(err.Error(), "sink table pg_out") {
		t.Fatalf("Open: %v, want a retryable error naming the sink", err)
	}
	if _, err := p.Committed(ctx(t)); err == nil || sink.IsPermanent(err) {
		t.Fatalf("Committed: %v, want a retryable error", err)
	}
}
