package parser

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// unsupported builds the error for a construct streamsql does not run.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("unsupported: "+format, args...)
}

func convertStmt(n ast.StmtNode) (Stmt, error) {
	switch n := n.(type) {
	case *ast.CreateTableStmt:
		return convertCreateTable(n)
	case *ast.CreateViewStmt:
		if !isQuery(n.Select) {
			return nil, unsupported("CREATE VIEW must be AS SELECT")
		}
		if len(n.Cols) > 0 {
			return nil, unsupported("a column list in CREATE VIEW; name the columns with AS aliases instead")
		}
		s, err := convertQuery(n.Select)
		if err != nil {
			return nil, err
		}
		return &CreateView{Name: n.ViewName.Name.L, OrReplace: n.OrReplace, Select: s}, nil
	case *ast.InsertStmt:
		return convertInsert(n)
	case *ast.DropTableStmt:
		d := &Drop{View: n.IsView, IfExists: n.IfExists}
		for _, t := range n.Tables {
			d.Names = append(d.Names, t.Name.L)
		}
		return d, nil
	case *ast.ShowStmt:
		switch n.Tp {
		case ast.ShowTables:
			if n.Pattern != nil || n.Where != nil || n.Full {
				return nil, unsupported("SHOW TABLES with FULL, LIKE or WHERE")
			}
			return &Show{Kind: ShowTables}, nil
		case ast.ShowCreateTable:
			return &Show{Kind: ShowCreateTable, Name: n.Table.Name.L}, nil
		case ast.ShowCreateView:
			return &Show{Kind: ShowCreateView, Name: n.Table.Name.L}, nil
		case ast.ShowColumns:
			return &Describe{Name: n.Table.Name.L}, nil
		}
		return nil, unsupported("this SHOW statement; streamsql has SHOW TABLES and SHOW CREATE TABLE|VIEW")
	case *ast.ExplainStmt:
		if n.Analyze {
			return nil, unsupported("EXPLAIN ANALYZE")
		}
		switch s := n.Stmt.(type) {
		case *ast.ShowStmt:
			// EXPLAIN t, DESCRIBE t and DESC t all parse as EXPLAIN of SHOW
			// COLUMNS: the statement's first keyword tells them apart.
			if s.Tp == ast.ShowColumns {
				if firstKeyword(n.Text()) == "EXPLAIN" {
					return &Explain{Name: s.Table.Name.L}, nil
				}
				return &Describe{Name: s.Table.Name.L}, nil
			}
		case *ast.SelectStmt, *ast.SetOprStmt:
			sel, err := convertQuery(s)
			if err != nil {
				return nil, err
			}
			return &Explain{Select: sel}, nil
		case *ast.InsertStmt:
			ins, err := convertInsert(s)
			if err != nil {
				return nil, err
			}
			return &Explain{Insert: ins}, nil
		}
		return nil, unsupported("EXPLAIN of this statement; %s", explainTakes)
	case *ast.SetStmt:
		set := &Set{}
		for _, v := range n.Variables {
			if v.IsGlobal {
				return nil, unsupported("SET GLOBAL; SET applies to the rest of the request")
			}
			val, err := literalText(v.Value)
			if err != nil {
				return nil, fmt.Errorf("SET %s: %w", v.Name, err)
			}
			set.Vars = append(set.Vars, SetVar{Name: strings.ToLower(v.Name), Value: val})
		}
		return set, nil
	case *ast.SelectStmt, *ast.SetOprStmt:
		return convertQuery(n)
	}
	return nil, unsupported("statement %s", stmtName(n))
}

func convertInsert(n *ast.InsertStmt) (*Insert, error) {
	if n.Select == nil || len(n.Lists) > 0 || n.Setlist {
		return nil, unsupported("INSERT ... VALUES; use INSERT INTO t SELECT ..., or POST rows to /v1/tables/{table}/rows")
	}
	if len(n.Columns) > 0 {
		return nil, unsupported("a column list in INSERT INTO; columns map by position")
	}
	if n.IsReplace || n.IgnoreErr || len(n.OnDuplicate) > 0 {
		return nil, unsupported("REPLACE, IGNORE or ON DUPLICATE KEY UPDATE in INSERT")
	}
	name, err := singleTable(n.Table)
	if err != nil {
		return nil, err
	}
	if !isQuery(n.Select) {
		return nil, unsupported("INSERT INTO must be followed by SELECT")
	}
	s, err := convertQuery(n.Select)
	if err != nil {
		return nil, err
	}
	s.Hints = append(convertHints(n.TableHints), s.Hints...)
	return &Insert{Table: name, Select: s}, nil
}

func stmtName(n ast.StmtNode) string {
	t := strings.TrimSpace(n.Text())
	if i := strings.IndexAny(t, " \t\n("); i > 0 {
		if j := strings.IndexAny(t[i+1:], " \t\n("); j > 0 {
			return strings.ToUpper(t[:i+1+j])
		}
		return strings.ToUpper(t[:i])
	}
	return strings.ToUpper(t)
}

