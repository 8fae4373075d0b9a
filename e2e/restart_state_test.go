package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"syscall"
	"testing"
)

// terminate sends SIGTERM (a graceful stop: every query takes a final
// checkpoint) and waits until the process has exited.
func (s *server) terminate(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("e2e: terminate: server not running")
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && err != os.ErrProcessDone {
		t.Fatalf("SIGTERM: %v", err)
	}
	if ps := s.waitExit(t, startTimeout); !ps.Success() {
		t.Fatalf("after SIGTERM the server exited with %v", ps)
	}
}

// lateRow is an entry of recent_late_rows.
type lateRow struct {
	Offset    int64  `json:"offset"`
	EventTime string `json:"event_time"`
}

// shownState is what GET /v1/queries/{name} shows of a query's progress.
type shownState struct {
	Watermark *string   `json:"watermark"`
	Counters  counters  `json:"counters"`
	Recent    []lateRow `json:"recent_late_rows"`
}

func (s shownState) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (s *server) shownState(t testing.TB, name string) shownState {
	t.Helper()
	path := "/v1/queries/" + name
	r := s.do(t, http.MethodGet, path, "", nil)
	expectOK(t, "GET "+path, r)
	var st shownState
	decodeJSON(t, "GET "+path, r.body, &st)
	return st
}

// checkpointQuery checkpoints one query and waits for it; its barrier
// follows whatever the sources sent before it, so afterwards the query's
// status includes it.
func (s *server) checkpointQuery(t testing.TB, name string) {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1/checkpoints?query="+name, "", nil)
	expectOK(t, "POST /v1/checkpoints?query="+name, r)
}

// TestStateAfterRestart: a view over an HTTP table shows, after a
// graceful restart (SIGTERM) and after a SIGKILL, the watermark it had
// and the recent late rows of the late_rows it counts, before any new
// row arrives (they were null and empty: issue 16).
func TestStateAfterRestart(t *testing.T) {
	s := startServer(t)
	s.sql(t, `CREATE TABLE ev (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http
		ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "2s"}';
		CREATE VIEW per10s AS SELECT window_start, window_end, COUNT(*) AS n FROM ev GROUP BY TUMBLE(ts, '10s')`)
	at := func(sec int) string { return fmt.Sprintf("2024-01-01T00:%02d:%02d.000Z", sec/60, sec%60) }
	// Offsets 0-2 on time; 3 and 4 belong to [0 s, 10 s), closed once the
	// watermark passed 10 s: late.
	s.postRows(t, "ev", []Row{{"k": 0, "ts": at(1)}, {"k": 1, "ts": at(12)}, {"k": 2, "ts": at(40)}, {"k": 3, "ts": at(3)}, {"k": 4, "ts": at(5)}})
	s.checkpointQuery(t, "per10s")
	wm := at(38)
	want := shownState{Watermark: &wm, Counters: counters{RowsIn: 5, LateRows: 2}, Recent: []lateRow{{3, at(3)}, {4, at(5)}}}
	same := func(got, want shownState) bool {
		got.Counters.RowsOut = want.Counters.RowsOut // how often a window was updated is not the point
		return reflect.DeepEqual(got, want)
	}
	if got := s.shownState(t, "per10s"); !same(got, want) {
		t.Fatalf("before the restart: %v, want %v", got, want)
	}

	// restarted starts the server again after stop, and checks the state
	// shown once the query is running and has checkpointed.
	restarted := func(stop func(testing.TB), after string) {
		stop(t)
		s.start(t)
		s.waitRunning(t, "per10s")
		s.checkpointQuery(t, "per10s")
		if got := s.shownState(t, "per10s"); !same(got, want) {
			t.Errorf("after %s: %v, want %v", after, got, want)
		}
	}
	restarted(s.terminate, "SIGTERM and a restart")

	// One more late row, then a SIGKILL: the restart resumes from the last
	// checkpoint, whether or not it counted the row, and replays the rest.
	s.postRows(t, "ev", []Row{{"k": 5, "ts": at(7)}, {"k": 6, "ts": at(50)}})
	wm = at(48)
	want.Counters = counters{RowsIn: 7, LateRows: 3}
	want.Recent = append(want.Recent, lateRow{5, at(7)})
	restarted(s.kill, "SIGKILL and a restart")
	// A restart right after a checkpoint that counted everything replays
	// nothing: the state shown is the checkpoint's alone.
	restarted(s.kill, "a second SIGKILL")
}
