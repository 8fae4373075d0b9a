package planner

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// scope is the set of columns an expression may name.
type scope struct {
	cols  plan.Schema
	quals []string // per column: the table name or alias it comes from
	// names indexes cols and quals for resolve, built on first use and
	// shared by the scopes plain makes: a reference is a map lookup, so
	// binding a statement is linear in its columns, not quadratic.
	names *nameIndex
	// rewrite, when set, is consulted first: a whole expression that matches
	// (e.g. a GROUP BY expression or an aggregate in the post-aggregation
	// scope) binds to a column.
	rewrite func(e parser.Expr) (plan.Expr, bool, error)
	// noColumns makes every plain column reference an error (message).
	noColumns string
	// procTime allows PROCTIME().
	procTime bool
	// memo, when set, keeps what each expression node bound to, so binding
	// a node again (and its subtree) is a lookup.
	memo map[parser.Expr]bound
	// params are the statement's parameters ($1: params.go); nil: it has
	// none, and $n is an error.
	params *Params
}

// bound is one memoized result of scope.bind.
type bound struct {
	x   plan.Expr
	err error
}

func (s *scope) bind(e parser.Expr) (plan.Expr, error) {
	if s.memo != nil {
		if b, ok := s.memo[e]; ok {
			return b.x, b.err
		}
		x, err := s.bindNode(e)
		s.memo[e] = bound{x, err}
		return x, err
	}
	return s.bindNode(e)
}