func singleTable(refs *ast.TableRefsClause) (string, error) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return "", unsupported("INSERT into several tables")
	}
	ts, ok := refs.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return "", unsupported("INSERT target")
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return "", unsupported("INSERT target")
	}
	return tn.Name.L, nil
}

func convertCreateTable(n *ast.CreateTableStmt) (Stmt, error) {
	if n.Select != nil || n.ReferTable != nil {
		return nil, unsupported("CREATE TABLE ... AS SELECT or LIKE; use CREATE VIEW or INSERT INTO ... SELECT")
	}
	if n.Partition != nil {
		return nil, unsupported("PARTITION BY in CREATE TABLE")
	}
	ct := &CreateTable{Name: n.Table.Name.L, IfNotExists: n.IfNotExists}
	for _, c := range n.Cols {
		typ, err := columnType(c)
		if err != nil {
			return nil, err
		}
		cd := ColumnDef{Name: c.Name.Name.O, Type: typ}
		for _, o := range c.Options {
			switch o.Tp {
			case ast.ColumnOptionNotNull:
				cd.NotNull = true
			case ast.ColumnOptionNull:
				cd.NotNull = false
			case ast.ColumnOptionPrimaryKey:
				cd.PrimaryKey = true
				cd.NotNull = true
				ct.PrimaryKey = append(ct.PrimaryKey, cd.Name)
			case ast.ColumnOptionComment:
			default:
				return nil, unsupported("column option on %s (only NOT NULL, NULL, PRIMARY KEY and COMMENT)", cd.Name)
			}
		}
		ct.Columns = append(ct.Columns, cd)
	}
	for _, c := range n.Constraints {
		if c.Tp != ast.ConstraintPrimaryKey {
			return nil, unsupported("constraint %q: only PRIMARY KEY", c.Name)
		}
		if len(ct.PrimaryKey) > 0 {
			return nil, fmt.Errorf("table %s declares its PRIMARY KEY twice", ct.Name)
		}
		for _, k := range c.Keys {
			if k.Column == nil {
				return nil, unsupported("expression in PRIMARY KEY")
			}
			ct.PrimaryKey = append(ct.PrimaryKey, k.Column.Name.O)
			for i := range ct.Columns {
				if strings.EqualFold(ct.Columns[i].Name, k.Column.Name.O) {
					ct.Columns[i].PrimaryKey = true
					ct.Columns[i].NotNull = true
				}
			}
		}
	}
	for _, o := range n.Options {
		switch o.Tp {
		case ast.TableOptionEngine:
			ct.Engine = strings.ToLower(o.StrValue)
		case ast.TableOptionConnection:
			ct.Connection = o.StrValue
		case ast.TableOptionEngineAttribute:
			ct.Attributes = o.StrValue
		case ast.TableOptionComment:
		default:
			return nil, unsupported("table option; streamsql takes ENGINE, CONNECTION, ENGINE_ATTRIBUTE and COMMENT")
		}
	}
	return ct, nil
}

func columnType(c *ast.ColumnDef) (string, error) {
	ft := c.Tp
	switch ft.GetType() {
	case mysql.TypeTiny:
		if ft.GetFlen() == 1 {
			return "BOOLEAN", nil
		}
		return "BIGINT", nil
	case mysql.TypeShort, mysql.TypeLong, mysql.TypeInt24, mysql.TypeLonglong:
		if ft.GetFlag()&mysql.UnsignedFlag != 0 {
			return "", unsupported("UNSIGNED column %s", c.Name.Name.O)
		}
		return "BIGINT", nil
	case mysql.TypeFloat, mysql.TypeDouble, mysql.TypeNewDecimal:
		return "DOUBLE", nil
	case mysql.TypeVarchar, mysql.TypeString, mysql.TypeVarString, mysql.TypeBlob:
		return "VARCHAR", nil
	case mysql.TypeTimestamp, mysql.TypeDatetime:
		return "TIMESTAMP", nil
	}
	return "", unsupported("column type %s of %s (streamsql has BIGINT, DOUBLE, VARCHAR, TIMESTAMP, BOOLEAN)", ft.String(), c.Name.Name.O)
}

func convertHints(hs []*ast.TableOptimizerHint) []SetVar {
	var out []SetVar
	for _, h := range hs {
		if h.HintName.L == "set_var" {
			if d, ok := h.HintData.(ast.HintSetVar); ok {
				out = append(out, SetVar{Name: strings.ToLower(d.VarName), Value: d.Value})
			}
		}
	}
	return out
}

// isQuery reports whether n is a SELECT or a set operation of SELECTs.
func isQuery(n ast.Node) bool {
	switch n.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return true
	}
	return false
}

// convertQuery converts a SELECT, or SELECTs joined by UNION [ALL].
func convertQuery(n ast.Node) (*Select, error) {
	switch n := n.(type) {
	case *ast.SelectStmt:
		return convertSelect(n)
	case *ast.SetOprStmt:
		return convertSetOpr(n)
	}
	return nil, unsupported("a query that is not a SELECT")
}

