package file

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/streamsql/streamsql/planner/plan"
)

// decodeParquet reads a Parquet file with parquet-go's reader into rows
// shaped as encoding/json decodes the NDJSON of the same rows.
func decodeParquet(t *testing.T, name string, b []byte) []map[string]any {
	t.Helper()
	r := parquet.NewReader(bytes.NewReader(b))
	defer r.Close()
	cols := r.Schema().Columns()
	var out []map[string]any
	buf := make([]parquet.Row, 16)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := map[string]any{}
			for _, v := range row {
				c := cols[v.Column()][0]
				typ := testCols[testCols.Index(c)].Type
				switch {
				case v.IsNull():
					m[c] = nil
				case typ == plan.TypeBigint:
					m[c] = float64(v.Int64())
				case typ == plan.TypeTimestamp:
					m[c] = plan.FormatTime(v.Int64())
				case typ == plan.TypeDouble:
					m[c] = v.Double()
				case typ == plan.TypeVarchar:
					m[c] = string(v.ByteArray())
				case typ == plan.TypeBoolean:
					m[c] = v.Boolean()
				}
			}
			out = append(out, m)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// TestParquetTypes: every type, NULL apart from the empty string, and a NaN, read back by
// parquet-go's reader.
func TestParquetTypes(t *testing.T) {
	var e encoder
	e.cols = testCols
	rows := epochRows(1, 3)
	rows[1].Row[2] = plan.Float(math.NaN())
	rows[2].Row[3] = plan.Null
	rows[2].Row[1] = plan.Null
	b, n, err := e.parquet(rows, []int{0, 1, 2}, 1<<20)
	if err != nil || n != 3 {
		t.Fatalf("parquet: %d rows, %v", n, err)
	}
	got := decodeParquet(t, "f", b)
	if len(got) != 3 {
		t.Fatalf("%d rows read back", len(got))
	}
	if f, _ := got[1]["price"].(float64); !math.IsNaN(f) {
		t.Errorf("NaN read back as %v", got[1]["price"])
	}
	if got[2]["ts"] != nil || got[0]["ts"] != plan.FormatTime(rows[0].Row[3].I) || got[0]["name"] != "" || got[2]["name"] != nil || got[1]["name"] != rows[1].Row[1].S {
		t.Errorf("rows read back: %v", got)
	}
}
