package plan

import (
	"fmt"
	"strings"
)

// Graph is a query's physical operator graph: vertices in topological order
// (sources first). Each vertex runs as Parallelism tasks; a task runs the
// vertex's operator chain. It is immutable once planned.
type Graph struct {
	Vertices []*Vertex
	Options  Options
	// Key describes the query's upsert key (docs/connectors.md: the PRIMARY KEY rule).
	Key KeyKind
	// KeyOut: for each value of the encoded upsert key ([window_start,
	// window_end,] GROUP BY values), the output column holding it, or -1
	// when the query does not select it. Nil for append-only queries.
	KeyOut []int
	// KeyNames name the upsert key's values (for messages).
	KeyNames []string
	// Out is the schema of the rows the query emits.
	Out Schema
}

// KeyKind is what a query's results are keyed on.
type KeyKind uint8

const (
	// KeyWindowGroup: (window_start, window_end, GROUP BY columns).
	KeyWindowGroup KeyKind = iota
	// KeyGroup: GROUP BY columns (running aggregates).
	KeyGroup
	// KeyRowID: append-only; a row id derived from source offsets.
	KeyRowID
)

func (k KeyKind) String() string {
	return [...]string{"window+group", "group", "row_id"}[k]
}

// EmitMode is when results are emitted.
type EmitMode uint8

const (
	EmitChanges EmitMode = iota
	EmitOnWindowClose
)

func (m EmitMode) String() string {
	if m == EmitOnWindowClose {
		return "on_window_close"
	}
	return "changes"
}

// Options are a query's settings (SET_VAR hints, SET, server defaults).
type Options struct {
	EmitMode           EmitMode
	Parallelism        int
	StateTTL           int64 // ms; 0 = none
	CheckpointInterval int64 // ms; 0 = checkpoints off
	EmitInterval       int64 // ms between barriers
	ResultsRetention   int64 // ms; 0 = keep
	// Delivery is the delivery option as set (SET_VAR(delivery=...) or
	// SET): "" when not set, else DeliveryExactlyOnce or
	// DeliveryAtMostOnce. It chooses the built-in results' guarantee
	// (Sink.AtMostOnce); an INSERT INTO refuses it (the sink table's
	// ENGINE_ATTRIBUTE chooses).
	Delivery string
	// Consistency is the consistency setting of pull queries (SET
	// consistency, SET_VAR(consistency=...)): "" when not set (committed),
	// else ConsistencyCommitted or ConsistencyLatest. Views ignore it.
	Consistency string
}

// The values of the delivery option of built-in results.
const (
	DeliveryExactlyOnce = "exactly_once"
	DeliveryAtMostOnce  = "at_most_once"
)

// Vertex is one stage of the graph.
type Vertex struct {
	ID          int
	Parallelism int
	Inputs      []Edge
	Ops         []Op // the operator chain; Ops[0] consumes the inputs
}

// Partition is how an edge routes rows to the consumer's tasks.
type Partition uint8

const (
	// Forward: task i feeds task i (equal parallelism).
	Forward Partition = iota
	// Hash: by the hash of the encoded key columns.
	Hash
	// Gather: every producer task feeds the consumer's one task, the rows
	// as they are (their RowMeta.Key kept: a union's inputs).
	Gather
	// ByKey: by the hash of the rows' RowMeta.Key as it is (an updating
	// stream's key: a keyed sink's tasks own keys by that hash), kept.
	ByKey
)

func (p Partition) String() string { return [...]string{"forward", "hash", "gather", "by_key"}[p] }

// Edge connects the last operator of vertex From to this vertex.
type Edge struct {
	From      int
	Partition Partition
	KeyCols   []int // Hash: the key columns of the producer's output
	// Kind is what the producer's rows are: inserts only, or changes.
	Kind StreamKind
	// UpsertKey: for an Upsert edge, the columns of the producer's output
	// that identify a row (a PRIMARY KEY table's key).
	UpsertKey []int
}