// convertSetOpr converts SELECT ... UNION ALL SELECT ...: the first
// branch with the others in UnionAll. UNION (without ALL) is SELECT
// DISTINCT * over the UNION ALL of the branches.
func convertSetOpr(n *ast.SetOprStmt) (*Select, error) {
	if n.OrderBy != nil || n.Limit != nil {
		return nil, unsupported("ORDER BY or LIMIT on a UNION; they are for pull queries over a view")
	}
	var branches []*Select
	distinct, all := false, false
	var walk func(l *ast.SetOprSelectList) error
	walk = func(l *ast.SetOprSelectList) error {
		if l.OrderBy != nil || l.Limit != nil {
			return unsupported("ORDER BY or LIMIT on a UNION; they are for pull queries over a view")
		}
		if l.With != nil {
			return unsupported("WITH inside a UNION; put it before the first SELECT")
		}
		for _, b := range l.Selects {
			var op *ast.SetOprType
			switch b := b.(type) {
			case *ast.SelectStmt:
				op = b.AfterSetOperator
			case *ast.SetOprSelectList:
				op = b.AfterSetOperator
			default:
				return unsupported("a UNION branch that is not a SELECT")
			}
			if len(branches) > 0 && op != nil {
				switch *op {
				case ast.UnionAll:
					all = true
				case ast.Union:
					distinct = true
				default:
					return unsupported("EXCEPT and INTERSECT; UNION ALL and UNION are supported")
				}
			}
			if l, ok := b.(*ast.SetOprSelectList); ok {
				if err := walk(l); err != nil {
					return err
				}
				continue
			}
			sel, err := convertSelect(b.(*ast.SelectStmt))
			if err != nil {
				return err
			}
			if len(sel.With) > 0 {
				return unsupported("WITH inside a UNION branch; put it before the first SELECT")
			}
			branches = append(branches, sel)
		}
		return nil
	}
	if err := walk(n.SelectList); err != nil {
		return nil, err
	}
	if distinct && all {
		return nil, unsupported("UNION mixed with UNION ALL; use one of them (UNION keeps distinct rows, UNION ALL every row)")
	}
	for _, b := range branches[1:] {
		if len(b.Hints) > 0 {
			return nil, unsupported("SET_VAR hints in a later UNION branch; put them after the first SELECT")
		}
	}
	u := branches[0]
	u.UnionAll = branches[1:]
	if distinct {
		u = &Select{Distinct: true, Fields: []Field{{Star: true}}, From: &TableRef{Subquery: u, Alias: "_union"}, Limit: -1, Hints: u.Hints}
		u.From.Subquery.Hints = nil
	}
	if n.With != nil {
		w, err := convertWith(n.With)
		if err != nil {
			return nil, err
		}
		u.With = w
	}
	return u, nil
}

// convertWith converts WITH name AS (query), ...
func convertWith(w *ast.WithClause) ([]CTE, error) {
	if w.IsRecursive {
		return nil, unsupported("WITH RECURSIVE")
	}
	var out []CTE
	for _, c := range w.CTEs {
		if len(c.ColNameList) > 0 {
			return nil, unsupported("a column list in WITH %s (...); name the columns with AS aliases inside it", c.Name.O)
		}
		if c.Query == nil || !isQuery(c.Query.Query) {
			return nil, unsupported("WITH %s: a common table expression is a SELECT", c.Name.O)
		}
		for _, o := range out {
			if o.Name == c.Name.L {
				return nil, fmt.Errorf("WITH names %s twice", c.Name.O)
			}
		}
		sel, err := convertQuery(c.Query.Query)
		if err != nil {
			return nil, err
		}
		out = append(out, CTE{Name: c.Name.L, Select: sel})
	}
	return out, nil
}