// bindNode binds e, its subexpressions through bind.
func (s *scope) bindNode(e parser.Expr) (plan.Expr, error) {
	if s.rewrite != nil {
		if x, ok, err := s.rewrite(e); ok || err != nil {
			return x, err
		}
	}
	switch e := e.(type) {
	case *parser.ColumnRef:
		i, err := s.resolve(e)
		if err != nil {
			return nil, err
		}
		if s.noColumns != "" {
			return nil, errf(e.Name, s.noColumns, e.Name)
		}
		return &plan.ColRef{Index: i, Name: s.cols[i].Name, T: s.cols[i].Type}, nil
	case *parser.Literal:
		return &plan.Const{V: literal(e)}, nil
	case *parser.Param:
		return s.params.bind(e)
	case *parser.Binary:
		l, err := s.bind(e.L)
		if err != nil {
			return nil, err
		}
		r, err := s.bind(e.R)
		if err != nil {
			return nil, err
		}
		s.params.inferPair(strings.ToLower(e.Op), l, r)
		return binary(strings.ToLower(e.Op), l, r)
	case *parser.Unary:
		x, err := s.bind(e.X)
		if err != nil {
			return nil, err
		}
		if e.Op == "-" {
			s.params.infer(x, plan.TypeDouble)
			if !x.Type().Numeric() && x.Type() != plan.TypeNull {
				return nil, errf("", "cannot negate %s", x.Type())
			}
			t := x.Type()
			if t == plan.TypeBoolean {
				t = plan.TypeBigint
			}
			return &plan.Call{Fn: "neg", Args: []plan.Expr{x}, T: t}, nil
		}
		s.params.infer(x, plan.TypeBoolean)
		return &plan.Call{Fn: "not", Args: []plan.Expr{x}, T: plan.TypeBoolean}, nil
	case *parser.Func:
		if isAggregate(e.Name) {
			return nil, errf(e.Name, "aggregate %s is not allowed here", strings.ToUpper(e.Name))
		}
		if isWindowFunc(e.Name) {
			return nil, errf(e.Name, "%s belongs in GROUP BY", strings.ToUpper(e.Name))
		}
		args := make([]plan.Expr, 0, len(e.Args))
		for _, a := range e.Args {
			if iv, ok := a.(*parser.Interval); ok {
				v, err := s.bind(iv.Value)
				if err != nil {
					return nil, err
				}
				ms, err := intervalMillis(iv.Unit)
				if err != nil {
					return nil, err
				}
				args = append(args, &plan.Call{Fn: "*", Args: []plan.Expr{v, &plan.Const{V: plan.Int(ms)}}, T: plan.TypeBigint})
				continue
			}
			x, err := s.bind(a)
			if err != nil {
				return nil, err
			}
			args = append(args, x)
		}
		if e.Name == "proctime" && !s.procTime {
			return nil, errf("PROCTIME", "PROCTIME() is only allowed as the time argument of TUMBLE or HOP")
		}
		return call(e.Name, args)
	case *parser.Case:
		var args []plan.Expr
		var operand plan.Expr
		if e.Operand != nil {
			var err error
			if operand, err = s.bind(e.Operand); err != nil {
				return nil, err
			}
		}
		var results []plan.Expr
		for _, w := range e.Whens {
			c, err := s.bind(w.Cond)
			if err != nil {
				return nil, err
			}
			if operand != nil {
				s.params.inferPair("=", operand, c)
				if c, err = binary("=", operand, c); err != nil {
					return nil, err
				}
			}
			r, err := s.bind(w.Result)
			if err != nil {
				return nil, err
			}
			args = append(args, c, r)
			results = append(results, r)
		}
		if e.Else != nil {
			r, err := s.bind(e.Else)
			if err != nil {
				return nil, err
			}
			args = append(args, r)
			results = append(results, r)
		}
		t, err := unify("CASE", results)
		if err != nil {
			return nil, err
		}
		return &plan.Call{Fn: "case", Args: coerceAll(args, t, true), T: t}, nil
	case *parser.In:
		x, err := s.bind(e.X)
		if err != nil {
			return nil, err
		}
		args := []plan.Expr{x}
		for _, it := range e.List {
			v, err := s.bind(it)
			if err != nil {
				return nil, err
			}
			s.params.inferPair("=", x, v)
			if _, err := binary("=", x, v); err != nil {
				return nil, err
			}
			c, err := coerceConst(v, x.Type())
			if err != nil {
				return nil, err
			}
			args = append(args, c)
		}
		var out plan.Expr = &plan.Call{Fn: "in", Args: args, T: plan.TypeBoolean}
		if e.Not {
			out = &plan.Call{Fn: "not", Args: []plan.Expr{out}, T: plan.TypeBoolean}
		}
		return out, nil
	case *parser.Between:
		x, err := s.bind(e.X)
		if err != nil {
			return nil, err
		}
		lo, err := s.bind(e.Lo)
		if err != nil {
			return nil, err
		}
		hi, err := s.bind(e.Hi)
		if err != nil {
			return nil, err
		}
		s.params.inferPair(">=", x, lo)
		s.params.inferPair("<=", x, hi)
		a, err := binary(">=", x, lo)
		if err != nil {
			return nil, err
		}
		b, err := binary("<=", x, hi)
		if err != nil {
			return nil, err
		}
		var out plan.Expr = &plan.Call{Fn: "and", Args: []plan.Expr{a, b}, T: plan.TypeBoolean}
		if e.Not {
			out = &plan.Call{Fn: "not", Args: []plan.Expr{out}, T: plan.TypeBoolean}
		}
		return out, nil
	case *parser.IsNull:
		x, err := s.bind(e.X)
		if err != nil {
			return nil, err
		}
		fn := "is_null"
		if e.Not {
			fn = "is_not_null"
		}
		return &plan.Call{Fn: fn, Args: []plan.Expr{x}, T: plan.TypeBoolean}, nil
	case *parser.Like:
		x, err := s.bind(e.X)
		if err != nil {
			return nil, err
		}
		p, err := s.bind(e.Pattern)
		if err != nil {
			return nil, err
		}
		var out plan.Expr = &plan.Call{Fn: "like", Args: []plan.Expr{x, p}, T: plan.TypeBoolean}
		if e.Not {
			out = &plan.Call{Fn: "not", Args: []plan.Expr{out}, T: plan.TypeBoolean}
		}
		return out, nil
	case *parser.Cast:
		x, err := s.bind(e.X)
		if err != nil {
			return nil, err
		}
		switch e.Type {
		case "UNSIGNED", "DECIMAL":
			return funcs.CastCall(e.Type, x, e.Prec, e.Scale), nil
		}
		t := columnTypes[e.Type]
		s.params.infer(x, t)
		return &plan.Call{Fn: "cast", Args: []plan.Expr{x}, T: t}, nil
	case *parser.Interval:
		return nil, errf("INTERVAL", "INTERVAL is only allowed in time arithmetic such as ts + INTERVAL 10 SECOND")
	case *parser.Position:
		return nil, errf("", "position %d: positions are for GROUP BY and ORDER BY", e.N)
	case *parser.Over:
		return nil, errf(e.Name, "window function %s is not allowed here: ROW_NUMBER, RANK and DENSE_RANK are planned as Top-N (SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY k ORDER BY c) AS rn FROM s) t WHERE rn <= N), and aggregates OVER (PARTITION BY k ORDER BY <event time> ROWS|RANGE BETWEEN ... PRECEDING AND CURRENT ROW) in a select list", e.Text)
	}
	return nil, errf("", "unsupported expression")
}

