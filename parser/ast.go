package parser

// Stmt is one parsed statement.
type Stmt interface{ stmtNode() }

// Pos locates a statement in the request text.
type Pos struct {
	Index  int // statement index in the request, from 0
	Offset int // byte offset of the statement in the request
	Line   int // 1-based line of the statement's first byte
	Column int // 1-based column of the statement's first byte
}

// ColumnDef is one column of CREATE TABLE.
type ColumnDef struct {
	Name       string
	Type       string // BIGINT, DOUBLE, VARCHAR, TIMESTAMP, BOOLEAN
	NotNull    bool
	PrimaryKey bool
}

// CreateTable is CREATE TABLE ... ENGINE=... [CONNECTION=...] [ENGINE_ATTRIBUTE=...].
type CreateTable struct {
	Name        string
	IfNotExists bool
	Columns     []ColumnDef
	PrimaryKey  []string
	Engine      string
	Connection  string
	Attributes  string // raw JSON text of ENGINE_ATTRIBUTE
}

// CreateView is CREATE [OR REPLACE] VIEW name AS select.
type CreateView struct {
	Name      string
	OrReplace bool
	Select    *Select
}

// Insert is INSERT INTO table SELECT ...
type Insert struct {
	Table  string
	Select *Select
}

// Drop is DROP VIEW or DROP TABLE.
type Drop struct {
	View     bool
	IfExists bool
	Names    []string
}

// ShowKind says what SHOW shows.
type ShowKind int

const (
	ShowTables ShowKind = iota
	ShowCreateTable
	ShowCreateView
)

// Show is SHOW TABLES or SHOW CREATE TABLE|VIEW name.
type Show struct {
	Kind ShowKind
	Name string
}

// Describe is DESCRIBE name.
type Describe struct{ Name string }

// Explain is EXPLAIN of a statement, or of a query by name. Exactly one
// field is set.
type Explain struct {
	Select *Select     // EXPLAIN SELECT ...
	Insert *Insert     // EXPLAIN INSERT INTO t SELECT ...
	View   *CreateView // EXPLAIN CREATE [OR REPLACE] VIEW v AS SELECT ...
	Name   string      // EXPLAIN name: the plan the query name runs
}

// SetVar is one NAME = value of SET or a SET_VAR hint.
type SetVar struct {
	Name  string
	Value string
}

// Set is SET name = value[, ...]: options for the rest of the request.
type Set struct{ Vars []SetVar }

// Select is a SELECT statement.
type Select struct {
	Hints    []SetVar
	Distinct bool
	Fields   []Field
	From     *TableRef
	Where    Expr
	GroupBy  []Expr
	Having   Expr
	OrderBy  []OrderItem
	Limit    int64 // -1: none
	Offset   int64
	// With are the common table expressions (WITH name AS (SELECT ...))
	// this query and its subqueries may read by name.
	With []CTE
	// UnionAll are the queries whose rows follow this one's (SELECT ...
	// UNION ALL SELECT ...): the Select itself is the first branch.
	UnionAll []*Select
}

// CTE is one common table expression: WITH Name AS (Select).
type CTE struct {
	Name   string
	Select *Select
}

// Field is one item of the select list.
type Field struct {
	Star  bool   // SELECT * (or t.*)
	Table string // qualifier of t.*
	Expr  Expr
	Alias string
	Text  string // the expression's text as written, for default names
}

// TableRef is the FROM clause, or one operand of a join in it. Exactly one
// of Name, Subquery and Join is set.
//
// Names and aliases are lower case. A column of a table or subquery is
// qualified (ColumnRef.Table) by its Qualifier: its alias, else its name.
// The parser guarantees that the qualifiers of one FROM clause are unique.
type TableRef struct {
	Name     string  // a table or view (empty for a join or subquery)
	Alias    string  // AS alias; always set for a subquery, empty for a join
	Subquery *Select // (SELECT ...) AS alias
	// AsOf is the expression of AS OF TIMESTAMP expr: the table is read as
	// of that time (a stream-to-table join as of the stream row's event
	// time). Set only on a table (Name) that is the Right of a Join.
	AsOf Expr
	Join *Join // set when this ref is a join
}

// Qualifier is the name that qualifies the ref's columns: its alias, else
// its name. It is empty for a join.
func (t *TableRef) Qualifier() string {
	if t.Alias != "" {
		return t.Alias
	}
	return t.Name
}

// JoinKind is the kind of a join.
type JoinKind int

const (
	JoinInner JoinKind = iota // [INNER] JOIN ... ON (also CROSS JOIN ... ON)
	JoinLeft                  // LEFT [OUTER] JOIN ... ON
	JoinRight                 // RIGHT [OUTER] JOIN ... ON
)

func (k JoinKind) String() string {
	switch k {
	case JoinLeft:
		return "LEFT"
	case JoinRight:
		return "RIGHT"
	}
	return "INNER"
}

// Join is Left JOIN Right ON On. Chains are left-deep: a JOIN b ON ... JOIN
// c ON ... is Join{Left: Join{a, b}, Right: c}. Right is never a join (a
// table or a subquery); Left may be. On is nil only for a comma join
// (FROM a, b: an inner join whose conditions are in WHERE).
type Join struct {
	Kind        JoinKind
	Left, Right *TableRef
	On          Expr
}