// StreamKind is what a stream carries. An append-only stream only
// inserts rows; an updating one also deletes them (an update is a delete
// of the old row and an insert of the new one), either keyed (upsert:
// at most one row per key, so a row's key says which row it replaces) or
// not (retract: a delete names the whole row it takes back).
type StreamKind uint8

const (
	AppendOnly StreamKind = iota
	Upsert
	Retract
)

func (k StreamKind) String() string {
	return [...]string{"append-only", "upsert", "retract"}[k]
}

// explainKind renders an edge's kind for Explain: append-only,
// upsert[key columns] or retract.
func (e Edge) explainKind() string {
	if e.Kind == Upsert {
		return fmt.Sprintf("upsert%v", e.UpsertKey)
	}
	return e.Kind.String()
}

// Op is the spec of one operator. The runtime builds operators from specs
// in one place (op.Build, runtime/op).
type Op interface {
	OpName() string
	Explain() string
}

// Source reads a table.
type Source struct {
	Table   string
	TableID uint64
	Engine  string // http, nexmark, kafka
	Schema  Schema // the table's columns
	// EventTime is the event-time column, or -1 (processing time only).
	EventTime       int
	WatermarkDelay  int64 // ms
	AllowedLateness int64 // ms
	IdleTimeout     int64 // ms; 0 = never idle
	StartLatest     bool
	// ProcTime: the query windows on PROCTIME(); the source's watermark is
	// the wall clock.
	ProcTime bool
	// Upsert: a PRIMARY KEY table; its rows are upserts and deletes.
	Upsert bool
	// Key is a PRIMARY KEY table's key columns (what a Kafka change
	// source decodes record keys into).
	Key []string
	// Attrs are the engine's own attributes (nexmark kind, rate, events;
	// kafka topic, format).
	Attrs map[string]string
	// Connection is a Kafka table's bootstrap brokers.
	Connection string
}

// Calc filters then projects. Filter may be nil; Project nil means identity.
type Calc struct {
	Filter  Expr
	Project []Expr
	Out     Schema
}

// WindowKind is a window type.
type WindowKind uint8

const (
	Tumble WindowKind = iota
	Hop
	Session
	// Given: the window comes with the row (cascading windows: grouping by
	// an upstream window's window_start, window_end); TimeCol and EndCol
	// are its start and end columns.
	Given
	// Cumulate: CUMULATE(ts, Slide, Size), windows [s, s+k*Slide) of each
	// Size-aligned [s, s+Size) (window.Cumulate); Size is a multiple of
	// Slide. Built as its own operator (runtime/op/cumulate.go).
	Cumulate
)

func (k WindowKind) String() string {
	return [...]string{"TUMBLE", "HOP", "SESSION", "GIVEN", "CUMULATE"}[k]
}

// WindowSpec is a GROUP BY window.
type WindowSpec struct {
	Kind     WindowKind
	TimeCol  int  // in the aggregation's input
	ProcTime bool // the time column is PROCTIME()
	Size     int64
	Slide    int64
	Gap      int64
	EndCol   int // Given: the window_end column
}

func (w WindowSpec) String() string {
	t := fmt.Sprintf("#%d", w.TimeCol)
	if w.ProcTime {
		t = "proctime"
	}
	switch w.Kind {
	case Tumble:
		return fmt.Sprintf("TUMBLE(%s, %s)", t, ms(w.Size))
	case Hop:
		return fmt.Sprintf("HOP(%s, %s, %s)", t, ms(w.Slide), ms(w.Size))
	case Given:
		return fmt.Sprintf("WINDOW(#%d, #%d)", w.TimeCol, w.EndCol)
	case Cumulate:
		return fmt.Sprintf("CUMULATE(%s, %s, %s)", t, ms(w.Slide), ms(w.Size))
	}
	return fmt.Sprintf("SESSION(%s, %s)", t, ms(w.Gap))
}

func ms(v int64) string { return fmt.Sprintf("%dms", v) }