func convertSelect(n *ast.SelectStmt) (*Select, error) {
	if len(n.WindowSpecs) > 0 {
		return nil, unsupported("named windows (WINDOW w AS (...)); write the window in OVER (...)")
	}
	if n.LockInfo != nil && n.LockInfo.LockType != ast.SelectLockNone {
		return nil, unsupported("FOR UPDATE / locking reads")
	}
	if n.SelectIntoOpt != nil {
		return nil, unsupported("SELECT ... INTO")
	}
	if n.Kind != ast.SelectStmtKindSelect {
		return nil, unsupported("VALUES and TABLE statements")
	}
	for _, h := range n.TableHints {
		if h.HintName.L != "set_var" {
			return nil, unsupported("optimizer hint %s; streamsql takes SET_VAR(option=value)", strings.ToUpper(h.HintName.O))
		}
	}
	s := &Select{Hints: convertHints(n.TableHints), Distinct: n.Distinct, Limit: -1}
	if n.With != nil {
		w, err := convertWith(n.With)
		if err != nil {
			return nil, err
		}
		s.With = w
	}
	if n.From == nil {
		return nil, unsupported("SELECT without FROM")
	}
	from, err := convertFrom(n.From.TableRefs)
	if err != nil {
		return nil, err
	}
	s.From = from
	for _, f := range n.Fields.Fields {
		if f.WildCard != nil {
			s.Fields = append(s.Fields, Field{Star: true, Table: f.WildCard.Table.L})
			continue
		}
		e, err := convertExpr(f.Expr)
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, Field{Expr: e, Alias: f.AsName.O, Text: strings.TrimSpace(f.Text())})
	}
	if n.Where != nil {
		if s.Where, err = convertExpr(n.Where); err != nil {
			return nil, err
		}
	}
	if n.GroupBy != nil {
		if n.GroupBy.Rollup {
			return nil, unsupported("GROUP BY ... WITH ROLLUP")
		}
		for _, it := range n.GroupBy.Items {
			e, err := convertItem(it.Expr)
			if err != nil {
				return nil, err
			}
			s.GroupBy = append(s.GroupBy, e)
		}
	}
	if n.Having != nil {
		if s.Having, err = convertExpr(n.Having.Expr); err != nil {
			return nil, err
		}
	}
	if n.OrderBy != nil {
		if s.OrderBy, err = convertOrderBy(n.OrderBy.Items, convertItem); err != nil {
			return nil, err
		}
	}
	if n.Limit != nil {
		c, err := intLiteral(n.Limit.Count, "LIMIT")
		if err != nil {
			return nil, err
		}
		s.Limit = c
		if n.Limit.Offset != nil {
			if s.Offset, err = intLiteral(n.Limit.Offset, "OFFSET"); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// convertItem converts a GROUP BY or ORDER BY item, where a position
// (GROUP BY 1) names a column of the select list.
func convertItem(e ast.ExprNode) (Expr, error) {
	if p, ok := e.(*ast.PositionExpr); ok {
		if p.P != nil {
			return nil, unsupported("a parameter as a GROUP BY or ORDER BY position")
		}
		return &Position{N: p.N}, nil
	}
	return convertExpr(e)
}

func intLiteral(e ast.ExprNode, what string) (int64, error) {
	v, ok := e.(*test_driver.ValueExpr)
	if !ok {
		return 0, unsupported("%s must be an integer literal", what)
	}
	switch v.Kind() {
	case test_driver.KindInt64:
		return v.GetInt64(), nil
	case test_driver.KindUint64:
		return int64(v.GetUint64()), nil
	}
	return 0, unsupported("%s must be an integer literal", what)
}

// joinsSupported says what streamsql joins, for rejection messages.
const joinsSupported = "streamsql runs [INNER] JOIN ... ON, LEFT [OUTER] JOIN ... ON and RIGHT [OUTER] JOIN ... ON"

// convertFrom converts a FROM clause and checks that its qualifiers (alias,
// else table name) are unique.
func convertFrom(n ast.ResultSetNode) (*TableRef, error) {
	from, err := convertTableRef(n, false)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var check func(t *TableRef) error
	check = func(t *TableRef) error {
		if t.Join != nil {
			if err := check(t.Join.Left); err != nil {
				return err
			}
			return check(t.Join.Right)
		}
		q := t.Qualifier()
		if seen[q] {
			return fmt.Errorf("%s appears twice in FROM; give each table its own alias", q)
		}
		seen[q] = true
		return nil
	}
	if err := check(from); err != nil {
		return nil, err
	}
	return from, nil
}

// unwrapJoin strips the one-sided joins the TiDB parser wraps around FROM
// items and parenthesized table references.
func unwrapJoin(n ast.ResultSetNode) ast.ResultSetNode {
	for {
		j, ok := n.(*ast.Join)
		if !ok || j.Right != nil {
			return n
		}
		n = j.Left
	}
}

// convertTableRef converts one FROM item. asOfOK is true for the right side
// of a join, the one place AS OF TIMESTAMP is allowed.
func convertTableRef(n ast.ResultSetNode, asOfOK bool) (*TableRef, error) {
	switch n := unwrapJoin(n).(type) {
	case *ast.Join:
		return convertJoin(n)
	case *ast.TableSource:
		if n.Lateral {
			return nil, unsupported("LATERAL subqueries; join a subquery with (SELECT ...) AS alias JOIN ... ON")
		}
		if len(n.ColumnNames) > 0 {
			return nil, unsupported("a column list after a subquery's alias; name the columns with AS aliases inside it")
		}
		switch src := n.Source.(type) {
		case *ast.TableName:
			return convertTableName(src, n.AsName.L, asOfOK)
		case *ast.SelectStmt:
			if n.AsName.L == "" {
				return nil, fmt.Errorf("a subquery in FROM needs an alias: (SELECT ...) AS name")
			}
			sub, err := convertSelect(src)
			if err != nil {
				return nil, err
			}
			return &TableRef{Subquery: sub, Alias: n.AsName.L}, nil
		case *ast.SetOprStmt:
			if n.AsName.L == "" {
				return nil, fmt.Errorf("a subquery in FROM needs an alias: (SELECT ...) AS name")
			}
			sub, err := convertSetOpr(src)
			if err != nil {
				return nil, err
			}
			return &TableRef{Subquery: sub, Alias: n.AsName.L}, nil
		case *ast.Join:
			if n.AsName.L != "" {
				return nil, unsupported("an alias on a parenthesized join")
			}
			return convertTableRef(src, asOfOK)
		}
	}
	return nil, unsupported("FROM clause")
}

func convertTableName(src *ast.TableName, alias string, asOfOK bool) (*TableRef, error) {
	if src.Schema.L != "" {
		return nil, unsupported("schema-qualified name %s.%s", src.Schema.O, src.Name.O)
	}
	if len(src.IndexHints) > 0 {
		return nil, unsupported("index hints on %s", src.Name.O)
	}
	if len(src.PartitionNames) > 0 {
		return nil, unsupported("PARTITION (...) on %s", src.Name.O)
	}
	if src.TableSample != nil {
		return nil, unsupported("TABLESAMPLE on %s", src.Name.O)
	}
	t := &TableRef{Name: src.Name.L, Alias: alias}
	if src.AsOf != nil {
		if !asOfOK {
			return nil, unsupported("AS OF TIMESTAMP on %s: AS OF goes on the table joined to a stream, as in FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id", src.Name.O)
		}
		e, err := convertExpr(src.AsOf.TsExpr)
		if err != nil {
			return nil, err
		}
		t.AsOf = e
	}
	return t, nil
}

func convertJoin(n *ast.Join) (*TableRef, error) {
	// The left side first, so errors come in the order of the text.
	left, err := convertTableRef(n.Left, false)
	if err != nil {
		return nil, err
	}
	right := unwrapJoin(n.Right)
	switch {
	case n.NaturalJoin:
		return nil, unsupported("NATURAL JOIN; %s", joinsSupported)
	case n.StraightJoin:
		return nil, unsupported("STRAIGHT_JOIN; %s", joinsSupported)
	case len(n.Using) > 0:
		return nil, unsupported("JOIN ... USING; write the condition with ON, as in JOIN b ON a.id = b.id")
	case n.Tp != ast.CrossJoin && n.Tp != ast.LeftJoin && n.Tp != ast.RightJoin:
		return nil, unsupported("this join; %s", joinsSupported)
	}
	// FULL is not a keyword: a FULL JOIN b parses as a (alias full) JOIN b.
	if ts, ok := unwrapJoin(n.Left).(*ast.TableSource); ok && ts.AsName.L == "full" {
		return nil, unsupported("FULL JOIN (or a table alias named full); %s", joinsSupported)
	}
	if r, ok := right.(*ast.Join); ok && r.Right != nil {
		return nil, unsupported("a parenthesized join on the right side of JOIN; write a chain, a JOIN b ON ... JOIN c ON ..., or join a subquery")
	}
	rt, err := convertTableRef(right, true)
	if err != nil {
		return nil, err
	}
	if n.On == nil {
		if l, ok := n.Left.(*ast.Join); ok && l.Right == nil && !l.ExplicitParens {
			// FROM a, b: an inner join whose conditions are in WHERE.
			return &TableRef{Join: &Join{Kind: JoinInner, Left: left, Right: rt}}, nil
		}
		if l, ok := n.Left.(*ast.Join); ok && l.On == nil && l.Tp == ast.CrossJoin && !l.ExplicitParens {
			return nil, unsupported("a comma join of more than two tables (FROM a, b, %s); join the third with JOIN ... ON", refName(right))
		}
		return nil, unsupported("a join without ON (CROSS JOIN, JOIN without ON, or a comma in FROM) of %s; use JOIN ... ON (%s)", refName(right), joinsSupported)
	}
	on, err := convertExpr(n.On.Expr)
	if err != nil {
		return nil, err
	}
	kind := JoinInner
	switch n.Tp {
	case ast.LeftJoin:
		kind = JoinLeft
	case ast.RightJoin:
		kind = JoinRight
	}
	return &TableRef{Join: &Join{Kind: kind, Left: left, Right: rt, On: on}}, nil
}

// refName names a FROM item in messages.
func refName(n ast.ResultSetNode) string {
	if ts, ok := n.(*ast.TableSource); ok {
		if tn, ok := ts.Source.(*ast.TableName); ok {
			return tn.Name.O
		}
		if ts.AsName.O != "" {
			return ts.AsName.O
		}
		return "a subquery"
	}
	return "a join"
}

var binOps = map[opcode.Op]string{
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/",
	opcode.IntDiv: "DIV", opcode.Mod: "%", opcode.EQ: "=", opcode.NE: "<>",
	opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=",
	opcode.LogicAnd: "AND", opcode.LogicOr: "OR", opcode.LogicXor: "XOR", opcode.NullEQ: "<=>",
}

func convertExpr(n ast.ExprNode) (Expr, error) {
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return convertExpr(n.Expr)
	case *ast.ColumnNameExpr:
		if n.Name.Schema.L != "" {
			return nil, unsupported("schema-qualified column %s", n.Name.String())
		}
		return &ColumnRef{Table: n.Name.Table.L, Name: n.Name.Name.O}, nil
	case *test_driver.ParamMarkerExpr:
		// A $n marked by markParams (params.go).
		return &Param{N: n.Order, Offset: n.Offset}, nil
	case *test_driver.ValueExpr:
		return convertValue(n)
	case *ast.BinaryOperationExpr:
		op, ok := binOps[n.Op]
		if !ok {
			return nil, unsupported("operator %s", n.Op.String())
		}
		l, err := convertExpr(n.L)
		if err != nil {
			return nil, err
		}
		r, err := convertExpr(n.R)
		if err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r}, nil
	case *ast.UnaryOperationExpr:
		x, err := convertExpr(n.V)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case opcode.Minus:
			return &Unary{Op: "-", X: x}, nil
		case opcode.Plus:
			return x, nil
		case opcode.Not, opcode.Not2:
			return &Unary{Op: "NOT", X: x}, nil
		}
		return nil, unsupported("operator %s", n.Op.String())
	case *ast.FuncCallExpr:
		return convertFunc(n)
	case *ast.AggregateFuncExpr:
		name := strings.ToLower(n.F)
		switch name {
		case "count", "sum", "avg", "min", "max", "stddev_pop", "stddev_samp", "var_pop", "var_samp",
			"bit_and", "bit_or", "bit_xor", "approx_count_distinct":
		case "group_concat":
			return convertGroupConcat(n)
		default:
			return nil, unsupported("aggregate %s (streamsql has COUNT, SUM, AVG, MIN, MAX, STDDEV_POP, STDDEV_SAMP, VAR_POP, VAR_SAMP, BIT_AND, BIT_OR, BIT_XOR, APPROX_COUNT_DISTINCT, GROUP_CONCAT)", strings.ToUpper(name))
		}
		f := &Func{Name: name, Distinct: n.Distinct}
		if isCountStar(name, n.Args, n.Distinct) {
			f.Star = true
			return f, nil
		}
		if n.Distinct && name != "count" {
			return nil, unsupported("%s(DISTINCT ...); only COUNT(DISTINCT ...) and GROUP_CONCAT(DISTINCT ...)", strings.ToUpper(name))
		}
		if len(n.Args) != 1 {
			return nil, unsupported("%s with %d arguments", strings.ToUpper(name), len(n.Args))
		}
		a, err := convertExpr(n.Args[0])
		if err != nil {
			return nil, err
		}
		f.Args = []Expr{a}
		return f, nil
	case *ast.CaseExpr:
		c := &Case{}
		var err error
		if n.Value != nil {
			if c.Operand, err = convertExpr(n.Value); err != nil {
				return nil, err
			}
		}
		for _, w := range n.WhenClauses {
			cond, err := convertExpr(w.Expr)
			if err != nil {
				return nil, err
			}
			res, err := convertExpr(w.Result)
			if err != nil {
				return nil, err
			}
			c.Whens = append(c.Whens, When{Cond: cond, Result: res})
		}
		if n.ElseClause != nil {
			if c.Else, err = convertExpr(n.ElseClause); err != nil {
				return nil, err
			}
		}
		return c, nil
	case *ast.PatternInExpr:
		if n.Sel != nil {
			return nil, unsupported("IN (subquery)")
		}
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		in := &In{X: x, Not: n.Not}
		for _, e := range n.List {
			v, err := convertExpr(e)
			if err != nil {
				return nil, err
			}
			in.List = append(in.List, v)
		}
		return in, nil
	case *ast.BetweenExpr:
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		lo, err := convertExpr(n.Left)
		if err != nil {
			return nil, err
		}
		hi, err := convertExpr(n.Right)
		if err != nil {
			return nil, err
		}
		return &Between{X: x, Lo: lo, Hi: hi, Not: n.Not}, nil
	case *ast.IsNullExpr:
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		return &IsNull{X: x, Not: n.Not}, nil
	case *ast.PatternLikeOrIlikeExpr:
		if !n.IsLike {
			return nil, unsupported("ILIKE")
		}
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		p, err := convertExpr(n.Pattern)
		if err != nil {
			return nil, err
		}
		return &Like{X: x, Pattern: p, Not: n.Not}, nil
	case *ast.PatternRegexpExpr: // s [NOT] REGEXP p, s RLIKE p: REGEXP_LIKE(s, p)
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		p, err := convertExpr(n.Pattern)
		if err != nil {
			return nil, err
		}
		var out Expr = &Func{Name: "regexp_like", Args: []Expr{x, p}}
		if n.Not {
			out = &Unary{Op: "NOT", X: out}
		}
		return out, nil
	case *ast.FuncCastExpr:
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		var t string
		c := &Cast{X: x}
		switch n.Tp.GetType() {
		case mysql.TypeLonglong, mysql.TypeLong:
			t = "BIGINT"
			if mysql.HasUnsignedFlag(n.Tp.GetFlag()) {
				t = "UNSIGNED"
			}
		case mysql.TypeDouble, mysql.TypeFloat:
			t = "DOUBLE"
		case mysql.TypeNewDecimal: // DECIMAL is DECIMAL(10, 0), as in MySQL
			t, c.Prec, c.Scale = "DECIMAL", n.Tp.GetFlen(), max(n.Tp.GetDecimal(), 0)
		case mysql.TypeVarString, mysql.TypeString, mysql.TypeVarchar:
			t = "VARCHAR"
		case mysql.TypeDatetime, mysql.TypeTimestamp:
			t = "TIMESTAMP"
		default:
			name, _, _ := strings.Cut(strings.Fields(n.Tp.String() + " ?")[0], "(")
			return nil, unsupported("CAST to %s (streamsql casts to SIGNED, UNSIGNED, DOUBLE, DECIMAL, CHAR and DATETIME)", strings.ToUpper(name))
		}
		c.Type = t
		return c, nil
	case *ast.IsTruthExpr:
		x, err := convertExpr(n.Expr)
		if err != nil {
			return nil, err
		}
		name := "is_true"
		if n.True == 0 {
			name = "is_false"
		}
		if n.Not {
			return &Unary{Op: "NOT", X: &Func{Name: name, Args: []Expr{x}}}, nil
		}
		return &Func{Name: name, Args: []Expr{x}}, nil
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return nil, unsupported("subqueries")
	case *ast.WindowFuncExpr:
		return convertOver(n)
	case *ast.VariableExpr:
		return nil, unsupported("variables (@%s)", n.Name)
	case *ast.RowExpr:
		return nil, unsupported("row constructors")
	case *ast.DefaultExpr:
		return nil, unsupported("DEFAULT")
	}
	return nil, unsupported("expression %s", exprText(n))
}

