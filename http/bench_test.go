package httpapi

import (
	"context"
	"testing"
)

// TestIngestBench runs a small ingest benchmark end to end: every row is
// acknowledged and in the log (IngestBench checks the end offset).
func TestIngestBench(t *testing.T) {
	res, err := IngestBench(context.Background(), IngestBenchConfig{Clients: 3, Rows: 1050, Batch: 100, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 1050 || res.Requests != 11 || res.BodyBytes <= 0 || res.RowsPerCPUSec <= 0 || res.LatencyP99Ms < res.LatencyP50Ms {
		t.Fatalf("result %+v", res)
	}
}