// Aggregate is a keyed, optionally windowed aggregation. Its input rows are
// [window columns,] group columns..., aggregate arguments... (the planner
// arranges them so), where the window columns are the row's time for
// TUMBLE, HOP and SESSION windows (Window.TimeCol = 0) and a cascading
// window's start and end for Given windows (TimeCol = 0, EndCol = 1); none
// for running aggregates. The aggregation assigns rows to windows itself:
// a row goes to every window it is not late for (late rows are counted),
// so the exchange before it carries each row once, not once per window.
// Output rows are computed by Output over the row
// [window_start, window_end,] keys..., aggregate results..., and kept only
// where Having (over the same row) holds.
type Aggregate struct {
	Windowed        bool
	Session         bool // merge session windows; Gap from Window
	Window          WindowSpec
	Keys            []int // group columns in the input
	Aggs            []Agg
	Having          Expr
	Output          []Expr
	Out             Schema
	EmitMode        EmitMode
	AllowedLateness int64
	// Retract: the input is updating (its edge is not append-only): rows
	// whose op retracts (a delete, the old row of an update) are taken
	// back from their groups. Aggs[RowCount] is then a COUNT(*) counting
	// each group's rows (the planner adds it when the query has none): a
	// group whose count falls to 0 is deleted.
	Retract  bool
	RowCount int
	// EmitBefore: the output feeds another operator (not only a sink), so
	// an update carries the old row ahead of the new one and a delete
	// carries the row it takes back (changes mode).
	EmitBefore bool
}

// Normalize turns a PRIMARY KEY table's upserts and deletes (which name
// only the new row, or the key) into a changelog that carries what it takes
// back: it keeps the latest row of each key and emits an upsert as the old
// row (Before) and the new one, a delete as the row it removes; a delete
// of a key without a row, and an upsert that changes nothing, emit
// nothing. Its input is hashed on Key (the table's PRIMARY KEY columns).
type Normalize struct {
	Table string
	Key   []int
	Out   Schema
}

// Union is UNION ALL of two inputs (a longer UNION ALL is a chain of
// them): it forwards both sides' rows, tagging each with its branch so that
// rows of different branches never share a row id or a key: an
// append-only union's row id is (branch, the row's id); an updating
// union's key is (branch, the row's key, or its id on an append-only
// branch). Tags[side] is the side's branch, or -1 for a side that is a
// union already (its rows are tagged). Its watermark is the lower of its
// sides'.
type Union struct {
	Tags [2]int
	// Updating: a branch updates, so the union is keyed; SideUpdating says
	// which sides do.
	Updating     bool
	SideUpdating [2]bool
	Out          Schema
}

func (*Union) OpName() string { return "Union" }

func (u *Union) Explain() string {
	return fmt.Sprintf("Union ALL branches=[%d %d]", u.Tags[0], u.Tags[1])
}

// SinkKind is where results go.
type SinkKind uint8

const (
	SinkResults  SinkKind = iota // the built-in results table
	SinkDiscard                  // benchmarks
	SinkExternal                 // a sink table: ENGINE=postgres (External says which)
)

// Sink writes the query's changelog.
type Sink struct {
	Kind SinkKind
	Name string
	Key  KeyKind
	// External is the sink table of a SinkExternal.
	External *ExternalSink
	// Consolidate: a key may change several times in an epoch (a PRIMARY
	// KEY table's changes, a union's, a join's), from several tasks in any
	// order (a join of updating inputs): the sink nets each epoch's
	// changes per key.
	Consolidate bool
	// AtMostOnce (built-in results, delivery=at_most_once): before a sink
	// subtask publishes an epoch's changes it records the epoch's source
	// cut, and after a crash it drops the replayed changes below the
	// recorded cut, so no change is published twice (what the crash
	// rolled back is lost instead).
	AtMostOnce bool
}

// Delivery is a results sink's delivery mode (the delivery option).
func (s *Sink) Delivery() string {
	if s.AtMostOnce {
		return DeliveryAtMostOnce
	}
	return DeliveryExactlyOnce
}

