package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// TestFileTables: ENGINE=file tables, sinks and side inputs, and what
// they refuse (with the name the error is about).
func TestFileTables(t *testing.T) {
	const cols = "(auction BIGINT, price BIGINT, ts TIMESTAMP(3), dt VARCHAR(16))"
	const pkCols = "(auction BIGINT, price BIGINT, ts TIMESTAMP(3), dt VARCHAR(16), PRIMARY KEY (auction))"
	for _, c := range []struct {
		sql, name, want string // want "": accepted
		sink            bool
	}{
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/tmp/out", "format": "csv", "partition_by": "dt"}'`, sink: true},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "out/q10"}'`, sink: true},
		{sql: `CREATE TABLE f ` + pkCols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "side.csv", "format": "csv"}'`},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file`, name: "path", want: "needs ENGINE_ATTRIBUTE path"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "../etc"}'`, name: "path", want: "may not contain .."},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "a/../../etc"}'`, name: "path", want: "may not contain .."},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "."}'`, name: "path", want: "files/ directory itself"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "format": "avro"}'`, name: "format", want: "a sink (it has no PRIMARY KEY), must be ndjson, csv or parquet"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "format": "parquet"}'`, sink: true},
		{sql: `CREATE TABLE f ` + pkCols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "format": "parquet"}'`, name: "format", want: "a side input (it has a PRIMARY KEY), must be ndjson or csv"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "partition_by": "day"}'`, name: "partition_by", want: `ENGINE_ATTRIBUTE partition_by of f: unknown column day`},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "partition_by": "dt, DT"}'`, name: "partition_by", want: "names dt twice"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "partition_by": "DATE_FORMAT(ts, ''%Y-%m-%d'') AS day, auction % 10"}'`, sink: true},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "partition_by": "DATE_FORMAT(PROCTIME(), ''%Y'')"}'`, name: "partition_by", want: "PROCTIME() is only allowed as the time argument"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "partition_by": "dt WHERE 1"}'`, name: "partition_by", want: "not a list of expressions"},
		{sql: `CREATE TABLE f ` + pkCols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "partition_by": "dt"}'`, name: "partition_by", want: "is for file sinks"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "delivery": "at_least_once"}'`, name: "delivery", want: `must be exactly_once (the default) or at_most_once, not at_least_once: files are never changed`},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "delivery": "at_most_once"}'`, sink: true},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "delivery": "exactly_once"}'`, sink: true},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "delivery": "twice"}'`, name: "delivery", want: `must be exactly_once, at_least_once or at_most_once, not "twice"`},
		{sql: `CREATE TABLE f ` + pkCols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "delivery": "at_most_once"}'`, name: "delivery", want: "is for file sinks (tables without a PRIMARY KEY); f is a side input"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "event_time": "ts"}'`, name: "event_time", want: `unknown ENGINE_ATTRIBUTE key "event_time"`},
		{sql: `CREATE TABLE f ` + pkCols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "start": "latest"}'`, name: "start", want: "reads a side input from its first version"},
		{sql: `CREATE TABLE f ` + pkCols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "bounded": "yes"}'`, name: "bounded", want: "must be true or false"},
		{sql: `CREATE TABLE f ` + cols + ` ENGINE=file ENGINE_ATTRIBUTE='{"path": "/x", "bounded": true}'`, name: "bounded", want: "is for file side inputs"},
	} {
		def, err := createTable(t, c.sql)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.sql, err)
			} else if def.IsSink() != c.sink {
				t.Errorf("%s: IsSink %v, want %v", c.sql, def.IsSink(), c.sink)
			} else if def.Attrs["format"] == "" {
				t.Errorf("%s: no default format", c.sql)
			}
			continue
		}
		pe, ok := err.(*Error)
		if !ok || pe.Name != c.name || !strings.Contains(pe.Msg, c.want) {
			t.Errorf("%s: error %v (%T), want one about %s containing %q", c.sql, err, err, c.name, c.want)
		}
	}
}

