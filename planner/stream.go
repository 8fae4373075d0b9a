package planner

import (
	"fmt"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// builder lays out a query's physical graph, numbering vertices in the
// order they are created (sources first).
type builder struct {
	cat      Catalog
	opts     plan.Options
	vertices []*plan.Vertex
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
}

// from plans a FROM clause.
func (b *builder) from(ref *parser.TableRef) (*stream, error) {
	switch {
	case ref.Join != nil:
		return b.join(ref.Join)
	case ref.Subquery != nil:
		return nil, errf(ref.Alias, "subqueries in FROM are not available in this release")
	}
	if ref.AsOf != nil {
		return nil, errf("AS", "AS OF TIMESTAMP joins a PRIMARY KEY table; PRIMARY KEY tables are not available in this release")
	}
	tbl, ok := b.cat.Table(ref.Name)
	if !ok {
		if _, isView := b.cat.View(ref.Name); isView {
			return nil, errf(ref.Name, "%s is a view: continuous queries over views are not available in this release; query the table", ref.Name)
		}
		return nil, &Error{Status: 404, Name: ref.Name, Msg: fmt.Sprintf("unknown table %s", ref.Name)}
	}
	src := &plan.Source{
		Table: tbl.Name, TableID: tbl.ID, Engine: tbl.Engine, Schema: tbl.Columns,
		EventTime: tbl.EventTime, WatermarkDelay: tbl.WatermarkDelay, AllowedLateness: tbl.AllowedLateness,
		IdleTimeout: tbl.IdleTimeout, StartLatest: tbl.StartLatest, Attrs: tbl.Attrs,
	}
	s := &stream{cur: b.vertex(1, nil, src), scope: newScope(ref.Qualifier(), tbl.Columns),
		eventTime: make([]bool, len(tbl.Columns)), lateness: tbl.AllowedLateness, sources: []*plan.Source{src}, table: tbl}
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
	case *plan.WindowAssign:
		return op.Out
	case *plan.IntervalJoin:
		return op.Out
	case *plan.Aggregate:
		return op.Out
	}
	panic(fmt.Sprintf("planner: no schema for %s", v.Ops[len(v.Ops)-1].OpName()))
}