// ExternalSink is an INSERT INTO's target: a table with ENGINE=postgres,
// and how the query's changes map onto its rows.
type ExternalSink struct {
	Table      string
	Engine     string
	Connection string
	Attrs      map[string]string
	Columns    Schema
	// PrimaryKey are the indexes of the table's PRIMARY KEY columns.
	PrimaryKey []int
	// KeyValues: for each PrimaryKey column, its index among the values
	// of the query's encoded upsert key ([window_start, window_end,]
	// GROUP BY values...), so a delete, which carries only the key, can
	// name its row. Nil for append-only queries.
	KeyValues []int
	// RowID is the column that holds an append-only query's row id
	// (_row_id), or -1: the query's output columns fill the others by
	// position.
	RowID int
	// ToDouble marks query columns that are BIGINT going into DOUBLE.
	ToDouble []bool
	// ExactlyOnce: epochs are committed with progress records;
	// otherwise changes are applied as they come (at_least_once).
	ExactlyOnce bool
	// AtMostOnce (with ExactlyOnce false): changes are applied as they
	// come, and a restart never writes again what the crashed run may
	// have begun writing (it skips the replay up to the source positions
	// recorded before each write).
	AtMostOnce bool
	// AppendOnly: the sink takes only inserts, each keyed on its row id
	// although the table has no _row_id column (ENGINE=file).
	AppendOnly bool
	// Partition are a file sink's partition_by expressions over the
	// table's columns, PartitionNames their directory levels' names ("":
	// the value alone).
	Partition      []Expr
	PartitionNames []string
}

// Delivery is the sink's delivery mode as written in ENGINE_ATTRIBUTE.
func (e *ExternalSink) Delivery() string {
	switch {
	case e.ExactlyOnce:
		return "exactly_once"
	case e.AtMostOnce:
		return "at_most_once"
	}
	return "at_least_once"
}

func (*Source) OpName() string    { return "Source" }
func (*Calc) OpName() string      { return "Calc" }
func (*Aggregate) OpName() string { return "Aggregate" }
func (*Sink) OpName() string      { return "Sink" }
func (*Normalize) OpName() string { return "Normalize" }

func (n *Normalize) Explain() string {
	return fmt.Sprintf("Normalize table=%s key=%v", n.Table, n.Key)
}

func (s *Source) Explain() string {
	et := "proctime"
	if s.EventTime >= 0 {
		et = s.Schema[s.EventTime].Name
	}
	return fmt.Sprintf("Source table=%s engine=%s event_time=%s watermark_delay=%s", s.Table, s.Engine, et, ms(s.WatermarkDelay))
}

func (c *Calc) Explain() string {
	var b strings.Builder
	b.WriteString("Calc")
	if c.Filter != nil {
		b.WriteString(" filter=" + c.Filter.String())
	}
	if c.Project != nil {
		b.WriteString(" project=[" + joinExprs(c.Project) + "]")
	}
	return b.String()
}

func (a *Aggregate) Explain() string {
	var b strings.Builder
	b.WriteString("Aggregate")
	if a.Windowed {
		fmt.Fprintf(&b, " window=%s allowed_lateness=%s", a.Window, ms(a.AllowedLateness))
	}
	fmt.Fprintf(&b, " keys=%v aggs=[", a.Keys)
	for i, g := range a.Aggs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(g.String())
	}
	b.WriteString("]")
	if a.Having != nil {
		b.WriteString(" having=" + a.Having.String())
	}
	fmt.Fprintf(&b, " output=[%s] emit=%s", joinExprs(a.Output), a.EmitMode)
	if a.Retract {
		fmt.Fprintf(&b, " retract rows=#%d", a.RowCount)
	}
	if a.EmitBefore {
		b.WriteString(" emit_before")
	}
	return b.String()
}

