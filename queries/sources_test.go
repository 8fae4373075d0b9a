package queries

import (
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
)

// TestNewReaderUnknownEngine: a source of an engine without a reader gets
// the error the runtime's engine switch gave before the readers were
// injected (runtime wraps it with the query and the source).
func TestNewReaderUnknownEngine(t *testing.T) {
	e := &Engine{}
	r, err := e.newReader(&plan.Source{Table: "t", Engine: "mem"}, runtime.SourcePosition{}, nil)
	if r != nil || err == nil || err.Error() != "no reader for ENGINE=mem" {
		t.Fatalf("newReader: %v, %v", r, err)
	}
}
