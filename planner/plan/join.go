package plan

import (
	"fmt"
	"strings"
)

// JoinKind is INNER or LEFT.
type JoinKind uint8

const (
	InnerJoin JoinKind = iota
	LeftJoin
)

func (k JoinKind) String() string {
	if k == LeftJoin {
		return "LEFT"
	}
	return "INNER"
}

// IntervalJoin joins two insert-only streams on equal keys within event
// time bounds: left row l and right row r match when their key columns are
// equal and
//
//	r.time + Lower <= l.time <= r.time + Upper
//
// (both bounds inclusive, in ms; from `l.ts BETWEEN r.ts + a AND r.ts + b`
// and the like). Residual, when set, is a further condition over the
// joined row. Output rows are the left columns followed by the right ones;
// for a LEFT join, a left row with no match is emitted once, with NULL
// right columns, when the right side's watermark makes a match impossible
// (the join holds back the watermark it forwards until then).
//
// State: left rows are kept until the right watermark passes l.time -
// Lower (no right row can match any more), right rows until the left
// watermark passes r.time + Upper. Rows that arrive already expired on the
// other side's watermark are still joined with what the other side holds.
type IntervalJoin struct {
	Kind      JoinKind
	LeftKeys  []int // key columns of the left input
	RightKeys []int // key columns of the right input, same types in order
	LeftTime  int   // event-time column of the left input
	RightTime int   // event-time column of the right input
	Lower     int64
	Upper     int64
	Residual  Expr // over the output row; nil: none
	Left      Schema
	Right     Schema
	Out       Schema // Left ++ Right (right columns nullable for LEFT)
	// TTL > 0: a regular join with state_ttl, run as an interval join of
	// ±TTL on the sides' event times: a row is kept until the other side's
	// watermark is TTL past it.
	TTL int64
}

func (*IntervalJoin) OpName() string { return "IntervalJoin" }

func (j *IntervalJoin) Explain() string {
	var b strings.Builder
	name := "IntervalJoin"
	if j.TTL > 0 {
		name = fmt.Sprintf("RegularJoin state_ttl=%dms", j.TTL)
	}
	fmt.Fprintf(&b, "%s %s left_keys=%v right_keys=%v bounds: right.#%d%+dms <= left.#%d <= right.#%d%+dms",
		name, j.Kind, j.LeftKeys, j.RightKeys, j.RightTime, j.Lower, j.LeftTime, j.RightTime, j.Upper)
	if j.Residual != nil {
		b.WriteString(" residual=" + j.Residual.String())
	}
	b.WriteString(" state=left rows until right watermark passes time-lower, right rows until left watermark passes time+upper")
	return b.String()
}

// TemporalJoin joins a stream (left) with a PRIMARY KEY table (right, an
// upsert stream: rows with RowMeta.Op Upsert or Delete, one version per key
// and event time) on the table's whole key.
//
// AsOf (`JOIN t AS OF TIMESTAMP s.ts ON ...`): a left row l joins the
// version of its key valid at l.time — the newest version whose time is
// <= l.time, none if that version is a delete. The row waits until the
// right watermark passes l.time (strictly: a version exactly at the
// watermark is still on time; an idle table side advances its watermark
// with the wall clock, so it does not hold rows back for long). Versions no
// waiting or future on-time left row can need (older than the newest
// version at or before min(left, right watermark)) are dropped. Without
// AsOf the left row joins the latest version to arrive, at once.
//
// INNER drops a left row without a version; LEFT emits it with NULL right
// columns. Residual, when set, must hold over the joined row (for LEFT, a
// failing residual counts as no match). Output rows are Left ++ Right.
type TemporalJoin struct {
	Kind      JoinKind
	AsOf      bool
	LeftKeys  []int // stream columns equal to the table's key, in key order
	RightKeys []int // the table's key columns
	LeftTime  int   // the stream's event-time column (AsOf), else -1
	RightTime int   // the table's event-time column (versions), else -1
	Residual  Expr
	Left      Schema
	Right     Schema
	Out       Schema
}

func (*TemporalJoin) OpName() string { return "TemporalJoin" }

func (j *TemporalJoin) Explain() string {
	var b strings.Builder
	mode := "latest"
	if j.AsOf {
		mode = fmt.Sprintf("as_of=left.#%d versions=right.#%d", j.LeftTime, j.RightTime)
	}
	fmt.Fprintf(&b, "TemporalJoin %s %s left_keys=%v right_keys=%v", j.Kind, mode, j.LeftKeys, j.RightKeys)
	if j.Residual != nil {
		b.WriteString(" residual=" + j.Residual.String())
	}
	return b.String()
}

// ChangelogJoin is a regular join of inputs of which at least one updates
// (a running aggregate, a PRIMARY KEY table read as a changelog): left row
// l and right row r are joined while both are held, their key columns are
// equal and Residual holds. A change on one side joins or takes back the
// pairs of the row it adds or takes back, at once; a LEFT join's left row
// without a pair is joined with NULLs, and that row is taken back when its
// first pair comes (and comes back when its last pair goes). The output is
// an updating stream keyed on the pair's identity (left row id, right row
// id or none): an updating side's rows are identified by their key, an
// append-only side's by their row id.
//
// State: each side's held rows by join key. An updating side holds one row
// per key of its own (bounded by its keys, no TTL); an append-only side's
// rows are held until the join's watermark, the lower of its inputs', is
// TTL past their event time (Time[side]).
type ChangelogJoin struct {
	Kind      JoinKind
	LeftKeys  []int
	RightKeys []int
	Residual  Expr
	Updating  [2]bool
	Time      [2]int // an append-only side's event-time column; -1 for an updating side
	TTL       int64
	Left      Schema
	Right     Schema
	Out       Schema
}

func (*ChangelogJoin) OpName() string { return "ChangelogJoin" }

func (j *ChangelogJoin) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ChangelogJoin %s left_keys=%v right_keys=%v", j.Kind, j.LeftKeys, j.RightKeys)
	for side, name := range []string{"left", "right"} {
		if j.Updating[side] {
			fmt.Fprintf(&b, " %s=updating", name)
		} else {
			fmt.Fprintf(&b, " %s=append-only(#%d, state_ttl=%dms)", name, j.Time[side], j.TTL)
		}
	}
	if j.Residual != nil {
		b.WriteString(" residual=" + j.Residual.String())
	}
	return b.String()
}