// exprText is e's SQL, for messages about it (never a Go type name).
func exprText(e ast.ExprNode) string {
	var b strings.Builder
	if err := e.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags|format.RestoreStringWithoutCharset, &b)); err != nil || b.Len() == 0 {
		if t := strings.TrimSpace(e.Text()); t != "" {
			return t
		}
		return "of this kind"
	}
	return b.String()
}

func convertFunc(n *ast.FuncCallExpr) (Expr, error) {
	name := n.FnName.L
	f := &Func{Name: name}
	switch name {
	case "date_add", "date_sub", "adddate", "subdate", "timestampadd":
		if len(n.Args) == 3 {
			if tu, ok := n.Args[2].(*ast.TimeUnitExpr); ok {
				x, err := convertExpr(n.Args[0])
				if err != nil {
					return nil, err
				}
				v, err := convertExpr(n.Args[1])
				if err != nil {
					return nil, err
				}
				if name == "adddate" {
					name = "date_add"
				}
				if name == "subdate" {
					name = "date_sub"
				}
				return &Func{Name: name, Args: []Expr{x, &Interval{Value: v, Unit: tu.Unit.String()}}}, nil
			}
		}
	}
	for _, a := range n.Args {
		if tu, ok := a.(*ast.TimeUnitExpr); ok {
			f.Args = append(f.Args, &Literal{Kind: LitString, Str: tu.Unit.String()})
			continue
		}
		e, err := convertExpr(a)
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, e)
	}
	return f, nil
}

