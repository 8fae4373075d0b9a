package file

import (
	"errors"

	"github.com/streamsql/streamsql/runtime/sink"
)

// parquet is not written yet (the planner refuses the format).
func (e *encoder) parquet(changes []sink.Change, rows []int, maxBytes int) ([]byte, int, error) {
	return nil, 0, errors.New("format parquet is not supported")
}
