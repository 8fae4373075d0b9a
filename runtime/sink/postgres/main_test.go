package postgres

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamsql/streamsql/internal/pgtest"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// srv is the package's one PostgreSQL server; tests isolate themselves
// in schemas of their own.
var srv *pgtest.Server

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" { // a crash child of TestFaultPoints: no server of its own
		os.Exit(m.Run())
	}
	s, err := pgtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv = s
	code := m.Run()
	s.Close()
	os.Exit(code)
}

var schemaSeq atomic.Int64

// newSchema creates a schema of the test's own.
func newSchema(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", schemaSeq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "#", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	mustExec(t, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
	return name
}

func mustExec(t testing.TB, sql string) {
	t.Helper()
	if err := srv.Exec(sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func mustQuery(t testing.TB, sql string) [][]string {
	t.Helper()
	rows, err := srv.Query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// The sink table of most tests.
var testColumns = plan.Schema{
	{Name: "id", Type: plan.TypeBigint, NotNull: true},
	{Name: "name", Type: plan.TypeVarchar},
	{Name: "price", Type: plan.TypeDouble},
	{Name: "ts", Type: plan.TypeTimestamp},
	{Name: "ok", Type: plan.TypeBoolean},
	{Name: "qty", Type: plan.TypeBigint},
}

func testSpec(schema, table string, exactlyOnce bool, attrs ...string) sink.Spec {
	a := map[string]string{"schema": schema, "table": table, "create_table": "true"}
	for i := 0; i+1 < len(attrs); i += 2 {
		a[attrs[i]] = attrs[i+1]
	}
	dsn := "" // the crash child has no server of its own
	if srv != nil {
		dsn = srv.DSN("")
	}
	return sink.Spec{
		Table:       "pg_out",
		Connection:  dsn,
		Attrs:       a,
		Columns:     testColumns,
		PrimaryKey:  []int{0},
		SinkID:      "sink-" + schema + "-" + table,
		ExactlyOnce: exactlyOnce,
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// open makes and opens a publisher, closed when the test ends.
func open(t testing.TB, spec sink.Spec) *Publisher {
	t.Helper()
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.Open(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return p
}

func row(id int64, name string, price float64, ts int64, ok bool, qty int64) plan.Row {
	return plan.Row{plan.Int(id), plan.Str(name), plan.Float(price), plan.Time(ts), plan.Bool(ok), plan.Int(qty)}
}

func upsert(r plan.Row) sink.Change { return sink.Change{Key: plan.Row{r[0]}, Row: r} }
func del(id int64) sink.Change      { return sink.Change{Key: plan.Row{plan.Int(id)}} }

// readTable reads the sink's columns of schema.table back as plan
// values, ordered by the first column.
func readTable(t testing.TB, spec sink.Spec, pgNames ...string) []plan.Row {
	t.Helper()
	cfg, err := pgx.ParseConfig(srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	conn, err := pgx.ConnectConfig(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sel []string
	for i, c := range spec.Columns {
		name := strings.ToLower(c.Name)
		if i < len(pgNames) {
			name = pgNames[i]
		}
		sel = append(sel, pgx.Identifier{name}.Sanitize()+"::"+stageType(c.Type))
	}
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY 1", strings.Join(sel, ", "), pgx.Identifier{spec.Attrs["schema"], spec.Attrs["table"]}.Sanitize())
	rows, err := conn.Query(ctx(t), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []plan.Row
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		r := make(plan.Row, len(vals))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
			case int64:
				if spec.Columns[i].Type == plan.TypeTimestamp {
					t.Fatalf("int64 for a timestamp")
				}
				r[i] = plan.Int(v)
			case float64:
				r[i] = plan.Float(v)
			case string:
				r[i] = plan.Str(v)
			case time.Time:
				r[i] = plan.Time(v.UnixMilli())
				if v.Nanosecond()%int(time.Millisecond) != 0 {
					t.Fatalf("timestamp %v has sub-millisecond digits", v)
				}
			case bool:
				r[i] = plan.Bool(v)
			default:
				t.Fatalf("column %d: unexpected %T", i, v)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameValue(a, b plan.Value) bool {
	if a.K != b.K {
		return false
	}
	if a.K == plan.TypeDouble && math.IsNaN(a.F()) {
		return math.IsNaN(b.F())
	}
	return a == b
}

// wantRows fails unless got equals want (both ordered by key).
func wantRows(t testing.TB, got, want []plan.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d\ngot  %v\nwant %v", len(got), len(want), clip(got), clip(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("row %d: got %v, want %v", i, got[i], want[i])
		}
		for j := range want[i] {
			if !sameValue(got[i][j], want[i][j]) {
				t.Fatalf("row %d column %d: got %v (%#v), want %v (%#v)", i, j, got[i][j], got[i][j], want[i][j], want[i][j])
			}
		}
	}
}

func clip(rows []plan.Row) []plan.Row {
	if len(rows) > 10 {
		return rows[:10]
	}
	return rows
}

func committed(t testing.TB, p *Publisher) uint64 {
	t.Helper()
	n, err := p.Committed(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