func convertValue(v *test_driver.ValueExpr) (Expr, error) {
	switch v.Kind() {
	case test_driver.KindNull:
		return &Literal{Kind: LitNull}, nil
	case test_driver.KindInt64:
		if v.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
			return &Literal{Kind: LitBool, Int: v.GetInt64()}, nil
		}
		return &Literal{Kind: LitInt, Int: v.GetInt64()}, nil
	case test_driver.KindUint64:
		u := v.GetUint64()
		if u > 1<<63-1 {
			return nil, fmt.Errorf("integer literal %d is out of BIGINT range", u)
		}
		return &Literal{Kind: LitInt, Int: int64(u)}, nil
	case test_driver.KindFloat32, test_driver.KindFloat64:
		return &Literal{Kind: LitFloat, Flt: v.GetFloat64()}, nil
	case test_driver.KindMysqlDecimal:
		f, err := strconv.ParseFloat(v.GetMysqlDecimal().String(), 64)
		if err != nil {
			return nil, fmt.Errorf("decimal literal %s: %w", v.GetMysqlDecimal().String(), err)
		}
		return &Literal{Kind: LitFloat, Flt: f}, nil
	case test_driver.KindString, test_driver.KindBytes:
		return &Literal{Kind: LitString, Str: v.GetString()}, nil
	}
	return nil, unsupported("literal of kind %d", v.Kind())
}

