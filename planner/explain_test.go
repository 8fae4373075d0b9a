package planner

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

type testCatalog map[string]*plan.TableDef

func (c testCatalog) Table(n string) (*plan.TableDef, bool) { t, ok := c[n]; return t, ok }

// View is bids_per_10s, the one view of the test catalog.
func (c testCatalog) View(name string) (*plan.ViewDef, bool) {
	sel, ok := c.ViewSelect(name)
	if !ok {
		return nil, false
	}
	g, err := Query(sel, c, plan.Options{Parallelism: 1}, name, plan.SinkResults)
	if err != nil {
		panic(err)
	}
	return &plan.ViewDef{Name: name, Out: g.Out}, true
}

func (c testCatalog) ViewSelect(name string) (*parser.Select, bool) {
	if name != "bids_per_10s" {
		return nil, false
	}
	stmts, err := parser.Parse("SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction")
	if err != nil {
		panic(err)
	}
	return stmts[0].Stmt.(*parser.Select), true
}

func testTables(t testing.TB) testCatalog {
	cat := testCatalog{}
	for _, sql := range []string{
		`CREATE TABLE bids (auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, channel VARCHAR(32), ts TIMESTAMP(3) NOT NULL)
		 ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "5s", "allowed_lateness": "1s"}'`,
		`CREATE TABLE clicks (url VARCHAR(64), n BIGINT) ENGINE=http`,
		`CREATE TABLE persons (id BIGINT, name VARCHAR(64), state VARCHAR(2), ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id))
		 ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`,
		`CREATE TABLE auctions (id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT, name VARCHAR(64), ts TIMESTAMP(3) NOT NULL)
		 ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "5s"}'`,
		`CREATE TABLE pg_counts (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, bids BIGINT, avg_price DOUBLE,
		 PRIMARY KEY (auction, window_start, window_end)) ENGINE=postgres CONNECTION='postgres://u:secret@h/db'`,
		`CREATE TABLE pg_channels (channel VARCHAR(32), volume DOUBLE, PRIMARY KEY (channel))
		 ENGINE=postgres CONNECTION='postgres://u@h/db' ENGINE_ATTRIBUTE='{"delivery": "at_least_once", "table": "channels"}'`,
		`CREATE TABLE pg_pairs (auction BIGINT, _row_id VARCHAR(255), seller BIGINT, PRIMARY KEY (_row_id))
		 ENGINE=postgres CONNECTION='postgres://u@h/db'`,
		`CREATE TABLE fs_bids (auction BIGINT, price BIGINT, ts TIMESTAMP(3), dt VARCHAR(10))
		 ENGINE=file ENGINE_ATTRIBUTE='{"path": "bids", "format": "csv", "partition_by": "dt, DATE_FORMAT(ts, ''%H'') AS h"}'`,
		`CREATE TABLE side (id BIGINT, label VARCHAR(16), vt TIMESTAMP(3), PRIMARY KEY (id))
		 ENGINE=file ENGINE_ATTRIBUTE='{"path": "side.csv", "format": "csv", "event_time": "vt", "bounded": true}'`,
	} {
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		def, err := Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
		if err != nil {
			t.Fatal(err)
		}
		def.ID = uint64(len(cat) + 1)
		cat[def.Name] = def
	}
	return cat
}

// TestExplainGolden plans every testdata/*.sql query and compares EXPLAIN
// (or the planning error) with its .golden file; an EXPLAIN statement
// (explain_*.sql) is rendered by Explain, as the engine renders it.
// Regenerate with -update.
func TestExplainGolden(t *testing.T) {
	cat := testTables(t)
	files, _ := filepath.Glob("testdata/*.sql")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			stmts, err := parser.Parse(string(src))
			if err != nil {
				got.WriteString("parse error: " + err.Error() + "\n")
			}
			for _, st := range stmts {
				opts := plan.Options{Parallelism: 1, CheckpointInterval: 1000, EmitInterval: 200}
				var g *plan.Graph
				var err error
				switch s := st.Stmt.(type) {
				case *parser.Select:
					g, err = Query(s, cat, opts, "q", plan.SinkResults)
				case *parser.Insert:
					g, err = Insert(s.Select, cat[s.Table], cat, opts)
				case *parser.Explain:
					text, err := Explain(s, cat, opts, nil)
					if err != nil {
						got.WriteString("error: " + err.Error() + "\n")
						continue
					}
					got.WriteString(text)
					continue
				default:
					t.Fatalf("%s: not a SELECT or INSERT", f)
				}
				if err != nil {
					got.WriteString("error: " + err.Error() + "\n")
					continue
				}
				got.WriteString(g.Explain())
			}
			golden := strings.TrimSuffix(f, ".sql") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./planner -update)", err)
			}
			if got.String() != string(want) {
				t.Errorf("EXPLAIN changed:\n--- got\n%s--- want\n%s", got.String(), want)
			}
		})
	}
}
