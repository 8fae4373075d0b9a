package postgres

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// paths runs f with the array path and with the staged (COPY) path.
func paths(t *testing.T, f func(t *testing.T, stageAt int)) {
	t.Run("arrays", func(t *testing.T) { f(t, 1<<30) })
	t.Run("staged", func(t *testing.T) { f(t, 1) })
}

func openPath(t *testing.T, spec sink.Spec, stageAt int) *Publisher {
	p := open(t, spec)
	p.stageAt = stageAt
	return p
}

func TestValuesRoundTrip(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		spec := testSpec(newSchema(t), "out", true)
		p := openPath(t, spec, stageAt)
		rows := []plan.Row{
			row(math.MinInt64, "", 0, 0, false, math.MaxInt64),
			row(-1, "ünïcødé ✓ 𝄞 \"quoted\" 'single' \\ back\nslash\ttab", math.Copysign(0, -1), -62135596800000, true, -1), // year 1
			row(0, "x", math.MaxFloat64, 253402300799999, false, 0),                                                         // 9999-12-31T23:59:59.999
			row(1, "y", math.SmallestNonzeroFloat64, 1_700_000_000_001, true, 1<<53+1),
			row(2, "nan", math.NaN(), 1, false, 2),
			row(3, "inf", math.Inf(-1), -1, true, 3),
			row(4, "third", 1.0/3, 86_399_999, true, 4),
			row(5, "first instant", 0, minTimestamp, true, 5),  // 4714-11-24 BC
			row(6, "last instant", 0, endTimestamp-1, true, 6), // 294276-12-31T23:59:59.999
			{plan.Int(math.MaxInt64), plan.Null, plan.Null, plan.Null, plan.Null, plan.Null},
		}
		var changes []sink.Change
		for _, r := range rows {
			changes = append(changes, upsert(r))
		}
		if err := p.CommitEpoch(ctx(t), 1, changes); err != nil {
			t.Fatal(err)
		}
		got := readTable(t, spec)
		wantRows(t, got, rows)
		if math.Float64bits(got[1][2].F()) != math.Float64bits(math.Copysign(0, -1)) {
			t.Fatalf("negative zero came back as %v", got[1][2])
		}
		if n := committed(t, p); n != 1 {
			t.Fatalf("Committed = %d, want 1", n)
		}
	})
}

func TestUpsertUpdateDelete(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		spec := testSpec(newSchema(t), "out", true)
		p := openPath(t, spec, stageAt)
		if n := committed(t, p); n != 0 {
			t.Fatalf("Committed of a new sink = %d", n)
		}
		var ch []sink.Change
		for i := int64(1); i <= 5; i++ {
			ch = append(ch, upsert(row(i, fmt.Sprint("r", i), float64(i), i*1000, i%2 == 0, i)))
		}
		if err := p.CommitEpoch(ctx(t), 1, ch); err != nil {
			t.Fatal(err)
		}
		// Epoch 2: an update, deletes (of a row and of a key never
		// written), an insert.
		if err := p.CommitEpoch(ctx(t), 2, []sink.Change{
			upsert(row(2, "two", 2.5, 2500, true, 20)),
			del(3),
			del(99),
			upsert(row(6, "six", 6, 6000, false, 6)),
		}); err != nil {
			t.Fatal(err)
		}
		// Epoch 3: nothing changed; its progress is still recorded.
		if err := p.CommitEpoch(ctx(t), 3, nil); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec), []plan.Row{
			row(1, "r1", 1, 1000, false, 1),
			row(2, "two", 2.5, 2500, true, 20),
			row(4, "r4", 4, 4000, true, 4),
			row(5, "r5", 5, 5000, false, 5),
			row(6, "six", 6, 6000, false, 6),
		})
		if n := committed(t, p); n != 3 {
			t.Fatalf("Committed = %d, want 3", n)
		}
		// Another sink's progress in the same table is its own.
		other := testSpec(spec.Attrs["schema"], "out", true)
		other.SinkID = "another"
		if n := committed(t, open(t, other)); n != 0 {
			t.Fatalf("another sink's Committed = %d", n)
		}
	})
}

