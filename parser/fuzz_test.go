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
