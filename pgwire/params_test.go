package pgwire

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamsql/streamsql/planner/plan"
)

// rowsWhere are the rows of want (v's, by id) that keep, projected by
// proj: the oracle of a query with parameters, computed in Go.
func rowsWhere(want [][]any, keep func(r []any) bool, proj func(r []any) []any) [][]any {
	var out [][]any
	for _, r := range want {
		if keep(r) {
			out = append(out, proj(r))
		}
	}
	return out
}

// TestParamsEveryType: parameters of every type in WHERE and in the
// select list, bound by pgx in each of its modes (CacheStatement and
// DescribeExec take the types Describe infers and send int8, float8,
// bool and timestamp in binary; Exec declares the types of the Go values
// and sends text), against the rows of v filtered in Go.
func TestParamsEveryType(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	want := e.want() // id, d, s, b, ts
	const q = "SELECT id, $1, s, id + $6 FROM v WHERE d > $2 AND b = $3 AND ts >= $4 AND s <> $5 ORDER BY id"
	minTS := time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)
	args := []any{"lit ü", -1.0, true, minTS, "zzz", int64(10)}
	exp := rowsWhere(want, func(r []any) bool {
		d, ok1 := r[1].(float64)
		b, ok2 := r[3].(bool)
		ts, ok3 := r[4].(time.Time)
		s, ok4 := r[2].(string)
		return ok1 && ok2 && ok3 && ok4 && d > -1.0 && b && !ts.Before(minTS) && s != "zzz"
	}, func(r []any) []any { return []any{r[0], "lit ü", r[2], r[0].(int64) + 10} })
	if len(exp) != 2 {
		t.Fatalf("the oracle has %d rows, want 2 (ids 1 and 4): %v", len(exp), exp)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe} {
		t.Run(mode.String(), func(t *testing.T) {
			c := e.connect(mode)
			rows, err := c.Query(ctxT(t), q, args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, rows); !same(got, exp) {
				t.Errorf("got  %v\nwant %v", got, exp)
			}
			// Equality with each type, one row each.
			for _, tc := range []struct {
				where string
				arg   any
				id    int64
			}{
				{"id = $1", int64(3), 3},
				{"d = $1", 1e20, 3},
				{"s = $1", "drei ü", 3},
				{"b = $1 AND id > 1", true, 4},
				{"ts = $1", time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC), 1},
			} {
				var id int64
				if err := c.QueryRow(ctxT(t), "SELECT id FROM v WHERE "+tc.where, tc.arg).Scan(&id); err != nil || id != tc.id {
					t.Errorf("WHERE %s with %v: id %d, %v; want %d", tc.where, tc.arg, id, err, tc.id)
				}
			}
			// A NULL parameter: in the select list a NULL, in WHERE no match.
			rows, err = c.Query(ctxT(t), "SELECT id, $2 FROM v WHERE id = $1", int64(1), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := readAll(t, rows); len(r) != 1 || r[0][0] != int64(1) || r[0][1] != nil {
				t.Errorf("NULL in the select list: %v", r)
			}
			rows, err = c.Query(ctxT(t), "SELECT id FROM v WHERE s = $1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := readAll(t, rows); len(r) != 0 {
				t.Errorf("s = NULL matched %v", r)
			}
		})
	}
}

