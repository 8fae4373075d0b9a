package queries

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/pgtest"
	"github.com/streamsql/streamsql/planner/plan"
)

var (
	pgOnce sync.Once
	pgSrv  *pgtest.Server
	pgErr  error
)

// pgServer starts the package's PostgreSQL server on first use (TestMain
// closes it).
func pgServer(t *testing.T) *pgtest.Server {
	t.Helper()
	pgOnce.Do(func() { pgSrv, pgErr = pgtest.Start() })
	if pgErr != nil {
		t.Fatal(pgErr)
	}
	return pgSrv
}

// TestPostgresSinkMatchesView runs the sink query into a real PostgreSQL
// server in both delivery modes, through a restart, and compares the
// table with the view's committed results; the progress table holds each
// epoch once.
func TestPostgresSinkMatchesView(t *testing.T) {
	srv := pgServer(t)
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			schema := "q_" + mode
			if err := srv.Exec("CREATE SCHEMA " + schema); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
			e, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sql := strings.Replace(fmt.Sprintf(sinkSQL, mode), "CONNECTION='postgres://x@127.0.0.1:1/db'", "CONNECTION='"+srv.DSN("")+"'", 1)
			sql = strings.Replace(sql, `ENGINE_ATTRIBUTE='{"delivery"`, `ENGINE_ATTRIBUTE='{"schema": "`+schema+`", "create_table": true, "delivery"`, 1)
			exec(t, e, sql)
			rng := rand.New(rand.NewSource(4))
			check := func() {
				t.Helper()
				if _, err := e.Checkpoint(ctx, ""); err != nil {
					t.Fatal(err)
				}
				rows, err := srv.Query("SELECT (extract(epoch FROM window_start)*1000)::bigint, (extract(epoch FROM window_end)*1000)::bigint, auction, n, volume FROM " + schema + ".pg_out")
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]plan.Row{}
				for _, r := range rows {
					ws, _ := strconv.ParseInt(r[0], 10, 64)
					we, _ := strconv.ParseInt(r[1], 10, 64)
					a, _ := strconv.ParseInt(r[2], 10, 64)
					n, _ := strconv.ParseInt(r[3], 10, 64)
					v, _ := strconv.ParseFloat(r[4], 64)
					row := plan.Row{plan.Time(ws), plan.Time(we), plan.Int(a), plan.Int(n), plan.Float(v)}
					got[fmt.Sprint(row[:3])] = row
				}
				compareWithView(t, e, got)
			}
			for i := 0; i < 4; i++ {
				ingest(t, e, "bids", bidsNDJSON(rng, 300, int64(i)*20000))
				check()
			}
			e.Close(ctx)
			if e, err = Open(cfg); err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			ingest(t, e, "bids", bidsNDJSON(rng, 300, 80000))
			check()
			if mode == "exactly_once" {
				dup, err := srv.Query("SELECT count(*), count(DISTINCT epoch) FROM " + schema + ".streamsql_sink_progress")
				if err != nil {
					t.Fatal(err)
				}
				if dup[0][0] != dup[0][1] || dup[0][0] == "0" {
					t.Fatalf("progress rows %s, distinct epochs %s", dup[0][0], dup[0][1])
				}
			}
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pgSrv != nil {
		pgSrv.Close()
	}
	os.Exit(code)
}