func TestCommitEpochTwice(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		spec := testSpec(newSchema(t), "out", true)
		p := openPath(t, spec, stageAt)
		first := []plan.Row{row(1, "a", 1, 1, true, 1), row(2, "b", 2, 2, true, 2)}
		if err := p.CommitEpoch(ctx(t), 7, []sink.Change{upsert(first[0]), upsert(first[1])}); err != nil {
			t.Fatal(err)
		}
		err := p.CommitEpoch(ctx(t), 7, []sink.Change{upsert(row(1, "changed", 9, 9, false, 9)), del(2), upsert(row(3, "new", 3, 3, true, 3))})
		if !errors.Is(err, sink.ErrCommitted) {
			t.Fatalf("second commit of epoch 7: %v, want ErrCommitted", err)
		}
		wantRows(t, readTable(t, spec), first)
		// The publisher goes on (on the same connection).
		if err := p.CommitEpoch(ctx(t), 8, []sink.Change{del(1)}); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec), first[1:])
		if n := committed(t, p); n != 8 {
			t.Fatalf("Committed = %d, want 8", n)
		}
	})
}

func TestEpochIsAtomic(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		spec := testSpec(newSchema(t), "out", true)
		p := openPath(t, spec, stageAt)
		if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))}); err != nil {
			t.Fatal(err)
		}
		before := readTable(t, spec)
		// A NULL key in the middle of the epoch: NOT NULL violation after
		// the progress row and other rows were written.
		bad := []sink.Change{
			upsert(row(2, "b", 2, 2, true, 2)),
			del(1),
			{Key: plan.Row{plan.Null}, Row: plan.Row{plan.Null, plan.Str("null key"), plan.Null, plan.Null, plan.Null, plan.Null}},
			upsert(row(3, "c", 3, 3, true, 3)),
		}
		err := p.CommitEpoch(ctx(t), 2, bad)
		if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "23502") {
			t.Fatalf("CommitEpoch with a NULL key: %v, want a permanent NOT NULL violation", err)
		}
		wantRows(t, readTable(t, spec), before)
		if n := committed(t, p); n != 1 {
			t.Fatalf("Committed = %d after a failed epoch, want 1", n)
		}
		// Epoch 2, corrected, commits (the publisher reconnects by itself).
		if err := p.CommitEpoch(ctx(t), 2, append(bad[:2:2], bad[3])); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec), []plan.Row{row(2, "b", 2, 2, true, 2), row(3, "c", 3, 3, true, 3)})
	})
}

func TestDataTheTableRefusesIsPermanent(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		schema := newSchema(t)
		mustExec(t, fmt.Sprintf(`CREATE TABLE %s.out (id bigint PRIMARY KEY, name varchar(3), price float8, ts timestamptz, ok bool, qty bigint)`, schema))
		spec := testSpec(schema, "out", true)
		p := openPath(t, spec, stageAt)
		err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "too long", 1, 1, true, 1))})
		if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "sink table pg_out") {
			t.Fatalf("CommitEpoch: %v, want a permanent error naming the sink", err)
		}
		if n := committed(t, p); n != 0 {
			t.Fatalf("Committed = %d", n)
		}
	})
}

func TestAllKeyColumns(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		schema := newSchema(t)
		spec := testSpec(schema, "keys", true)
		spec.Columns = plan.Schema{{Name: "a", Type: plan.TypeVarchar}, {Name: "b", Type: plan.TypeTimestamp}}
		spec.PrimaryKey = []int{1, 0}
		p := openPath(t, spec, stageAt)
		k := func(a string, b int64) sink.Change {
			return sink.Change{Key: plan.Row{plan.Time(b), plan.Str(a)}, Row: plan.Row{plan.Str(a), plan.Time(b)}}
		}
		if err := p.CommitEpoch(ctx(t), 1, []sink.Change{k("x", 1), k("y", 2), k("z", 3)}); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitEpoch(ctx(t), 2, []sink.Change{k("x", 1), {Key: plan.Row{plan.Time(2), plan.Str("y")}}}); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec), []plan.Row{{plan.Str("x"), plan.Time(1)}, {plan.Str("z"), plan.Time(3)}})
	})
}

