package op

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
)

// exprTable is the table the cases of TestOperators read, and exprRow its
// one row.
const (
	exprTable = `CREATE TABLE t (i BIGINT, j BIGINT, n BIGINT, big BIGINT, small BIGINT, zero BIGINT,
		d DOUBLE, nan DOUBLE, nd DOUBLE, s VARCHAR(16), ns VARCHAR(16), ts TIMESTAMP(3) NOT NULL,
		yes BOOLEAN, no BOOLEAN, nb BOOLEAN) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`
	exprRow = `7, -2, NULL, 9223372036854775807, -9223372036854775808, 0,
		2.5, 'NaN', NULL, 'a_b%c', NULL, 2026-01-01 00:00:01,
		TRUE, FALSE, NULL`
)

// exprCase is a SQL expression over exprTable's row and its value: its
// type and text ("BIGINT 7", "NULL"); oor: it counts a result out of
// range (Env.OutOfRange).
type exprCase struct {
	sql  string
	want string
	oor  bool
}

// exprCases are the cases of every operator the compiler implements
// itself (operators in expr.go; functions have theirs in funcs/), planned
// from SQL as a query's are, so the planner's types and coercions apply.
var exprCases = []exprCase{
	// Arithmetic: BIGINT, DOUBLE (DECIMAL is DOUBLE), TIMESTAMP +/- INTERVAL.
	{sql: "i + j", want: "BIGINT 5"},
	{sql: "i + d", want: "DOUBLE 9.5"},
	{sql: "i + n", want: "NULL"},
	{sql: "big + 1", want: "NULL", oor: true},
	{sql: "big + small", want: "BIGINT -1"},
	{sql: "d + nan", want: "DOUBLE NaN"},
	{sql: "i - j", want: "BIGINT 9"},
	{sql: "small - 1", want: "NULL", oor: true},
	{sql: "d - 0.5", want: "DOUBLE 2"},
	{sql: "nd - 1", want: "NULL"},
	{sql: "i * j", want: "BIGINT -14"},
	{sql: "big * 2", want: "NULL", oor: true},
	{sql: "small * -1", want: "NULL", oor: true},
	{sql: "d * 1e308", want: "DOUBLE +Inf"},
	{sql: "n * 0", want: "NULL"},
	{sql: "i / j", want: "DOUBLE -3.5"},
	{sql: "i / zero", want: "NULL"},
	{sql: "d / 0.0", want: "NULL"},
	{sql: "n / 1", want: "NULL"},
	{sql: "i DIV j", want: "BIGINT -3"},
	{sql: "-7 DIV 2", want: "BIGINT -3"},
	{sql: "d DIV 1", want: "BIGINT 2"},
	{sql: "i DIV zero", want: "NULL"},
	{sql: "d DIV 0.0", want: "NULL"},
	{sql: "small DIV -1", want: "NULL", oor: true},
	{sql: "n DIV 2", want: "NULL"},
	{sql: "-i", want: "BIGINT -7"},
	{sql: "-d", want: "DOUBLE -2.5"},
	{sql: "-small", want: "NULL", oor: true},
	{sql: "-n", want: "NULL"},
	{sql: "-(-big)", want: "BIGINT 9223372036854775807"},
	{sql: "ts + INTERVAL 1 SECOND", want: "TIMESTAMP(3) 2026-01-01T00:00:02.000Z"},
	{sql: "ts - INTERVAL 1 DAY", want: "TIMESTAMP(3) 2025-12-31T00:00:01.000Z"},
	{sql: "ts + 500", want: "TIMESTAMP(3) 2026-01-01T00:00:01.500Z"},
	{sql: "ts - 1000", want: "TIMESTAMP(3) 2026-01-01T00:00:00.000Z"},
	{sql: "ts + big", want: "NULL", oor: true},
	{sql: "ts - big", want: "NULL", oor: true},
	{sql: "ts + n", want: "NULL"},
	{sql: "ts - n", want: "NULL"},
	{sql: "CAST('9999-12-31 23:59:59.999' AS DATETIME) + 1", want: "NULL", oor: true},

	// Comparisons, NaN equal to itself and above every number.
	{sql: "i = 7", want: "BOOLEAN TRUE"},
	{sql: "i = n", want: "NULL"},
	{sql: "i = 7.0", want: "BOOLEAN TRUE"},
	{sql: "nan = nan", want: "BOOLEAN TRUE"},
	{sql: "nan = d", want: "BOOLEAN FALSE"},
	{sql: "s = 'a_b%c'", want: "BOOLEAN TRUE"},
	{sql: "ts = '2026-01-01 00:00:01'", want: "BOOLEAN TRUE"},
	{sql: "i <> j", want: "BOOLEAN TRUE"},
	{sql: "nan <> nan", want: "BOOLEAN FALSE"},
	{sql: "n <> 1", want: "NULL"},
	{sql: "j < i", want: "BOOLEAN TRUE"},
	{sql: "nan < d", want: "BOOLEAN FALSE"},
	{sql: "ns < 'a'", want: "NULL"},
	{sql: "i <= 7", want: "BOOLEAN TRUE"},
	{sql: "d <= nd", want: "NULL"},
	{sql: "nan > 1e308", want: "BOOLEAN TRUE"},
	{sql: "'b' > s", want: "BOOLEAN TRUE"},
	{sql: "n > 0", want: "NULL"},
	{sql: "ts >= '2026-01-01'", want: "BOOLEAN TRUE"},
	{sql: "i >= 8", want: "BOOLEAN FALSE"},
	{sql: "n >= n", want: "NULL"},
	{sql: "yes = no", want: "BOOLEAN FALSE"},
	{sql: "n <=> n", want: "BOOLEAN TRUE"},
	{sql: "i <=> n", want: "BOOLEAN FALSE"},
	{sql: "n <=> i", want: "BOOLEAN FALSE"},
	{sql: "i <=> 7", want: "BOOLEAN TRUE"},
	{sql: "nan <=> nan", want: "BOOLEAN TRUE"},
	{sql: "i <=> j", want: "BOOLEAN FALSE"},

	// Three-valued logic.
	{sql: "yes AND yes", want: "BOOLEAN TRUE"},
	{sql: "yes AND no", want: "BOOLEAN FALSE"},
	{sql: "yes AND nb", want: "NULL"},
	{sql: "no AND nb", want: "BOOLEAN FALSE"},
	{sql: "nb AND no", want: "BOOLEAN FALSE"},
	{sql: "nb AND nb", want: "NULL"},
	{sql: "i AND d", want: "BOOLEAN TRUE"},
	{sql: "zero AND n", want: "BOOLEAN FALSE"},
	{sql: "no OR no", want: "BOOLEAN FALSE"},
	{sql: "no OR yes", want: "BOOLEAN TRUE"},
	{sql: "yes OR nb", want: "BOOLEAN TRUE"},
	{sql: "nb OR yes", want: "BOOLEAN TRUE"},
	{sql: "no OR nb", want: "NULL"},
	{sql: "nb OR nb", want: "NULL"},
	{sql: "yes XOR no", want: "BOOLEAN TRUE"},
	{sql: "yes XOR yes", want: "BOOLEAN FALSE"},
	{sql: "yes XOR nb", want: "NULL"},
	{sql: "nb XOR no", want: "NULL"},
	{sql: "NOT yes", want: "BOOLEAN FALSE"},
	{sql: "NOT no", want: "BOOLEAN TRUE"},
	{sql: "NOT nb", want: "NULL"},
	{sql: "NOT zero", want: "BOOLEAN TRUE"},
	{sql: "NOT (i > 1 AND s LIKE 'a%')", want: "BOOLEAN FALSE"},

	// IS [NOT] NULL.
	{sql: "n IS NULL", want: "BOOLEAN TRUE"},
	{sql: "i IS NULL", want: "BOOLEAN FALSE"},
	{sql: "nan IS NULL", want: "BOOLEAN FALSE"},
	{sql: "nb IS NULL", want: "BOOLEAN TRUE"},
	{sql: "n IS NOT NULL", want: "BOOLEAN FALSE"},
	{sql: "s IS NOT NULL", want: "BOOLEAN TRUE"},
	{sql: "(i + n) IS NULL", want: "BOOLEAN TRUE"},

	// IN: NULL when nothing matches and a NULL is in the list.
	{sql: "i IN (1, 7)", want: "BOOLEAN TRUE"},
	{sql: "i IN (1, 2)", want: "BOOLEAN FALSE"},
	{sql: "i IN (1, n)", want: "NULL"},
	{sql: "i IN (n, 7)", want: "BOOLEAN TRUE"},
	{sql: "n IN (1, 7)", want: "NULL"},
	{sql: "nan IN (1, nan)", want: "BOOLEAN TRUE"},
	{sql: "s IN ('x', 'a_b%c')", want: "BOOLEAN TRUE"},
	{sql: "i NOT IN (1, 2)", want: "BOOLEAN TRUE"},
	{sql: "i NOT IN (1, n)", want: "NULL"},
	{sql: "d IN (i, 2.5)", want: "BOOLEAN TRUE"},

	// LIKE: _ one character, % any, \ escapes them.
	{sql: "s LIKE 'a_b%c'", want: "BOOLEAN TRUE"},
	{sql: "s LIKE 'a%'", want: "BOOLEAN TRUE"},
	{sql: "s LIKE '%c'", want: "BOOLEAN TRUE"},
	{sql: "s LIKE '_'", want: "BOOLEAN FALSE"},
	{sql: "s LIKE '_____'", want: "BOOLEAN TRUE"},
	{sql: "s LIKE '%'", want: "BOOLEAN TRUE"},
	{sql: `s LIKE 'a\_b\%c'`, want: "BOOLEAN TRUE"},
	{sql: `s LIKE 'a\%%'`, want: "BOOLEAN FALSE"},
	{sql: `s LIKE '%\%c'`, want: "BOOLEAN TRUE"},
	{sql: "s LIKE 'A%'", want: "BOOLEAN FALSE"},
	{sql: "s NOT LIKE 'x%'", want: "BOOLEAN TRUE"},
	{sql: "ns LIKE '%'", want: "NULL"},
	{sql: "s LIKE ns", want: "NULL"},
	{sql: "s LIKE CONCAT('a', '%')", want: "BOOLEAN TRUE"},

	// CASE, searched and simple, with and without ELSE.
	{sql: "CASE WHEN i > 5 THEN 'big' ELSE 'small' END", want: "VARCHAR \"big\""},
	{sql: "CASE WHEN i > 50 THEN 'big' ELSE 'small' END", want: "VARCHAR \"small\""},
	{sql: "CASE WHEN i > 50 THEN 'big' END", want: "NULL"},
	{sql: "CASE WHEN nb THEN 1 WHEN yes THEN 2 END", want: "BIGINT 2"},
	{sql: "CASE WHEN n > 0 THEN 1 ELSE n END", want: "NULL"},
	{sql: "CASE i WHEN 1 THEN 'one' WHEN 7 THEN 'seven' END", want: "VARCHAR \"seven\""},
	{sql: "CASE i WHEN 1 THEN 'one' END", want: "NULL"},
	{sql: "CASE n WHEN 1 THEN 'one' ELSE 'other' END", want: "VARCHAR \"other\""},
	{sql: "CASE WHEN yes THEN i ELSE d END", want: "DOUBLE 7"},

	// CAST across every type pair the planner allows (to BIGINT, DOUBLE
	// (and DECIMAL), VARCHAR, TIMESTAMP from each column type and NULL).
	{sql: "CAST(n AS SIGNED)", want: "NULL"},
	{sql: "CAST(i AS SIGNED)", want: "BIGINT 7"},
	{sql: "CAST(d AS SIGNED)", want: "BIGINT 3"},
	{sql: "CAST(-2.5 AS SIGNED)", want: "BIGINT -3"},
	{sql: "CAST(1e300 AS SIGNED)", want: "BIGINT 9223372036854775807"},
	{sql: "CAST(nan AS SIGNED)", want: "BIGINT 0"},
	{sql: "CAST(nd AS SIGNED)", want: "NULL"},
	{sql: "CAST('42' AS SIGNED)", want: "BIGINT 42"},
	{sql: "CAST(s AS SIGNED)", want: "BIGINT 0"},
	{sql: "CAST('99999999999999999999' AS SIGNED)", want: "BIGINT 9223372036854775807"},
	{sql: "CAST(ns AS SIGNED)", want: "NULL"},
	{sql: "CAST(ts AS SIGNED)", want: "BIGINT 1767225601000"},
	{sql: "CAST(yes AS SIGNED)", want: "BIGINT 1"},
	{sql: "CAST(nb AS SIGNED)", want: "NULL"},
	{sql: "CAST(i AS DOUBLE)", want: "DOUBLE 7"},
	{sql: "CAST(big AS DOUBLE)", want: "DOUBLE 9.223372036854776e+18"},
	{sql: "CAST(n AS DOUBLE)", want: "NULL"},
	{sql: "CAST(d AS DECIMAL)", want: "DOUBLE 3"}, // DECIMAL is DECIMAL(10, 0), as in MySQL
	{sql: "CAST(d AS DECIMAL(10, 1))", want: "DOUBLE 2.5"},
	{sql: "CAST(2.345 AS DECIMAL(10, 2))", want: "DOUBLE 2.35"},
	{sql: "CAST(-2.345 AS DECIMAL(10, 2))", want: "DOUBLE -2.35"},
	{sql: "CAST(1234.5 AS DECIMAL(4, 1))", want: "DOUBLE 999.9"}, // clamped, as MySQL's (with a warning)
	{sql: "CAST(-1e300 AS DECIMAL(5, 2))", want: "DOUBLE -999.99"},
	{sql: "CAST(big AS DECIMAL(65, 0))", want: "DOUBLE 9.223372036854776e+18"},
	{sql: "CAST(nan AS DECIMAL(10, 2))", want: "NULL"},
	{sql: "CAST(nd AS DECIMAL(10, 2))", want: "NULL"},
	{sql: "CAST('12.345' AS DECIMAL(5, 1))", want: "DOUBLE 12.3"},
	{sql: "CONVERT(i, DECIMAL(3, 1))", want: "DOUBLE 7"},
	{sql: "CAST(i AS UNSIGNED)", want: "BIGINT 7"},
	{sql: "CAST(j AS UNSIGNED)", want: "NULL"}, // MySQL: 18446744073709551614, beyond BIGINT
	{sql: "CAST(n AS UNSIGNED)", want: "NULL"},
	{sql: "CAST('42' AS UNSIGNED)", want: "BIGINT 42"},
	{sql: "CAST(d AS UNSIGNED INTEGER)", want: "BIGINT 3"},
	{sql: "CAST('99999999999999999999' AS UNSIGNED)", want: "BIGINT 9223372036854775807"}, // MySQL: 18446744073709551615
	{sql: "CONVERT(-0.4, UNSIGNED)", want: "BIGINT 0"},
	{sql: "CONVERT('7', SIGNED)", want: "BIGINT 7"},
	{sql: "CONVERT(i, CHAR)", want: "VARCHAR \"7\""},
	{sql: "CAST(i AS CHAR(10))", want: "VARCHAR \"7\""},
	{sql: "CAST('2026-01-01 00:00:01.5' AS DATETIME(3))", want: "TIMESTAMP(3) 2026-01-01T00:00:01.500Z"},
	{sql: "CAST(i AS SIGNED INTEGER)", want: "BIGINT 7"},
	{sql: "CAST(d AS REAL)", want: "DOUBLE 2.5"},
	{sql: "CAST(d AS FLOAT)", want: "DOUBLE 2.5"},
	{sql: "CAST('1.5e3' AS DOUBLE)", want: "DOUBLE 1500"},
	{sql: "CAST(s AS DOUBLE)", want: "DOUBLE 0"},
	{sql: "CAST('NaN' AS DOUBLE)", want: "DOUBLE NaN"},
	{sql: "CAST(ts AS DOUBLE)", want: "DOUBLE 1.767225601e+12"},
	{sql: "CAST(no AS DOUBLE)", want: "DOUBLE 0"},
	{sql: "CAST(i AS CHAR)", want: "VARCHAR \"7\""},
	{sql: "CAST(d AS CHAR)", want: "VARCHAR \"2.5\""},
	{sql: "CAST(nan AS CHAR)", want: "VARCHAR \"NaN\""},
	{sql: "CAST(s AS CHAR)", want: "VARCHAR \"a_b%c\""},
	{sql: "CAST(ns AS CHAR)", want: "NULL"},
	{sql: "CAST(ts AS CHAR)", want: "VARCHAR \"2026-01-01 00:00:01.000\""},
	{sql: "CAST(yes AS CHAR)", want: "VARCHAR \"1\""},
	{sql: "CAST(i AS DATETIME)", want: "TIMESTAMP(3) 1970-01-01T00:00:00.007Z"},
	{sql: "CAST(big AS DATETIME)", want: "NULL"},
	{sql: "CAST(d AS DATETIME)", want: "TIMESTAMP(3) 1970-01-01T00:00:00.003Z"},
	{sql: "CAST(1e19 AS DATETIME)", want: "NULL"},
	{sql: "CAST(nan AS DATETIME)", want: "NULL"},
	{sql: "CAST('2026-01-01 00:00:01' AS DATETIME)", want: "TIMESTAMP(3) 2026-01-01T00:00:01.000Z"},
	{sql: "CAST(s AS DATETIME)", want: "NULL"},
	{sql: "CAST('0000-06-01 00:00:00' AS DATETIME)", want: "NULL"},
	{sql: "CAST(ns AS DATETIME)", want: "NULL"},
	{sql: "CAST(ts AS DATETIME)", want: "TIMESTAMP(3) 2026-01-01T00:00:01.000Z"},
	{sql: "CAST(yes AS DATETIME)", want: "TIMESTAMP(3) 1970-01-01T00:00:00.001Z"},
	{sql: "CAST(n AS DATETIME)", want: "NULL"},

	// Nested expressions and column references.
	{sql: "i", want: "BIGINT 7"},
	{sql: "s", want: "VARCHAR \"a_b%c\""},
	{sql: "(i + j) * (i - j) DIV 3", want: "BIGINT 15"},
	{sql: "CASE WHEN i + j > 4 AND NOT no THEN CAST(i * 2 AS CHAR) END", want: "VARCHAR \"14\""},
	{sql: "(i IN (7, n) OR n > 0) AND (s LIKE '%b%' XOR no)", want: "BOOLEAN TRUE"},
	{sql: "-(i DIV j) + CAST('3' AS SIGNED) * 2", want: "BIGINT 9"},
	{sql: "(ts + INTERVAL 1 MINUTE) > ts AND (ts - big) IS NULL", want: "BOOLEAN TRUE", oor: true},
}

