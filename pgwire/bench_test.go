package pgwire

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	httpapi "github.com/streamsql/streamsql/http"
)

// BenchmarkPull: pull queries of a 100-row and a 10,000-row result of one
// view (BIGINT, DOUBLE, VARCHAR, BOOLEAN, TIMESTAMP), over pgx (the
// extended protocol, binary results, every row scanned) and, for
// comparison in the same run, over HTTP (POST /v1/sql on the same engine,
// the JSON answer decoded), each on one keep-alive connection.
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
	hs := httptest.NewServer(httpapi.New(e.eng, httpapi.Options{}))
	defer hs.Close()
	for _, n := range []int{100, 10_000} {
		q := fmt.Sprintf("SELECT id, d, s, b, ts FROM v LIMIT %d", n)
		b.Run(fmt.Sprintf("pgx/rows=%d", n), func(b *testing.B) {
			ctx := ctxT(b) // each run has its own 30 s
			var (
				id int64
				d  float64
				s  string
				bo bool
				ts any
			)
			for b.Loop() {
				rows, err := c.Query(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for rows.Next() {
					if err := rows.Scan(&id, &d, &s, &bo, &ts); err != nil {
						b.Fatal(err)
					}
					got++
				}
				if err := rows.Err(); err != nil || got != n {
					b.Fatalf("%d rows, %v", got, err)
				}
			}
		})
		b.Run(fmt.Sprintf("http/rows=%d", n), func(b *testing.B) {
			for b.Loop() {
				resp, err := hs.Client().Post(hs.URL+"/v1/sql", "application/sql", strings.NewReader(q))
				if err != nil {
					b.Fatal(err)
				}
				var out struct {
					Results []struct {
						Rows []map[string]any `json:"rows"`
					} `json:"results"`
				}
				err = json.NewDecoder(resp.Body).Decode(&out)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || len(out.Results) != 1 || len(out.Results[0].Rows) != n {
					b.Fatalf("status %d, %v", resp.StatusCode, err)
				}
			}
		})
	}
}