func (s *Sink) Explain() string {
	switch s.Kind {
	case SinkDiscard:
		return fmt.Sprintf("Sink discard name=%s key=%s", s.Name, s.Key)
	case SinkExternal:
		// The connection string is left out: it may hold a password.
		e := s.External
		pk := make([]string, len(e.PrimaryKey))
		for i, p := range e.PrimaryKey {
			pk[i] = e.Columns[p].Name
		}
		if e.Engine == "file" {
			return fmt.Sprintf("Sink file table=%s format=%s delivery=%s key=%s partition_by=[%s]", e.Table, e.Attrs["format"], e.Delivery(), s.Key, joinExprs(e.Partition))
		}
		return fmt.Sprintf("Sink %s table=%s delivery=%s key=%s primary_key=[%s]", e.Engine, e.Table, e.Delivery(), s.Key, strings.Join(pk, ", "))
	}
	if s.Consolidate {
		return fmt.Sprintf("Sink results name=%s key=%s delivery=%s consolidate", s.Name, s.Key, s.Delivery())
	}
	return fmt.Sprintf("Sink results name=%s key=%s delivery=%s", s.Name, s.Key, s.Delivery())
}

func joinExprs(es []Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

// Explain renders the graph deterministically, one line per operator.
func (g *Graph) Explain() string {
	var b strings.Builder
	o := g.Options
	fmt.Fprintf(&b, "Query emit_mode=%s parallelism=%d key=%s\n", o.EmitMode, o.Parallelism, g.Key)
	fmt.Fprintf(&b, "  output: %s\n", schemaString(g.Out))
	for _, v := range g.Vertices {
		fmt.Fprintf(&b, "Stage %d parallelism=%d", v.ID, v.Parallelism)
		for _, e := range v.Inputs {
			if e.Partition == Hash {
				fmt.Fprintf(&b, " <- stage %d hash%v %s", e.From, e.KeyCols, e.explainKind())
			} else {
				fmt.Fprintf(&b, " <- stage %d %s %s", e.From, e.Partition, e.explainKind())
			}
		}
		b.WriteString("\n")
		for _, op := range v.Ops {
			b.WriteString("  " + op.Explain() + "\n")
		}
	}
	return b.String()
}

func schemaString(s Schema) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.Name + " " + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

// SortKey is one ORDER BY key of a pull query.
type SortKey struct {
	Expr Expr
	Desc bool
}

// PullQuery is a SELECT over a view's current results: Filter over the
// view's rows; then, with Group, their aggregation, whose rows Order and
// Project read (else they read the view's rows); then Offset and Limit.
type PullQuery struct {
	View    string
	Filter  Expr
	Group   *PullGroup // nil: no aggregation
	Project []Expr
	Out     Schema
	Order   []SortKey
	Limit   int64 // -1: none
	Offset  int64
	// Consistency is which rows it reads: ConsistencyCommitted (as of the
	// view's last completed checkpoint) or ConsistencyLatest.
	Consistency string
}

// The values of the consistency setting of pull queries.
const (
	ConsistencyCommitted = "committed"
	ConsistencyLatest    = "latest"
)

// PullGroup is a pull query's aggregation: Input projects each view row
// to the aggregation's input row (keys..., aggregate arguments...), and
// Agg is a running aggregation over those rows (not windowed, nothing
// taken back) whose Output is the select list, then the ORDER BY keys
// that are not in it.
type PullGroup struct {
	Input []Expr
	Agg   *Aggregate
}

// Explain renders a pull query deterministically.
func (q *PullQuery) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PullQuery view=%s consistency=%s\n", q.View, q.Consistency)
	if q.Filter != nil {
		fmt.Fprintf(&b, "  filter=%s\n", q.Filter)
	}
	if g := q.Group; g != nil {
		fmt.Fprintf(&b, "  input=[%s]\n", joinExprs(g.Input))
		fmt.Fprintf(&b, "  %s\n", g.Agg.Explain())
	}
	fmt.Fprintf(&b, "  project=[%s]\n", joinExprs(q.Project))
	for _, k := range q.Order {
		dir := "ASC"
		if k.Desc {
			dir = "DESC"
		}
		fmt.Fprintf(&b, "  order=%s %s\n", k.Expr, dir)
	}
	if q.Limit >= 0 {
		fmt.Fprintf(&b, "  limit=%d offset=%d\n", q.Limit, q.Offset)
	}
	return b.String()
}
