package parser

import "testing"

// FuzzParse checks that no input makes Parse panic, and that a failure
// always names a statement index within the request.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT a FROM t",
		"CREATE TABLE t (a BIGINT NOT NULL, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{\"event_time\": \"ts\"}'",
		"CREATE VIEW v AS SELECT /*+ SET_VAR(parallelism=2) */ window_start, COUNT(*) FROM t GROUP BY HOP(ts, '1s', '5s')",
		"SET emit_mode = 'changes'; SELECT * FROM v WHERE a IN (1, 2) ORDER BY a DESC LIMIT 3",
		"SELECT CASE WHEN a > 1 THEN 'x' ELSE NULL END, ts + INTERVAL 1 SECOND FROM t",
		"DROP VIEW IF EXISTS v; SHOW TABLES; DESCRIBE t; EXPLAIN SELECT a FROM t",
		"SELECT * FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND",
		"SELECT b.price, p.name FROM bids b LEFT OUTER JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id JOIN c ON c.id = b.x",
		"SELECT * FROM (SELECT window_start, window_end, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s')) AS w " +
			"JOIN (SELECT window_end, MAX(price) AS m FROM bids GROUP BY TUMBLE(ts, '10s')) AS m ON w.window_end = m.window_end",
		"SELECT * FROM ((a JOIN b ON a.x = b.x)) INNER JOIN (c) ON b.y = c.y; SELECT * FROM a, b",
		"SELECT * FROM a NATURAL JOIN b; SELECT * FROM a FULL OUTER JOIN b USING (x); SELECT * FROM (SELECT x FROM t)",
		"SELECT * FROM a JOIN b FOR SYSTEM_TIME AS OF a.ts ON a.x = b.x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmts, err := Parse(sql)
		if err != nil {
			pe, ok := err.(*Error)
			if !ok {
				t.Fatalf("error of type %T", err)
			}
			if pe.Statement < len(stmts) {
				t.Fatalf("error names statement %d but %d statements parsed before it", pe.Statement, len(stmts))
			}
		}
		for i, s := range stmts {
			if s.Stmt == nil || s.Pos.Index != i {
				t.Fatalf("statement %d: %+v", i, s)
			}
		}
	})
}
