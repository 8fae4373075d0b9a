package pgwire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPull: pull queries over pgx (the extended protocol, binary
// results) of a 100-row and a 10,000-row result of one view.
//
//	go test ./pgwire -run '^$' -bench Pull
func BenchmarkPull(b *testing.B) {
	e := start(b, Options{})
	ctx := ctxT(b)
	for _, sql := range []string{
		`CREATE TABLE t (id BIGINT NOT NULL, d DOUBLE, s VARCHAR(64), b BOOLEAN, ts TIMESTAMP(3)) ENGINE=http`,
		`CREATE VIEW v AS SELECT id, d, s, b, ts FROM t`,
	} {
		if _, err := e.eng.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	var body strings.Builder
	body.WriteByte('[')
	for i := range 10_000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"id": %d, "d": %d.5, "s": "row %d", "b": %t, "ts": "2024-01-02T03:04:05.678Z"}`, i, i, i, i%2 == 0)
	}
	body.WriteByte(']')
	if _, err := e.eng.Ingest(ctx, "t", body.String(), ""); err != nil {
		b.Fatal(err)
	}
	if _, err := e.eng.Checkpoint(ctx, "v"); err != nil {
		b.Fatal(err)
	}
	c := e.connect(pgx.QueryExecModeCacheStatement)
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			q := fmt.Sprintf("SELECT id, d, s, b, ts FROM v LIMIT %d", n)
			for b.Loop() {
				rows, err := c.Query(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for rows.Next() {
					got++
				}
				if err := rows.Err(); err != nil || got != n {
					b.Fatalf("%d rows, %v", got, err)
				}
			}
		})
	}
}