// newScope is the scope of one table's columns under qualifier qual.
func newScope(qual string, cols plan.Schema) *scope {
	quals := make([]string, len(cols))
	for i := range quals {
		quals[i] = qual
	}
	return &scope{cols: cols, quals: quals}
}

// plain is a scope of the same columns without s's rewrite and
// restrictions, sharing its name index.
func (s *scope) plain() *scope {
	return &scope{cols: s.cols, quals: s.quals, names: s.index(), params: s.params}
}

// nameIndex finds a scope's columns by name.
type nameIndex struct {
	cols  map[string][]int // foldKey(name) -> column positions, ascending
	quals map[string]bool  // foldKey of every qualifier
}

func (s *scope) index() *nameIndex {
	if s.names == nil {
		n := &nameIndex{cols: make(map[string][]int, len(s.cols)), quals: map[string]bool{}}
		for i, c := range s.cols {
			k := foldKey(c.Name)
			n.cols[k] = append(n.cols[k], i)
		}
		for _, q := range s.quals {
			n.quals[foldKey(q)] = true
		}
		s.names = n
	}
	return s.names
}

// foldKey maps names that strings.EqualFold matches, and only those, to
// the same key: every rune becomes the smallest rune of its case-folding
// orbit (for ASCII letters, the upper case; K, k and the Kelvin sign all
// become K).
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// resolve finds the column a reference names: qualified, the column of
// that table; unqualified, the one column of that name in any table.
func (s *scope) resolve(e *parser.ColumnRef) (int, error) {
	names := s.index()
	found := -1
	knownTable := e.Table == "" || names.quals[foldKey(e.Table)]
	if knownTable {
		for _, i := range names.cols[foldKey(e.Name)] {
			if e.Table != "" && !strings.EqualFold(s.quals[i], e.Table) {
				continue
			}
			if found >= 0 {
				return -1, errf(e.Name, "column %s is ambiguous (%s.%s or %s.%s)", e.Name, s.quals[found], s.cols[found].Name, s.quals[i], s.cols[i].Name)
			}
			found = i
		}
	}
	switch {
	case !knownTable:
		return -1, errf(e.Table, "unknown table %s in %s.%s", e.Table, e.Table, e.Name)
	case found < 0 && e.Table != "":
		return -1, errf(e.Name, "unknown column %s.%s", e.Table, e.Name)
	case found < 0:
		return -1, errf(e.Name, "unknown column %s", e.Name)
	}
	return found, nil
}

// lookup is resolve without the error, for probes.
func (s *scope) lookup(e *parser.ColumnRef) int {
	i, err := s.resolve(e)
	if err != nil {
		return -1
	}
	return i
}

func literal(l *parser.Literal) plan.Value {
	switch l.Kind {
	case parser.LitInt:
		return plan.Int(l.Int)
	case parser.LitFloat:
		return plan.Float(l.Flt)
	case parser.LitString:
		return plan.Str(l.Str)
	case parser.LitBool:
		return plan.Bool(l.Int != 0)
	}
	return plan.Null
}

func intervalMillis(unit string) (int64, error) {
	ms, err := funcs.UnitMillis(unit)
	if err != nil {
		return 0, funcError(unit, "", err)
	}
	return ms, nil
}

func isWindowFunc(name string) bool {
	switch name {
	case "tumble", "hop", "session_window", "session", "cumulate":
		return true
	}
	return false
}

