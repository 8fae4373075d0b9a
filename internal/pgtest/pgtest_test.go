package pgtest

import "testing"

func TestServerStartStopRestart(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Exec("CREATE TABLE t (k int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a'), (2, NULL)"); err != nil {
		t.Fatal(err)
	}
	// A committed row survives an immediate shutdown and a restart.
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Query("SELECT 1"); err == nil {
		t.Fatal("query succeeded against a killed server")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Query("SELECT k, v FROM t ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0][0] != "1" || rows[0][1] != "a" || rows[1][0] != "2" || rows[1][1] != "" {
		t.Fatalf("rows after restart = %q", rows)
	}
}