// TestDescribeDoesNotRun: Parse and Describe of a statement with
// parameters answer their types (inferred: $1 compared with id is int8)
// and the result's columns without running it (the engine's count of pull
// queries run); Execute runs it once.
func TestDescribeDoesNotRun(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	ctx := ctxT(t)
	c := e.connect(pgx.QueryExecModeCacheStatement)
	before := e.eng.PullsRun()
	sd, err := c.PgConn().Prepare(ctx, "byid", "SELECT id, s, ts, d * $2 AS x FROM v WHERE id = $1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.eng.PullsRun(); n != before {
		t.Errorf("Parse and Describe ran %d pull queries, want none", n-before)
	}
	if want := []uint32{oidInt8, oidFloat8}; !reflect.DeepEqual(sd.ParamOIDs, want) {
		t.Errorf("parameter OIDs %v, want %v", sd.ParamOIDs, want)
	}
	var names []string
	var oids []uint32
	for _, f := range sd.Fields {
		names = append(names, f.Name)
		oids = append(oids, f.DataTypeOID)
	}
	if !reflect.DeepEqual(names, []string{"id", "s", "ts", "x"}) || !reflect.DeepEqual(oids, []uint32{oidInt8, oidText, oidTimestamp, oidFloat8}) {
		t.Errorf("columns %v %v", names, oids)
	}
	res := c.PgConn().ExecPrepared(ctx, "byid", [][]byte{[]byte("3"), []byte("2")}, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "3" || string(res.Rows[0][3]) != "2e+20" {
		t.Errorf("Execute: %v %q", res.Err, res.Rows)
	}
	if n := e.eng.PullsRun(); n != before+1 {
		t.Errorf("Execute ran %d pull queries, want 1", n-before)
	}
}

// TestParamsDeclared: types a client declares in Parse (libpq, JDBC) are
// kept in ParameterDescription; int4 and int2 in binary are widened;
// text and binary formats per parameter.
func TestParamsDeclared(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	ctx := ctxT(t)
	c := e.connect(pgx.QueryExecModeCacheStatement).PgConn()
	sd, err := c.Prepare(ctx, "q", "SELECT id, s FROM v WHERE id >= $1 AND id <= $2 AND s <> $3 AND d < $4 ORDER BY id", []uint32{oidInt4, oidInt2, oidVarchar, 0})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{oidInt4, oidInt2, oidVarchar, oidFloat8}; !reflect.DeepEqual(sd.ParamOIDs, want) {
		t.Errorf("parameter OIDs %v, want %v", sd.ParamOIDs, want)
	}
	i4 := binary.BigEndian.AppendUint32(nil, 1)
	i2 := binary.BigEndian.AppendUint16(nil, 4)
	res := c.ExecPrepared(ctx, "q", [][]byte{i4, i2, []byte("one"), []byte("1e21")}, []int16{1, 1, 0, 0}, nil).Read()
	var got []string
	for _, r := range res.Rows {
		got = append(got, string(r[0])+":"+string(r[1]))
	}
	// ids 1..4 with s not "one" and d < 1e21: 3 (1e20) and 4 (-1e-05);
	// 2 has NULLs.
	if res.Err != nil || strings.Join(got, " ") != "3:drei ü 4:" {
		t.Errorf("got %v, %v; want 3:drei ü 4:", got, res.Err)
	}
}

// TestParamErrors: a Bind with the wrong count of parameters (08P01), a
// value that is not of its type (22P02, as PostgreSQL words it), a
// parameter in the simple protocol, which has none (42P02, at the $1),
// LIMIT $1 (a syntax error that says why); the connection serves on.
func TestParamErrors(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	ctx := ctxT(t)
	pc := e.connect(pgx.QueryExecModeCacheStatement)
	c := pc.PgConn()
	if _, err := c.Prepare(ctx, "two", "SELECT id FROM v WHERE id = $1 OR id = $2", nil); err != nil {
		t.Fatal(err)
	}
	code := func(what string, err error, want, msg string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != want || !strings.Contains(pe.Message, msg) {
			t.Errorf("%s: %v, want %s with %q", what, err, want, msg)
		}
	}
	code("one value for two", c.ExecPrepared(ctx, "two", [][]byte{[]byte("1")}, nil, nil).Read().Err, "08P01", "supplies 1 parameters, but prepared statement requires 2")
	code("abc as bigint", c.ExecPrepared(ctx, "two", [][]byte{[]byte("1"), []byte("abc")}, nil, nil).Read().Err, "22P02", `invalid input syntax for type bigint: "abc"`)
	code("a short binary int8", c.ExecPrepared(ctx, "two", [][]byte{[]byte("1"), {0, 1}}, []int16{0, 1}, nil).Read().Err, "08P01", "bind parameter 2")
	const simple = "SELECT id FROM v WHERE id = $1"
	_, err := c.Exec(ctx, simple).ReadAll()
	code("simple protocol", err, "42P02", "there is no parameter $1")
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Position != int32(strings.Index(simple, "$1")+1) {
		t.Errorf("simple protocol: position %d, want %d", pe.Position, strings.Index(simple, "$1")+1)
	}
	_, err = pc.Exec(ctx, "SELECT id FROM v LIMIT $1", 1)
	code("LIMIT $1", err, "42601", "LIMIT and OFFSET take integer literals, not parameters ($1)")
	// Still serving, the statement kept.
	res := c.ExecPrepared(ctx, "two", [][]byte{[]byte("1"), []byte("4")}, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 2 {
		t.Errorf("after the errors: %v %q", res.Err, res.Rows)
	}
}

// TestDecodeParam: Bind's values as PostgreSQL's input functions read
// them, against values computed here (time.Date, math).
func TestDecodeParam(t *testing.T) {
	ms := func(y int, mo time.Month, d, h, mi, s, msec int) int64 {
		return time.Date(y, mo, d, h, mi, s, msec*1e6, time.UTC).UnixMilli()
	}
	be64 := func(x int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(x)) }
	us2000 := func(unixMs int64) int64 { return (unixMs - 946684800000) * 1000 }
	ok := []struct {
		oid    uint32
		format int16
		in     []byte
		want   plan.Value
	}{
		{oidInt8, 0, []byte(" -42 "), plan.Int(-42)},
		{oidInt4, 0, []byte("7"), plan.Int(7)},
		{oidFloat8, 0, []byte("NaN"), plan.Float(math.NaN())},
		{oidFloat8, 0, []byte("-Infinity"), plan.Float(math.Inf(-1))},
		{oidFloat8, 0, []byte("Infinity"), plan.Float(math.Inf(1))},
		{oidFloat8, 0, []byte("1.5e3"), plan.Float(1500)},
		{oidBool, 0, []byte("yes"), plan.Bool(true)},
		{oidBool, 0, []byte("OFF"), plan.Bool(false)},
		{oidBool, 0, []byte("t"), plan.Bool(true)},
		{oidBool, 0, []byte("0"), plan.Bool(false)},
		{oidText, 0, []byte("drei ü"), plan.Str("drei ü")},
		{oidTimestamp, 0, []byte("2024-01-02 03:04:05.678"), plan.Time(ms(2024, 1, 2, 3, 4, 5, 678))},
		{oidTimestamp, 0, []byte("2024-01-02T03:04:05"), plan.Time(ms(2024, 1, 2, 3, 4, 5, 0))},
		{oidTimestamptz, 0, []byte("2024-01-02 03:04:05.678+02"), plan.Time(ms(2024, 1, 2, 1, 4, 5, 678))},
		{oidTimestamptz, 0, []byte("2024-01-02T03:04:05-05:30"), plan.Time(ms(2024, 1, 2, 8, 34, 5, 0))},
		{oidTimestamptz, 0, []byte("2024-01-02 03:04:05Z"), plan.Time(ms(2024, 1, 2, 3, 4, 5, 0))},
		{oidInt8, 1, be64(-5), plan.Int(-5)},
		{oidInt4, 1, binary.BigEndian.AppendUint32(nil, uint32(0xFFFFFFFE)), plan.Int(-2)},
		{oidInt2, 1, binary.BigEndian.AppendUint16(nil, 300), plan.Int(300)},
		{oidFloat8, 1, be64(int64(math.Float64bits(-0.25))), plan.Float(-0.25)},
		{oidFloat4, 1, binary.BigEndian.AppendUint32(nil, math.Float32bits(1.5)), plan.Float(1.5)},
		{oidBool, 1, []byte{1}, plan.Bool(true)},
		{oidText, 1, []byte("x"), plan.Str("x")},
		{oidTimestamp, 1, be64(us2000(ms(2024, 1, 2, 3, 4, 5, 678)) + 999), plan.Time(ms(2024, 1, 2, 3, 4, 5, 678))},
		// Before 2000: negative microseconds, floored to the millisecond.
		{oidTimestamp, 1, be64(us2000(ms(1999, 12, 31, 23, 59, 59, 1)) + 500), plan.Time(ms(1999, 12, 31, 23, 59, 59, 1))},
		{oidInt8, 0, nil, plan.Null},
	}
	for _, c := range ok {
		v, err := decodeParam(1, c.oid, c.format, c.in)
		if err != nil || v != c.want {
			t.Errorf("oid %d format %d %q: %v, %v; want %s", c.oid, c.format, c.in, v, err, c.want)
		}
	}
	bad := []struct {
		oid    uint32
		format int16
		in     []byte
		code   string
	}{
		{oidInt8, 0, []byte("abc"), "22P02"},
		{oidInt8, 0, []byte("1.5"), "22P02"},
		{oidInt8, 0, []byte("99999999999999999999"), "22003"},
		{oidInt4, 0, []byte("3000000000"), "22003"},
		{oidFloat8, 0, []byte("0x10"), "22P02"},
		{oidBool, 0, []byte("maybe"), "22P02"},
		{oidTimestamp, 0, []byte("yesterday"), "22P02"},
		{oidText, 0, []byte{0xff}, "22021"},
		{oidInt8, 1, []byte{1, 2, 3}, "08P01"},
		{oidNumeric, 1, []byte{0, 0}, "0A000"},
		{oidInt8, 2, []byte("1"), "0A000"},
	}
	for _, c := range bad {
		_, err := decodeParam(1, c.oid, c.format, c.in)
		var pe *pgError
		if !errors.As(err, &pe) || pe.code != c.code {
			t.Errorf("oid %d format %d %q: %v, want %s", c.oid, c.format, c.in, err, c.code)
		}
	}
}

// TestPreparedResultChanges: a statement prepared over a view that is
// replaced by one of other columns fails at Execute (PostgreSQL's "cached
// plan must not change result type") rather than sending rows its
// RowDescription does not describe; prepared again, it runs.
func TestPreparedResultChanges(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	ctx := ctxT(t)
	c := e.connect(pgx.QueryExecModeCacheStatement).PgConn()
	if _, err := c.Prepare(ctx, "all", "SELECT * FROM v WHERE id = $1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Exec(ctx, "CREATE OR REPLACE VIEW v AS SELECT s, id FROM t"); err != nil {
		t.Fatal(err)
	}
	err := c.ExecPrepared(ctx, "all", [][]byte{[]byte("1")}, nil, nil).Read().Err
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "cached plan must not change result type") {
		t.Fatalf("after the view changed: %v", err)
	}
	sd, err := c.Prepare(ctx, "again", "SELECT * FROM v WHERE id = $1", nil)
	if err != nil || len(sd.Fields) != 2 || sd.Fields[0].Name != "s" {
		t.Fatalf("prepared again: %v %v", sd, err)
	}
	if res := c.ExecPrepared(ctx, "again", [][]byte{[]byte("1")}, nil, nil).Read(); res.Err != nil {
		t.Errorf("prepared again: %v", res.Err)
	}
}
