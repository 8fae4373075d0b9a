package e2e

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestAtMostOnceCrash: an append-only query (every bid, keyed by its
// _row_id) into a PostgreSQL table at_most_once, at parallelism 2 and 1,
// checkpointing every 200ms, while the log is posted in chunks with
// Idempotency-Keys and the server is SIGKILLed at random moments
// (STREAMSQL_CRASH_KILLS). A BEFORE trigger in PostgreSQL counts every write of
// every row (an insert, also one ON CONFLICT DO NOTHING drops, or an
// update). At the end no row was written twice and
// the table holds no more rows than the oracle; the rows lost are counted
// and logged with the ranges in flight at each kill.
func TestAtMostOnceCrash(t *testing.T) {
	pg := sharedPG(t)
	seed := testSeed(t, 480)
	kills := crashKills(t)
	rows := genBids(seed, max(crashMinRows, kills*crashRowsPerKill))
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, bidsDDL)
	ps := &pgScenario{srv: srv, pg: pg}
	sinks := []pgSink{bidSink("amo", bidInstance("passthrough", variants[1]), atMostOnce), bidSink("amo", bidInstance("passthrough", variants[0]), atMostOnce)}
	ps.create(t, sinks...)
	for _, s := range sinks {
		tbl := qident(s.pgSchema()) + "." + qident(s.pgTable())
		writes := qident(s.pgSchema()) + ".writes"
		if err := pg.Exec(fmt.Sprintf(`CREATE TABLE %s (row_id text NOT NULL);
CREATE FUNCTION %s.count_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO %s VALUES (NEW._row_id); RETURN NEW; END $$;
CREATE TRIGGER count_write BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION %s.count_write();`,
			writes, qident(s.pgSchema()), writes, tbl, qident(s.pgSchema()))); err != nil {
			t.Fatal(err)
		}
	}
	chunks := idemChunks(t, "bids", rows, crashChunkRows, "amocrash")
	rng := rand.New(rand.NewPCG(seed, 0xa70))
	poster := startCrashPoster(t, srv, chunks, kills)
	// inFlight[k] is [the bids offset of the last checkpoint seen
	// completed before kill k, the end of the log after it).
	var inFlight [][2]int64
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(int) {
			from := int64(-1)
			for _, s := range sinks {
				var c int64
				for _, cp := range srv.checkpointHistory(t, s.name) {
					if cp.Status == "completed" {
						c = max(c, cp.Offsets["bids"])
					}
				}
				if from < 0 || c < from {
					from = c
				}
			}
			inFlight = append(inFlight, [2]int64{from, -1})
		},
		afterRestart: func(int) {
			if end, ok := srv.endOffset(t, "bids"); ok {
				inFlight[len(inFlight)-1][1] = end
			}
		},
	})
	poster.wait(t)
	checkEndOffset(t, srv, "bids", len(rows))
	srv.waitRunning(t, sinkNames(sinks)...)
	srv.checkpoint(t)

	for _, s := range sinks {
		t.Run(s.name, func(t *testing.T) {
			res, err := pg.Query(fmt.Sprintf("SELECT row_id, count(*) FROM %s.writes GROUP BY row_id HAVING count(*) > 1 LIMIT 5", qident(s.pgSchema())))
			if err != nil {
				t.Fatal(err)
			}
			if len(res) > 0 {
				t.Errorf("rows written more than once (row id, writes): %v", res)
			}
			res, err = pg.Query(fmt.Sprintf("SELECT count(*) FROM %s.writes", qident(s.pgSchema())))
			if err != nil {
				t.Fatal(err)
			}
			_, got := pgRows(t, pg, s.pgSchema(), s.pgTable())
			if n, _ := strconv.Atoi(res[0][0]); n != len(got) {
				t.Errorf("%d writes counted for %d rows", n, len(got))
			}
			want := s.expected(rows, nil).Rows
			if len(got) > len(want) {
				t.Errorf("%d rows in PostgreSQL, %d in the oracle over the log", len(got), len(want))
			}
			lost := len(want) - len(got)
			q := srv.query(t, s.name)
			t.Logf("%s: %d rows of the oracle's %d, %d lost; in-flight ranges (last checkpoint before a kill, log end after it): %v; sink: %v", s.name, len(got), len(want), lost, inFlight, sinkEntries(q))
		})
	}
	t.Logf("at_most_once crash summary: kills=%d (under load %d, aimed %d) rows=%d chunks=%d resends=%d elapsed posting=%v",
		kills, ks.underLoad, ks.aimed, len(rows), len(chunks), poster.stats.resends, poster.took.Round(time.Millisecond))
}
