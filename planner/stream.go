package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// builder lays out a query's physical graph, numbering vertices in the
// order they are created (sources first).
type builder struct {
	cat      Catalog
	opts     plan.Options
	vertices []*plan.Vertex
	// stateTTLUnused: no regular join used the state_ttl option.
	stateTTLUnused bool
	// depth guards against views that read each other in a cycle.
	depth int
	// ctes are the WITH queries in scope, innermost first; inCTE names
	// the ones being planned (for the message of one that reads itself).
	ctes  *cteScope
	inCTE []string
}

// cteScope is one WITH query in scope: it sees the ones after it in the
// list (defined before it), not itself.
type cteScope struct {
	name string
	sel  *parser.Select
	next *cteScope
}

// cteQuery plans sel, WITH query c's (or a rewrite of it), where it is
// read: as a subquery (each read is its own copy) seeing the WITH queries
// before c, not c itself.
func (b *builder) cteQuery(c *cteScope, sel *parser.Select, alias string) (*stream, error) {
	saved := b.ctes
	b.ctes = c.next
	b.inCTE = append(b.inCTE, c.name)
	defer func() { b.ctes, b.inCTE = saved, b.inCTE[:len(b.inCTE)-1] }()
	return b.subquery(sel, alias, false)
}

// cte is the WITH query name names in scope, or nil.
func (b *builder) cte(name string) *cteScope {
	for c := b.ctes; c != nil; c = c.next {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (b *builder) vertex(par int, inputs []plan.Edge, ops ...plan.Op) *plan.Vertex {
	v := &plan.Vertex{ID: len(b.vertices), Parallelism: par, Inputs: inputs, Ops: ops}
	b.vertices = append(b.vertices, v)
	return v
}

// stream is a partly planned insert-only stream: the vertex whose chain
// produces it (more operators may be appended to it), its columns, and
// which of them are event-time columns (windows and join bounds may use
// them; the watermark tracks them).
type stream struct {
	cur       *plan.Vertex
	scope     *scope
	eventTime []bool
	lateness  int64          // allowed lateness for windows over the stream
	sources   []*plan.Source // every source feeding it
	table     *plan.TableDef // the table, when the stream is one table
	// winStart, winEnd: the columns holding an upstream window's
	// window_start and window_end (-1: none), for cascading windows.
	winStart, winEnd int
	// upsert: a PRIMARY KEY table's rows (upserts and deletes): it can
	// only be the table side of a join.
	upsert bool
	// changes: the stream updates (a running aggregate's results, and
	// filters and projections of them); nil: append-only.
	changes *changelog
	// rekey: its rows' keys (RowMeta.Key) are not partitioned by its
	// stage's tasks (a join of updating inputs keys its rows on the pair):
	// a keyed sink takes them through a ByKey exchange.
	rekey bool
	// multi: a key's row may change more than once in an epoch (a
	// PRIMARY KEY table's changes, a union's, a join's come as they
	// happen; an aggregation emits once per key): a keyed sink nets each
	// epoch's changes per key.
	multi bool
}

// changelog is what an updating stream is keyed on: its rows carry the
// producing aggregation's upsert key in RowMeta.Key, whose values are in
// columns keyOut (-1: a value the stream does not carry).
type changelog struct {
	key      plan.KeyKind
	keyOut   []int
	keyNames []string
}

// kind is the stream kind of an updating stream: upsert on its key
// columns when it carries them all, else retract.
func (c *changelog) kind() (plan.StreamKind, []int) {
	if slices.Contains(c.keyOut, -1) {
		return plan.Retract, nil
	}
	return plan.Upsert, c.keyOut
}

// appendOnly reports whether the stream only inserts rows.
func (s *stream) appendOnly() bool { return s.changes == nil && !s.upsert }

// hashEdge is the edge that takes s's rows to a new vertex, hashed on
// keyCols, with the kind of s's rows: a PRIMARY KEY table's are upserts
// on its key (a retract stream if a key column is not among its
// columns), everything else is append-only.
func (s *stream) hashEdge(keyCols []int) plan.Edge {
	e := plan.Edge{From: s.cur.ID, Partition: plan.Hash, KeyCols: keyCols}
	if s.changes != nil {
		e.Kind, e.UpsertKey = s.changes.kind()
		return e
	}
	if !s.upsert {
		return e
	}
	for _, k := range s.table.PrimaryKey {
		i := s.scope.cols.Index(k)
		if i < 0 {
			e.Kind, e.UpsertKey = plan.Retract, nil
			return e
		}
		e.UpsertKey = append(e.UpsertKey, i)
	}
	e.Kind = plan.Upsert
	return e
}

// normalize reads a PRIMARY KEY table as a changelog: a stage hashed on
// the key keeps each key's latest row (plan.Normalize), so the table's
// upserts and deletes carry the rows they take back. The stream is keyed
// on the PRIMARY KEY.
func (b *builder) normalize(s *stream) *stream {
	key := make([]int, len(s.table.PrimaryKey))
	for i, k := range s.table.PrimaryKey {
		key[i] = s.scope.cols.Index(k)
	}
	par := max(b.opts.Parallelism, 1)
	v := b.vertex(par, []plan.Edge{s.hashEdge(key)}, &plan.Normalize{Table: s.table.Name, Key: key, Out: s.scope.cols})
	n := *s
	n.cur, n.upsert, n.multi = v, false, true
	n.changes = &changelog{key: plan.KeyGroup, keyOut: key, keyNames: append([]string(nil), s.table.PrimaryKey...)}
	return &n
}

// project is the stream after a projection: which output columns are plain
// copies of event-time or window columns keeps that property.
func (s *stream) project(out plan.Schema, exprs []plan.Expr) *stream {
	p := &stream{cur: s.cur, scope: newScope("", out), eventTime: make([]bool, len(out)), lateness: s.lateness,
		sources: s.sources, winStart: -1, winEnd: -1, rekey: s.rekey, multi: s.multi}
	if c := s.changes; c != nil {
		p.changes = &changelog{key: c.key, keyOut: make([]int, len(c.keyOut)), keyNames: c.keyNames}
		for k, col := range c.keyOut {
			p.changes.keyOut[k] = -1
			for i, e := range exprs {
				if x, ok := e.(*plan.ColRef); ok && col >= 0 && x.Index == col {
					p.changes.keyOut[k] = i
					break
				}
			}
		}
	}
	for i, e := range exprs {
		c, ok := e.(*plan.ColRef)
		if !ok {
			continue
		}
		p.eventTime[i] = s.eventTime[c.Index]
		if c.Index == s.winStart {
			p.winStart = i
		}
		if c.Index == s.winEnd {
			p.winEnd = i
		}
	}
	return p
}

// aggregated is the stream of an aggregation's output rows, produced by
// vertex av. Over a window, its window_end is an event-time column: a
// window's row is emitted once, when the watermark passes its end plus the
// allowed lateness, and the aggregation forwards the watermark held back
// by that lateness, so the row is never behind what it forwarded. (Its
// window_start is not: it lags the watermark by the window size.)
//
// An aggregation that emits changes (a running aggregate, read by another
// query) makes an updating stream, keyed on its upsert key (changes).
func (s *stream) aggregated(av *plan.Vertex, out plan.Schema, output []plan.Expr, windowed bool, changes *changelog) *stream {
	p := &stream{cur: av, scope: newScope("", out), eventTime: make([]bool, len(out)), lateness: s.lateness,
		sources: s.sources, winStart: -1, winEnd: -1, changes: changes}
	if !windowed {
		return p
	}
	for i, e := range output {
		if c, ok := e.(*plan.ColRef); ok && c.Index < 2 {
			if c.Index == 0 {
				p.winStart = i
			} else {
				p.winEnd = i
				p.eventTime[i] = true
			}
		}
	}
	return p
}

// as renames the stream's qualifier (a subquery's or view's alias).
func (s *stream) as(alias string) *stream {
	c := *s
	c.scope = newScope(alias, s.scope.cols)
	return &c
}

// fromWhere plans FROM; an inner join also takes the WHERE conditions that
// are keys or time bounds between its sides. It returns the rest of where.
func (b *builder) fromWhere(ref *parser.TableRef, where []parser.Expr) (*stream, []parser.Expr, error) {
	if ref.Join != nil && ref.Join.Kind == parser.JoinInner {
		return b.join(ref.Join, where)
	}
	s, err := b.from(ref)
	return s, where, err
}

// subquery plans (SELECT ...) AS alias, or a view read by another query:
// a windowed aggregation in it emits each window once, when it closes (its
// rows are insert-only); a running aggregate emits changes (an updating
// stream).
func (b *builder) subquery(sel *parser.Select, alias string, view bool) (*stream, error) {
	if b.depth > 16 {
		return nil, errf(alias, "views nest more than 16 deep (do two views read each other?)")
	}
	saved := b.opts
	defer func() { b.opts = saved; b.depth-- }()
	b.depth++
	var hints []parser.SetVar
	for _, h := range sel.Hints {
		switch {
		case h.Name == "parallelism":
			hints = append(hints, h)
		case view:
			// A view's own options (its emit mode, checkpoints, retention)
			// are its query's; read by another query, it emits on close.
		case !(h.Name == "emit_mode" && strings.EqualFold(h.Value, "on_window_close")):
			return nil, errf(h.Name, "SET_VAR(%s) inside a subquery: a subquery feeding another operator takes only parallelism (its windows emit on close)", h.Name)
		}
	}
	if err := ApplyOptions(&b.opts, hints, "SET_VAR"); err != nil {
		return nil, err
	}
	b.opts.EmitMode = plan.EmitOnWindowClose
	b.opts.ResultsRetention = 0
	p, err := b.query(sel, true)
	if err != nil {
		return nil, err
	}
	return p.s.as(alias), nil
}

// from plans a FROM clause.
func (b *builder) from(ref *parser.TableRef) (*stream, error) {
	switch {
	case ref.Join != nil:
		s, _, err := b.join(ref.Join, nil)
		return s, err
	case ref.Subquery != nil:
		return b.subquery(ref.Subquery, ref.Alias, false)
	}
	if ref.AsOf != nil {
		return nil, errf("AS", "AS OF TIMESTAMP belongs on the table side of a join: FROM stream JOIN t AS OF TIMESTAMP stream.ts ON ...")
	}
	if c := b.cte(ref.Name); c != nil {
		return b.cteQuery(c, c.sel, ref.Qualifier())
	}
	tbl, ok := b.cat.Table(ref.Name)
	if !ok {
		if sel, isView := b.cat.ViewSelect(ref.Name); isView {
			// A view read by a query is planned into it, as a subquery:
			// it reads the view's final (windowed) rows. It sees none of
			// the reader's WITH queries.
			saved := b.ctes
			b.ctes = nil
			s, err := b.subquery(sel, ref.Qualifier(), true)
			b.ctes = saved
			if err != nil {
				if pe, ok := err.(*Error); ok {
					pe.Msg = "view " + ref.Name + ": " + pe.Msg
				}
				return nil, err
			}
			return s, nil
		}
		if slices.Contains(b.inCTE, ref.Name) {
			return nil, errf(ref.Name, "WITH %s reads %s: a WITH query reads the ones defined before it, not itself or later ones (WITH RECURSIVE is not supported)", ref.Name, ref.Name)
		}
		return nil, &Error{Status: 404, Name: ref.Name, Msg: fmt.Sprintf("unknown table %s", ref.Name)}
	}
	if tbl.IsSink() {
		return nil, errf(ref.Name, "%s is a sink table (ENGINE=%s): INSERT INTO %s SELECT ... writes it, queries cannot read it", tbl.Name, tbl.Engine, tbl.Name)
	}
	src := &plan.Source{
		Table: tbl.Name, TableID: tbl.ID, Engine: tbl.Engine, Schema: tbl.Columns,
		EventTime: tbl.EventTime, WatermarkDelay: tbl.WatermarkDelay, AllowedLateness: tbl.AllowedLateness,
		IdleTimeout: tbl.IdleTimeout, StartLatest: tbl.StartLatest, Attrs: tbl.Attrs, Connection: tbl.Connection, Upsert: len(tbl.PrimaryKey) > 0,
		Key: tbl.PrimaryKey,
	}
	s := &stream{upsert: src.Upsert, cur: b.vertex(1, nil, src), scope: newScope(ref.Qualifier(), tbl.Columns),
		eventTime: make([]bool, len(tbl.Columns)), lateness: tbl.AllowedLateness, sources: []*plan.Source{src}, table: tbl,
		winStart: -1, winEnd: -1}
	if tbl.EventTime >= 0 {
		s.eventTime[tbl.EventTime] = true
	}
	return s, nil
}

// schemaOf is the output schema of a vertex's chain so far.
func schemaOf(v *plan.Vertex) plan.Schema {
	switch op := v.Ops[len(v.Ops)-1].(type) {
	case *plan.Source:
		return op.Schema
	case *plan.Calc:
		return op.Out
	case *plan.IntervalJoin:
		return op.Out
	case *plan.TemporalJoin:
		return op.Out
	case *plan.Normalize:
		return op.Out
	case *plan.Union:
		return op.Out
	case *plan.Aggregate:
		return op.Out
	case *plan.TopN:
		return op.Out
	case *plan.Over:
		return op.Out
	}
	panic(fmt.Sprintf("planner: no schema for %s", v.Ops[len(v.Ops)-1].OpName()))
}