// literalText renders a SET value (a literal or a bare identifier) as text.
func literalText(e ast.ExprNode) (string, error) {
	switch v := e.(type) {
	case *test_driver.ValueExpr:
		lit, err := convertValue(v)
		if err != nil {
			return "", err
		}
		switch l := lit.(*Literal); l.Kind {
		case LitInt, LitBool:
			return fmt.Sprint(l.Int), nil
		case LitFloat:
			return fmt.Sprint(l.Flt), nil
		case LitString:
			return l.Str, nil
		}
		return "", fmt.Errorf("NULL is not a value")
	case *ast.ColumnNameExpr:
		return v.Name.Name.O, nil
	}
	return "", unsupported("SET value must be a literal")
}

// convertOver converts a window function call. It refuses what no plan
// could use (named windows, IGNORE NULLS, FROM LAST, GROUPS frames); the
// planner decides which calls it plans.
func convertOver(n *ast.WindowFuncExpr) (Expr, error) {
	name := strings.ToLower(n.Name)
	text := exprText(n)
	switch {
	case n.Spec.Name.L != "" || n.Spec.Ref.L != "":
		return nil, unsupported("named windows in %s; write the window in OVER (...)", text)
	case n.IgnoreNull:
		return nil, unsupported("IGNORE NULLS in %s", text)
	case n.FromLast:
		return nil, unsupported("FROM LAST in %s", text)
	}
	o := &Over{Name: name, Distinct: n.Distinct, Star: isCountStar(name, n.Args, n.Distinct), Text: text}
	var err error
	if !o.Star {
		for _, a := range n.Args {
			e, err := convertExpr(a)
			if err != nil {
				return nil, err
			}
			o.Args = append(o.Args, e)
		}
	}
	if p := n.Spec.PartitionBy; p != nil {
		for _, it := range p.Items {
			e, err := convertExpr(it.Expr)
			if err != nil {
				return nil, err
			}
			o.PartitionBy = append(o.PartitionBy, e)
		}
	}
	if ob := n.Spec.OrderBy; ob != nil {
		if o.OrderBy, err = convertOrderBy(ob.Items, convertExpr); err != nil {
			return nil, err
		}
	}
	if f := n.Spec.Frame; f != nil {
		fr := &Frame{}
		switch f.Type {
		case ast.Rows:
			fr.Kind = FrameRows
		case ast.Ranges:
			fr.Kind = FrameRange
		default:
			return nil, unsupported("GROUPS frames in %s; use ROWS or RANGE", text)
		}
		if fr.Start, err = convertBound(&f.Extent.Start); err != nil {
			return nil, err
		}
		if fr.End, err = convertBound(&f.Extent.End); err != nil {
			return nil, err
		}
		o.Frame = fr
	}
	return o, nil
}