// OrderItem is one ORDER BY item.
type OrderItem struct {
	Expr Expr
	Desc bool
}

func (*CreateTable) stmtNode() {}
func (*CreateView) stmtNode()  {}
func (*Insert) stmtNode()      {}
func (*Drop) stmtNode()        {}
func (*Show) stmtNode()        {}
func (*Describe) stmtNode()    {}
func (*Explain) stmtNode()     {}
func (*Set) stmtNode()         {}
func (*Select) stmtNode()      {}

// Expr is a scalar expression.
type Expr interface{ exprNode() }

// ColumnRef names a column, optionally qualified.
type ColumnRef struct{ Table, Name string }

// LiteralKind is the kind of a literal.
type LiteralKind int

const (
	LitNull LiteralKind = iota
	LitInt
	LitFloat
	LitString
	LitBool
)

// Literal is a constant. Decimal literals are LitFloat.
type Literal struct {
	Kind LiteralKind
	Int  int64
	Flt  float64
	Str  string
}

// Binary is L op R. Op is one of + - * / DIV % = <> < <= > >= AND OR XOR <=>.
type Binary struct {
	Op   string
	L, R Expr
}

// Unary is op X: - NOT.
type Unary struct {
	Op string
	X  Expr
}

// Func is a function or aggregate call. Name is lower case. Star is COUNT(*).
// GROUP_CONCAT has its ORDER BY in Order and its separator in Sep (','
// when the call names none).
type Func struct {
	Name     string
	Args     []Expr
	Distinct bool
	Star     bool
	Order    []OrderItem
	Sep      string
}

// Over is a window function call: Name(Args) OVER (PARTITION BY ...
// ORDER BY ... [frame]). Name is lower case (row_number, rank, dense_rank,
// or an aggregate: count, sum, avg, min, max, first_value, last_value);
// Star is COUNT(*). The parser takes any window function TiDB reads; the
// planner says which it plans (Top-N and deduplication over ROW_NUMBER,
// RANK and DENSE_RANK; OVER aggregations).
type Over struct {
	Name        string
	Args        []Expr
	Star        bool
	Distinct    bool
	PartitionBy []Expr
	OrderBy     []OrderItem
	Frame       *Frame // nil when the OVER clause has none
	Text        string // the call as written, for messages
}

// FrameKind is ROWS or RANGE.
type FrameKind int

const (
	FrameRows FrameKind = iota
	FrameRange
)

// Frame is ROWS|RANGE BETWEEN Start AND End.
type Frame struct {
	Kind       FrameKind
	Start, End FrameBound
}

// BoundKind is where a frame bound lies.
type BoundKind int

const (
	BoundPreceding BoundKind = iota
	BoundCurrentRow
	BoundFollowing
)

// FrameBound is UNBOUNDED PRECEDING|FOLLOWING, n PRECEDING|FOLLOWING,
// INTERVAL n UNIT PRECEDING|FOLLOWING, or CURRENT ROW. N is the
// offset: a literal for ROWS, an *Interval (or literal) for RANGE; nil for
// UNBOUNDED and CURRENT ROW.
type FrameBound struct {
	Kind      BoundKind
	Unbounded bool
	N         Expr
}

// Interval is INTERVAL n UNIT (inside DATE_ADD/DATE_SUB, or ts + INTERVAL ...).
type Interval struct {
	Value Expr
	Unit  string // MICROSECOND ... DAY, upper case
}

// When is one WHEN ... THEN ... of CASE.
type When struct{ Cond, Result Expr }

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type Case struct {
	Operand Expr
	Whens   []When
	Else    Expr
}

// In is X [NOT] IN (list).
type In struct {
	X    Expr
	List []Expr
	Not  bool
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	X, Lo, Hi Expr
	Not       bool
}

// IsNull is X IS [NOT] NULL.
type IsNull struct {
	X   Expr
	Not bool
}

// Like is X [NOT] LIKE pattern.
type Like struct {
	X, Pattern Expr
	Not        bool
}

// Position is a select-list position in GROUP BY or ORDER BY (GROUP BY 1:
// the first column), 1-based as written.
type Position struct{ N int }

// Cast is CAST(X AS type) and CONVERT(X, type). Type is BIGINT (SIGNED),
// UNSIGNED, DOUBLE, DECIMAL (with Prec digits, Scale of them after the
// point), VARCHAR (CHAR), TIMESTAMP (DATETIME).
type Cast struct {
	X           Expr
	Type        string
	Prec, Scale int
}

// Param is PostgreSQL's parameter $N (parser/params.go): a value given
// with the statement (pgwire's Bind), bound by the planner. Offset is the
// byte offset of its $ in the statement's Text, for error positions.
type Param struct {
	N      int
	Offset int
}

func (*ColumnRef) exprNode() {}
func (*Param) exprNode()     {}
func (*Literal) exprNode()   {}
func (*Binary) exprNode()    {}
func (*Unary) exprNode()     {}
func (*Func) exprNode()      {}
func (*Interval) exprNode()  {}
func (*Over) exprNode()      {}
func (*Case) exprNode()      {}
func (*In) exprNode()        {}
func (*Between) exprNode()   {}
func (*IsNull) exprNode()    {}
func (*Like) exprNode()      {}
func (*Cast) exprNode()      {}
func (*Position) exprNode()  {}
