package planner

import (
	"slices"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// RowIDColumn is the sink column that holds an append-only query's row id.
const RowIDColumn = "_row_id"

// Insert plans INSERT INTO t SELECT ...: a continuous query, named after t,
// whose changes go to sink table t. The query's columns fill t's by
// position (an append-only query's row id fills _row_id), and t's PRIMARY
// KEY must be the query's upsert key.
func Insert(sel *parser.Select, t *plan.TableDef, cat Catalog, opts plan.Options) (*plan.Graph, error) {
	if !t.IsSink() {
		if t.Engine == "kafka" {
			return nil, errf(t.Name, "INSERT INTO %s: Kafka table %s is a source; a Kafka sink table names its delivery in ENGINE_ATTRIBUTE (\"delivery\": \"exactly_once\", \"at_least_once\" or \"at_most_once\")", t.Name, t.Name)
		}
		if t.Engine == "file" {
			return nil, errf(t.Name, "INSERT INTO %s: file table %s has a PRIMARY KEY, so it is a side input read from its file; a file sink table has no PRIMARY KEY", t.Name, t.Name)
		}
		return nil, errf(t.Name, "INSERT INTO %s: %s is an ENGINE=%s table; INSERT ... SELECT writes sink tables (ENGINE=postgres, kafka with a delivery, or file without a PRIMARY KEY); post rows to ENGINE=http tables", t.Name, t.Name, t.Engine)
	}
	g, err := Query(sel, cat, opts, t.Name, plan.SinkExternal)
	if err != nil {
		return nil, err
	}
	if g.Options.Delivery != "" {
		// The option chooses the built-in results' guarantee; a sink
		// table's is its own.
		how := "in its ENGINE_ATTRIBUTE (\"delivery\": \"exactly_once\", \"at_least_once\" or \"at_most_once\")"
		if t.Engine == "file" {
			how = "in its ENGINE_ATTRIBUTE (\"delivery\": \"exactly_once\" or \"at_most_once\")"
		}
		return nil, errf("delivery", "INSERT INTO %s: the delivery option (%s) chooses the guarantee of a view's built-in results; sink table %s chooses its delivery %s: remove the option (SET_VAR or SET)", t.Name, g.Options.Delivery, t.Name, how)
	}
	if t.Engine == "file" {
		if err := checkFileInsert(g, t); err != nil {
			return nil, err
		}
	}
	ext := &plan.ExternalSink{Table: t.Name, Engine: t.Engine, Connection: t.Connection, Attrs: t.Attrs,
		Columns: t.Columns, RowID: t.Columns.Index(RowIDColumn), ExactlyOnce: t.Attrs["delivery"] != "at_least_once" && t.Attrs["delivery"] != "at_most_once",
		AtMostOnce: t.Attrs["delivery"] == "at_most_once"}
	for _, k := range t.PrimaryKey {
		ext.PrimaryKey = append(ext.PrimaryKey, t.Columns.Index(k))
	}
	if ext.ExactlyOnce && g.Options.CheckpointInterval <= 0 {
		return nil, errf(t.Name, "INSERT INTO %s: exactly_once delivery commits at checkpoints, and checkpoints are off for this query; set checkpoint_interval, or use \"delivery\": \"at_least_once\" or \"at_most_once\"", t.Name)
	}
	// target maps the query's output columns to the table's.
	var target []int
	for i := range t.Columns {
		if i != ext.RowID {
			target = append(target, i)
		}
	}
	if len(g.Out) != len(target) {
		extra := ""
		if ext.RowID >= 0 {
			extra = " besides " + RowIDColumn
		}
		return nil, errf(t.Name, "INSERT INTO %s: the query has %d columns (%s), the table %d%s; columns map by position",
			t.Name, len(g.Out), names(g.Out, nil), len(target), extra)
	}
	ext.ToDouble = make([]bool, len(g.Out))
	for i, c := range g.Out {
		tc := t.Columns[target[i]]
		switch {
		case c.Type == tc.Type || c.Type == plan.TypeNull:
		case c.Type == plan.TypeBigint && tc.Type == plan.TypeDouble:
			ext.ToDouble[i] = true
		default:
			return nil, errf(tc.Name, "INSERT INTO %s: column %s is %s, but the query's column %d (%s) is %s", t.Name, tc.Name, tc.Type, i+1, c.Name, c.Type)
		}
	}
	pk := names(t.Columns, ext.PrimaryKey)
	switch {
	case t.Engine == "file":
		ext.AppendOnly = true // checkFileInsert: the query is append-only
		if ext.Partition, ext.PartitionNames, err = FilePartitions(t); err != nil {
			return nil, err
		}
	case g.Key == plan.KeyRowID:
		if ext.RowID < 0 || len(ext.PrimaryKey) != 1 || ext.PrimaryKey[0] != ext.RowID || t.Columns[ext.RowID].Type != plan.TypeVarchar {
			return nil, errf(t.Name, "INSERT INTO %s: the query has no aggregation, so each row is keyed on its row id: give %s a column %s VARCHAR(255) and PRIMARY KEY (%s), not PRIMARY KEY (%s)",
				t.Name, t.Name, RowIDColumn, RowIDColumn, pk)
		}
	default:
		if ext.RowID >= 0 {
			return nil, errf(RowIDColumn, "INSERT INTO %s: %s holds the row id of queries without aggregation; this query is keyed on its upsert key (%s)", t.Name, RowIDColumn, keyNames(g))
		}
		var keyCols []int // the table columns the upsert key lands in
		for k, o := range g.KeyOut {
			if o < 0 {
				return nil, errf(t.Name, "INSERT INTO %s: the query's upsert key (%s) must be among its columns, and %s is not selected", t.Name, keyNames(g), keyName(g, k))
			}
			keyCols = append(keyCols, target[o])
		}
		if !sameSet(keyCols, ext.PrimaryKey) {
			return nil, errf(t.Name, "INSERT INTO %s: PRIMARY KEY (%s) does not match the query's upsert key (%s), which goes into columns (%s)",
				t.Name, pk, keyNames(g), names(t.Columns, keyCols))
		}
		for _, p := range ext.PrimaryKey {
			ext.KeyValues = append(ext.KeyValues, slices.Index(keyCols, p))
		}
	}
	sinkOp := g.Vertices[len(g.Vertices)-1].Ops
	sinkOp[len(sinkOp)-1].(*plan.Sink).External = ext
	return g, nil
}

// keyNames names the query's upsert key by the output columns holding it.
func keyNames(g *plan.Graph) string {
	ns := make([]string, len(g.KeyOut))
	for k := range g.KeyOut {
		ns[k] = keyName(g, k)
	}
	return strings.Join(ns, ", ")
}

// keyName names value k of the query's upsert key: the output column
// holding it, else the GROUP BY expression.
func keyName(g *plan.Graph, k int) string {
	if g.KeyOut[k] >= 0 {
		return g.Out[g.KeyOut[k]].Name
	}
	return g.KeyNames[k]
}

// names lists the columns at idx (every column when idx is nil).
func names(s plan.Schema, idx []int) string {
	var ns []string
	if idx == nil {
		for _, c := range s {
			ns = append(ns, c.Name)
		}
	}
	for _, i := range idx {
		ns = append(ns, s[i].Name)
	}
	return strings.Join(ns, ", ")
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