// convertGroupConcat converts GROUP_CONCAT([DISTINCT] x, ... [ORDER BY
// ...] [SEPARATOR 's']): TiDB passes the separator as the last argument.
func convertGroupConcat(n *ast.AggregateFuncExpr) (Expr, error) {
	f := &Func{Name: "group_concat", Distinct: n.Distinct, Sep: ","}
	args := n.Args
	if len(args) > 0 {
		if v, ok := args[len(args)-1].(*test_driver.ValueExpr); ok && v.Kind() == test_driver.KindString {
			f.Sep = v.GetString()
			args = args[:len(args)-1]
		}
	}
	if len(args) == 0 {
		return nil, unsupported("GROUP_CONCAT without an argument")
	}
	for _, a := range args {
		e, err := convertExpr(a)
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, e)
	}
	if n.Order != nil {
		for _, it := range n.Order.Items {
			if _, ok := it.Expr.(*ast.PositionExpr); ok {
				return nil, unsupported("GROUP_CONCAT(... ORDER BY a position); ORDER BY the expression")
			}
		}
		var err error
		if f.Order, err = convertOrderBy(n.Order.Items, convertExpr); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// isCountStar says whether an aggregate call is COUNT(*), which parses as
// COUNT(1).
func isCountStar(name string, args []ast.ExprNode, distinct bool) bool {
	if name != "count" || len(args) != 1 || distinct {
		return false
	}
	v, ok := args[0].(*test_driver.ValueExpr)
	return ok && v.Kind() == test_driver.KindInt64
}

// convertOrderBy converts ORDER BY items with conv (convertItem where
// select-list positions may stand for expressions).
func convertOrderBy(items []*ast.ByItem, conv func(ast.ExprNode) (Expr, error)) ([]OrderItem, error) {
	out := make([]OrderItem, 0, len(items))
	for _, it := range items {
		e, err := conv(it.Expr)
		if err != nil {
			return nil, err
		}
		out = append(out, OrderItem{Expr: e, Desc: it.Desc})
	}
	return out, nil
}

func convertBound(b *ast.FrameBound) (FrameBound, error) {
	out := FrameBound{Unbounded: b.UnBounded}
	switch b.Type {
	case ast.Preceding:
		out.Kind = BoundPreceding
	case ast.Following:
		out.Kind = BoundFollowing
	default:
		out.Kind = BoundCurrentRow
		return out, nil
	}
	if b.UnBounded || b.Expr == nil {
		return out, nil
	}
	e, err := convertExpr(b.Expr)
	if err != nil {
		return out, err
	}
	if b.Unit != ast.TimeUnitInvalid {
		e = &Interval{Value: e, Unit: strings.ToUpper(b.Unit.String())}
	}
	out.N = e
	return out, nil
}