// TestOperators compiles every case of exprCases as a query's projection
// is compiled, evaluates it on exprRow and checks its value and what it
// counted out of range; and it fails for an operator of the compiler's
// table (operators) without cases, or without one with a NULL argument,
// the way TestEveryFunctionHasCases does for functions (funcs/).
func TestOperators(t *testing.T) {
	cat, def := exprCatalog(t)
	row, err := parseScriptRow(strings.Join(strings.Fields(exprRow), " "), def.Columns)
	if err != nil {
		t.Fatal(err)
	}
	seen, null := map[string]int{}, map[string]bool{}
	for _, c := range exprCases {
		e, err := bindExpr(cat, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		env := &Env{}
		f, err := Compile(e, env)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if got := fmtTypedValue(f(row)); got != c.want {
			t.Errorf("%s = %s, want %s", c.sql, got, c.want)
		}
		if n := env.OutOfRange; (n > 0) != c.oor {
			t.Errorf("%s: counted %d results out of range, want %v", c.sql, n, c.oor)
		}
		// Which operators the case tries, and whether with a NULL
		// argument.
		err = walkCalls(e, func(call *plan.Call) error {
			if _, ok := operators[call.Fn]; !ok {
				return nil
			}
			seen[call.Fn]++
			for _, a := range call.Args {
				f, err := Compile(a, &Env{})
				if err != nil {
					return err
				}
				null[call.Fn] = null[call.Fn] || f(row).IsNull()
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
		}
	}
	names := make([]string, 0, len(operators))
	for name := range operators {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case seen[name] == 0:
			t.Errorf("operator %s has no cases in exprCases", name)
		case !null[name]:
			t.Errorf("operator %s: no case with a NULL argument", name)
		}
	}
}

// TestCastPairs: exprCases cast from every column type to every type CAST
// takes (BIGINT, DOUBLE, VARCHAR, TIMESTAMP: parser/convert.go).
func TestCastPairs(t *testing.T) {
	cat, _ := exprCatalog(t)
	pairs := map[[2]plan.Type]bool{}
	for _, c := range exprCases {
		e, err := bindExpr(cat, c.sql)
		if err != nil {
			continue // TestOperators reports it
		}
		walkCalls(e, func(call *plan.Call) error {
			if call.Fn == "cast" {
				pairs[[2]plan.Type{call.Args[0].Type(), call.T}] = true
			}
			return nil
		})
	}
	for _, from := range []plan.Type{plan.TypeBigint, plan.TypeDouble, plan.TypeVarchar, plan.TypeTimestamp, plan.TypeBoolean} {
		for _, to := range []plan.Type{plan.TypeBigint, plan.TypeDouble, plan.TypeVarchar, plan.TypeTimestamp} {
			if !pairs[[2]plan.Type{from, to}] {
				t.Errorf("no case of CAST from %s to %s", from, to)
			}
		}
	}
}

// exprCatalog is the catalog of exprTable.
func exprCatalog(t *testing.T) (scriptCatalog, *plan.TableDef) {
	t.Helper()
	stmts, err := parser.Parse(exprTable)
	if err != nil {
		t.Fatal(err)
	}
	def, err := planner.Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	return scriptCatalog{"t": def}, def
}

// bindExpr plans SELECT sql FROM t and returns the bound expression.
func bindExpr(cat scriptCatalog, sql string) (plan.Expr, error) {
	stmts, err := parser.Parse("SELECT " + sql + " AS x FROM t")
	if err != nil {
		return nil, err
	}
	g, err := planner.Query(stmts[0].Stmt.(*parser.Select), cat, plan.Options{Parallelism: 1}, "q", plan.SinkResults)
	if err != nil {
		return nil, err
	}
	for _, o := range g.Vertices[0].Ops {
		if c, ok := o.(*plan.Calc); ok && c.Filter == nil && len(c.Project) == 1 {
			return c.Project[0], nil
		}
	}
	return nil, fmt.Errorf("no projection of one expression in the plan")
}

// walkCalls calls fn for every call in e, outermost first.
func walkCalls(e plan.Expr, fn func(*plan.Call) error) error {
	c, ok := e.(*plan.Call)
	if !ok {
		return nil
	}
	if err := fn(c); err != nil {
		return err
	}
	for _, a := range c.Args {
		if err := walkCalls(a, fn); err != nil {
			return err
		}
	}
	return nil
}

func fmtTypedValue(v plan.Value) string {
	if v.IsNull() {
		return "NULL"
	}
	return v.K.String() + " " + v.String()
}
