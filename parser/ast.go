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

// Explain is EXPLAIN select.
type Explain struct{ Select *Select }

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
}

// Field is one item of the select list.
type Field struct {
	Star  bool   // SELECT * (or t.*)
	Table string // qualifier of t.*
	Expr  Expr
	Alias string
	Text  string // the expression's text as written, for default names
}

// TableRef is the FROM clause: one table or view, or a join.
type TableRef struct {
	Name  string // table or view name (empty for a join or subquery)
	Alias string
	// Join (a later issue): Left, Right, On.
	Left, Right *TableRef
	On          Expr
	Subquery    *Select
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
type Func struct {
	Name     string
	Args     []Expr
	Distinct bool
	Star     bool
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

// Cast is CAST(X AS type). Type is BIGINT, DOUBLE, VARCHAR, TIMESTAMP.
type Cast struct {
	X    Expr
	Type string
}

func (*ColumnRef) exprNode() {}
func (*Literal) exprNode()   {}
func (*Binary) exprNode()    {}
func (*Unary) exprNode()     {}
func (*Func) exprNode()      {}
func (*Interval) exprNode()  {}
func (*Case) exprNode()      {}
func (*In) exprNode()        {}
func (*Between) exprNode()   {}
func (*IsNull) exprNode()    {}
func (*Like) exprNode()      {}
func (*Cast) exprNode()      {}