// binary types a binary operator.
func binary(op string, l, r plan.Expr) (plan.Expr, error) {
	lt, rt := l.Type(), r.Type()
	switch op {
	case "+", "-":
		// TIMESTAMP +/- milliseconds (from INTERVAL) stays a TIMESTAMP.
		if lt == plan.TypeTimestamp && (rt == plan.TypeBigint || rt == plan.TypeNull) {
			return &plan.Call{Fn: op, Args: []plan.Expr{l, r}, T: plan.TypeTimestamp}, nil
		}
		fallthrough
	case "*", "%":
		t, err := arith(op, lt, rt)
		if err != nil {
			return nil, err
		}
		return &plan.Call{Fn: op, Args: []plan.Expr{l, r}, T: t}, nil
	case "/":
		if _, err := arith(op, lt, rt); err != nil {
			return nil, err
		}
		return &plan.Call{Fn: "/", Args: []plan.Expr{l, r}, T: plan.TypeDouble}, nil
	case "div":
		if _, err := arith(op, lt, rt); err != nil {
			return nil, err
		}
		return &plan.Call{Fn: "div", Args: []plan.Expr{l, r}, T: plan.TypeBigint}, nil
	case "=", "<>", "<", "<=", ">", ">=", "<=>":
		if !comparable(lt, rt) {
			return nil, errf("", "cannot compare %s with %s", lt, rt)
		}
		// A string literal compared with a timestamp is parsed once, here.
		var err error
		if l, err = coerceConst(l, rt); err != nil {
			return nil, err
		}
		if r, err = coerceConst(r, lt); err != nil {
			return nil, err
		}
		return &plan.Call{Fn: op, Args: []plan.Expr{l, r}, T: plan.TypeBoolean}, nil
	case "and", "or", "xor":
		return &plan.Call{Fn: op, Args: []plan.Expr{l, r}, T: plan.TypeBoolean}, nil
	}
	return nil, errf(op, "unsupported operator %s", op)
}

func arith(op string, lt, rt plan.Type) (plan.Type, error) {
	t, err := funcs.Arith(op, lt, rt)
	if err != nil {
		return 0, funcError(op, "", err)
	}
	return t, nil
}

func comparable(a, b plan.Type) bool {
	if a == plan.TypeNull || b == plan.TypeNull || a == b {
		return true
	}
	if a.Numeric() && b.Numeric() {
		return true
	}
	// Strings compare with timestamps (parsed) and numbers (converted).
	return a == plan.TypeVarchar || b == plan.TypeVarchar
}

// coerceConst converts a constant string to type t when t is TIMESTAMP, so
// `ts >= '2024-01-01 00:00:00'` (or RFC 3339, Grafana's
// '2026-12-03T09:00:00Z') compares times. A string that is no time is an
// error: compared as text it would silently match nothing.
func coerceConst(e plan.Expr, t plan.Type) (plan.Expr, error) {
	c, ok := e.(*plan.Const)
	if !ok || c.V.K != plan.TypeVarchar || t != plan.TypeTimestamp {
		return e, nil
	}
	if ms, ok := value.ParseTime(c.V.S); ok {
		return &plan.Const{V: plan.Time(ms)}, nil
	}
	return nil, errf(c.V.S, "'%s' compared with a TIMESTAMP is not a time: write '2024-01-01 00:00:00', '2024-01-01T00:00:00.000Z' (RFC 3339) or '2024-01-01'", c.V.S)
}

// unify finds the common type of the branches of CASE, IF, COALESCE
// (funcs.Unify).
func unify(what string, es []plan.Expr) (plan.Type, error) {
	t, err := funcs.Unify(what, es)
	if err != nil {
		return 0, funcError(what, "", err)
	}
	return t, nil
}

// coerceAll wraps branch results of CASE (every odd argument and the else;
// when isCase) or all arguments in casts to t where their type differs.
func coerceAll(args []plan.Expr, t plan.Type, isCase bool) []plan.Expr {
	out := make([]plan.Expr, len(args))
	for i, a := range args {
		isResult := !isCase || i%2 == 1 || (i == len(args)-1 && len(args)%2 == 1)
		if isResult {
			a = funcs.Coerce(a, t)
		}
		out[i] = a
	}
	return out
}
