package queries

import (
	"fmt"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
)

// newReader opens the reader of a query's source by its table's ENGINE
// (runtime.Deps.Reader), as newPublisher makes an external sink's
// publisher: the readers are the runtime's, the choice is the server's.
func (e *Engine) newReader(src *plan.Source, at runtime.SourcePosition, used []bool) (runtime.Reader, error) {
	switch src.Engine {
	case "http", "file": // a file side input's versions are logged (filetables.go)
		l, err := e.meta.Log(src.TableID)
		if err != nil {
			return nil, err
		}
		if src.Attrs["bounded"] == "true" {
			return runtime.NewBoundedLogReader(l, src, at), nil
		}
		return runtime.NewLogReader(l, src, at), nil
	case "nexmark":
		return runtime.NewNexmarkReader(src, at, used)
	case "kafka":
		return runtime.OpenKafkaReader(src, at)
	}
	return nil, fmt.Errorf("no reader for ENGINE=%s", src.Engine)
}