func TestLargeEpochs(t *testing.T) {
	const n = 50_000
	spec := testSpec(newSchema(t), "out", true)
	p := open(t, spec)
	ch := make([]sink.Change, n)
	for i := range ch {
		ch[i] = upsert(row(int64(i), fmt.Sprint("name-", i), float64(i)/8, int64(i)*1001, i%3 == 0, int64(i)))
	}
	if err := p.CommitEpoch(ctx(t), 1, ch); err != nil {
		t.Fatal(err)
	}
	// Epoch 2: every even key deleted, every odd key updated, n/2 new.
	ch = ch[:0]
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			ch = append(ch, del(int64(i)))
		} else {
			ch = append(ch, upsert(row(int64(i), "updated", -1, 0, false, int64(-i))))
		}
	}
	for i := n; i < n+n/2; i++ {
		ch = append(ch, upsert(row(int64(i), fmt.Sprint("name-", i), float64(i)/8, int64(i)*1001, i%3 == 0, int64(i))))
	}
	if err := p.CommitEpoch(ctx(t), 2, ch); err != nil {
		t.Fatal(err)
	}
	got := mustQuery(t, fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE name = 'updated'), sum(qty), min(id), max(id) FROM %s.out`, spec.Attrs["schema"]))
	// updated: the n/2 odd keys with qty -i; new: n..n+n/2-1 with qty i.
	var sum int64
	for i := 1; i < n; i += 2 {
		sum -= int64(i)
	}
	for i := n; i < n+n/2; i++ {
		sum += int64(i)
	}
	want := fmt.Sprint([][]string{{fmt.Sprint(n), fmt.Sprint(n / 2), fmt.Sprint(sum), "1", fmt.Sprint(n + n/2 - 1)}})
	if fmt.Sprint(got) != want {
		t.Fatalf("table %v, want %v", got, want)
	}
	if c := committed(t, p); c != 2 {
		t.Fatalf("Committed = %d", c)
	}
	// The same epoch again: ErrCommitted on the large path too.
	if err := p.CommitEpoch(ctx(t), 2, ch); !errors.Is(err, sink.ErrCommitted) {
		t.Fatalf("%v, want ErrCommitted", err)
	}
}

func TestApplyWritesNoProgress(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		schema := newSchema(t)
		spec := testSpec(schema, "out", false, "delivery", "at_least_once")
		p := openPath(t, spec, stageAt)
		if err := p.Apply(ctx(t), []sink.Change{upsert(row(1, "a", 1, 1, true, 1)), upsert(row(2, "b", 2, 2, true, 2))}); err != nil {
			t.Fatal(err)
		}
		// Applying again (a replay) converges to the same rows.
		for i := 0; i < 2; i++ {
			if err := p.Apply(ctx(t), []sink.Change{upsert(row(1, "a2", 1, 1, true, 1)), del(2)}); err != nil {
				t.Fatal(err)
			}
		}
		wantRows(t, readTable(t, spec), []plan.Row{row(1, "a2", 1, 1, true, 1)})
		if got := mustQuery(t, fmt.Sprintf(`SELECT to_regclass('%s.streamsql_sink_progress') IS NULL`, schema)); got[0][0] != "t" {
			t.Fatal("an at-least-once sink created a progress table")
		}
		if n := committed(t, p); n != 0 {
			t.Fatalf("Committed = %d", n)
		}
		if err := p.CommitEpoch(ctx(t), 1, nil); err == nil {
			t.Fatal("CommitEpoch on an at-least-once sink succeeded")
		}
	})
}

func TestMultiColumnKeyAndCaseInsensitiveNames(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		schema := newSchema(t)
		mustExec(t, fmt.Sprintf(`CREATE TABLE %s."Target" ("Window_End" timestamp, "Cat" text, "Total" numeric, note text,
			CONSTRAINT u UNIQUE ("Cat", "Window_End"))`, schema))
		spec := testSpec(schema, "Target", true, "create_table", "false")
		spec.Columns = plan.Schema{{Name: "window_end", Type: plan.TypeTimestamp}, {Name: "cat", Type: plan.TypeVarchar}, {Name: "TOTAL", Type: plan.TypeBigint}}
		spec.PrimaryKey = []int{0, 1}
		p := openPath(t, spec, stageAt)
		c := func(w int64, cat string, total int64) sink.Change {
			return sink.Change{Key: plan.Row{plan.Time(w), plan.Str(cat)}, Row: plan.Row{plan.Time(w), plan.Str(cat), plan.Int(total)}}
		}
		if err := p.CommitEpoch(ctx(t), 1, []sink.Change{c(10_000, "a", 1), c(10_000, "b", 2), c(20_000, "a", 3)}); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitEpoch(ctx(t), 2, []sink.Change{c(10_000, "a", 10), {Key: plan.Row{plan.Time(10_000), plan.Str("b")}}}); err != nil {
			t.Fatal(err)
		}
		got := mustQuery(t, fmt.Sprintf(`SELECT "Window_End"::text, "Cat", "Total"::text FROM %s."Target" ORDER BY 1, 2`, schema))
		if fmt.Sprint(got) != "[[1970-01-01 00:00:10 a 10] [1970-01-01 00:00:20 a 3]]" {
			t.Fatalf("table %v", got)
		}
	})
}

func TestDoubleIntoNumericIsExact(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		schema := newSchema(t)
		mustExec(t, fmt.Sprintf(`CREATE TABLE %s.nums (k numeric PRIMARY KEY, d numeric)`, schema))
		spec := testSpec(schema, "nums", true, "create_table", "false")
		spec.Columns = plan.Schema{{Name: "k", Type: plan.TypeDouble}, {Name: "d", Type: plan.TypeDouble}}
		p := openPath(t, spec, stageAt)
		// 0.1 and the next double differ in the 17th digit: a 15-digit
		// conversion would make them one key.
		// In key order (numeric sorts NaN last).
		vals := []float64{math.Inf(-1), -1e300, -0.1, 5e-324, 0.1, math.Nextafter(0.1, 1), 1.0 / 3, 2, 1 << 60, math.Inf(1), math.NaN()}
		var ch []sink.Change
		var want []plan.Row
		for _, f := range vals {
			r := plan.Row{plan.Float(f), plan.Float(-f)}
			if f == 2 {
				r[1] = plan.Null
			}
			ch = append(ch, sink.Change{Key: plan.Row{r[0]}, Row: r})
			want = append(want, r)
		}
		if err := p.CommitEpoch(ctx(t), 1, ch); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec), want)
		// Deletes find their rows by the exact key.
		if err := p.CommitEpoch(ctx(t), 2, []sink.Change{{Key: plan.Row{plan.Float(math.Nextafter(0.1, 1))}}, {Key: plan.Row{plan.Float(math.NaN())}}}); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec), append(want[:5:5], want[6:10]...))
	})
}

func TestValuesOutOfRange(t *testing.T) {
	spec := testSpec(newSchema(t), "out", true)
	p := open(t, spec)
	for _, ch := range []sink.Change{
		upsert(row(1, "", 0, endTimestamp, true, 1)),
		upsert(row(1, "", 0, math.MinInt64, true, 1)),
		upsert(plan.Row{plan.Int(1), plan.Int(2), plan.Null, plan.Null, plan.Null, plan.Null}), // BIGINT in a VARCHAR
		{Key: plan.Row{plan.Str("1")}},
		{Key: plan.Row{plan.Int(1), plan.Int(2)}},
	} {
		if err := p.CommitEpoch(ctx(t), 1, []sink.Change{ch}); err == nil || !sink.IsPermanent(err) {
			t.Fatalf("CommitEpoch of %v: %v, want a permanent error", ch, err)
		}
	}
	if n := committed(t, p); n != 0 {
		t.Fatalf("Committed = %d", n)
	}
}

func TestIdentifiersAreQuoted(t *testing.T) {
	paths(t, func(t *testing.T, stageAt int) {
		schema := newSchema(t) + ` "x"; y`
		mustExec(t, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		spec := testSpec(schema, `odd "table"; DROP TABLE x; --`, true)
		spec.Columns = plan.Schema{{Name: `Key"Col`, Type: plan.TypeBigint}, {Name: "select", Type: plan.TypeVarchar}, {Name: "from where", Type: plan.TypeDouble}}
		p := openPath(t, spec, stageAt)
		c := func(k int64, s string) sink.Change {
			return sink.Change{Key: plan.Row{plan.Int(k)}, Row: plan.Row{plan.Int(k), plan.Str(s), plan.Float(float64(k))}}
		}
		if err := p.CommitEpoch(ctx(t), 1, []sink.Change{c(1, "a"), c(2, "b")}); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitEpoch(ctx(t), 2, []sink.Change{c(1, "a2"), {Key: plan.Row{plan.Int(2)}}}); err != nil {
			t.Fatal(err)
		}
		wantRows(t, readTable(t, spec, `key"col`), []plan.Row{{plan.Int(1), plan.Str("a2"), plan.Float(1)}})
		if n := committed(t, p); n != 2 {
			t.Fatalf("Committed = %d", n)
		}
	})
}