// TestFileInsert: an append-only query goes into a file sink, keyed on
// its row ids; an updating one is refused with the reason.
func TestFileInsert(t *testing.T) {
	bid, err := createTable(t, `CREATE TABLE bid (auction BIGINT, price BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := createTable(t, `CREATE TABLE fout (auction BIGINT, price DOUBLE, dt VARCHAR(16)) ENGINE=file ENGINE_ATTRIBUTE='{"path": "/tmp/o", "partition_by": "dt, auction % 4 AS a4, SUBSTRING(dt, 1, 4)"}'`)
	if err != nil {
		t.Fatal(err)
	}
	cat := testCatalog{"bid": bid, "fout": out}
	insert := func(sql string) (*plan.Graph, error) {
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		return Insert(stmts[0].Stmt.(*parser.Insert).Select, out, cat, testOpts)
	}
	g, err := insert(`INSERT INTO fout SELECT auction, price, DATE_FORMAT(ts, '%Y-%m-%d') FROM bid WHERE price > 10`)
	if err != nil {
		t.Fatal(err)
	}
	ext := sinkExt(g)
	if ext == nil || !ext.AppendOnly || !ext.ExactlyOnce || ext.RowID != -1 || len(ext.PrimaryKey) != 0 || !ext.ToDouble[1] {
		t.Errorf("external sink %+v: want append-only, exactly once, no row id column, no key, price widened", ext)
	}
	if fmt.Sprint(ext.PartitionNames) != "[dt a4 ]" || len(ext.Partition) != 3 || ext.Partition[0].(*plan.ColRef).Index != 2 {
		t.Errorf("partitions %v named %q: want dt (column 2), a4 and an unnamed one", ext.Partition, ext.PartitionNames)
	}
	_, err = insert(`INSERT INTO fout SELECT auction, COUNT(*), 'x' FROM bid GROUP BY auction`)
	if pe, ok := err.(*Error); !ok || pe.Name != "fout" || !strings.Contains(pe.Msg, "file sinks take append-only queries") || !strings.Contains(pe.Msg, "auction") {
		t.Errorf("an updating query: %v, want a refusal naming the upsert key", err)
	}
	amo, err := createTable(t, `CREATE TABLE famo (auction BIGINT, price DOUBLE, dt VARCHAR(16)) ENGINE=file ENGINE_ATTRIBUTE='{"path": "/tmp/a", "delivery": "at_most_once"}'`)
	if err != nil {
		t.Fatal(err)
	}
	cat["famo"] = amo
	stmts, _ := parser.Parse(`INSERT INTO famo SELECT auction, price, 'x' FROM bid`)
	if g, err := Insert(stmts[0].Stmt.(*parser.Insert).Select, amo, cat, testOpts); err != nil {
		t.Errorf("INSERT INTO an at_most_once file sink: %v", err)
	} else if ext := sinkExt(g); ext == nil || ext.ExactlyOnce || !ext.AtMostOnce || ext.Delivery() != "at_most_once" {
		t.Errorf("external sink %+v: want at_most_once", ext)
	}
	side, err := createTable(t, `CREATE TABLE side (auction BIGINT, price BIGINT, dt VARCHAR(16), PRIMARY KEY (auction)) ENGINE=file ENGINE_ATTRIBUTE='{"path": "/tmp/side.csv", "format": "csv"}'`)
	if err != nil {
		t.Fatal(err)
	}
	cat["side"] = side
	stmts, _ = parser.Parse(`INSERT INTO side SELECT auction, price, 'x' FROM bid`)
	if _, err := Insert(stmts[0].Stmt.(*parser.Insert).Select, side, cat, testOpts); err == nil || !strings.Contains(err.Error(), "side input") {
		t.Errorf("INSERT INTO a side input: %v, want a refusal", err)
	}
}

func sinkExt(g *plan.Graph) *plan.ExternalSink {
	for _, v := range g.Vertices {
		for _, op := range v.Ops {
			if s, ok := op.(*plan.Sink); ok {
				return s.External
			}
		}
	}
	return nil
}
