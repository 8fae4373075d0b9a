package file

import (
	"bytes"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// parquetSchema is the Parquet schema of the sink's columns, all
// optional: BIGINT int64, DOUBLE double, VARCHAR string, TIMESTAMP
// int64 timestamp(millis, UTC), BOOLEAN boolean. Parquet orders a group's
// fields by name; leaf[i] is the table column of the schema's column i.
type parquetSchema struct {
	schema *parquet.Schema
	leaf   []int
}

func newParquetSchema(cols plan.Schema) (*parquetSchema, error) {
	g := parquet.Group{}
	for _, c := range cols {
		var n parquet.Node
		switch c.Type {
		case plan.TypeBigint:
			n = parquet.Int(64)
		case plan.TypeDouble:
			n = parquet.Leaf(parquet.DoubleType)
		case plan.TypeVarchar:
			n = parquet.String()
		case plan.TypeTimestamp:
			n = parquet.Timestamp(parquet.Millisecond)
		case plan.TypeBoolean:
			n = parquet.Leaf(parquet.BooleanType)
		default:
			return nil, fmt.Errorf("column %s: type %s has no Parquet type", c.Name, c.Type)
		}
		g[c.Name] = parquet.Optional(n)
	}
	s := &parquetSchema{schema: parquet.NewSchema("row", g)}
	for _, path := range s.schema.Columns() {
		i := cols.Index(path[0])
		if i < 0 || len(path) != 1 {
			return nil, fmt.Errorf("parquet column %v is no column of the table", path)
		}
		s.leaf = append(s.leaf, i)
	}
	return s, nil
}

// parquet writes the rows into one Parquet file (Snappy pages) until
// their values pass maxBytes.
func (e *encoder) parquet(changes []sink.Change, rows []int, maxBytes int) ([]byte, int, error) {
	if e.pq == nil {
		s, err := newParquetSchema(e.cols)
		if err != nil {
			return nil, 0, err
		}
		e.pq = s
		e.pqRow = make([]parquet.Row, 1)
		e.pqRow[0] = make(parquet.Row, len(s.leaf))
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, e.pq.schema, parquet.Compression(&snappy.Codec{}))
	row := e.pqRow[0]
	n, size := 0, 0
	for _, i := range rows {
		r := changes[i].Row
		for col, c := range e.pq.leaf {
			v := r[c]
			var pv parquet.Value
			switch v.K {
			case plan.TypeNull:
				row[col] = parquet.NullValue().Level(0, 0, col)
				continue
			case plan.TypeBigint, plan.TypeTimestamp:
				pv, size = parquet.Int64Value(v.I), size+8
			case plan.TypeDouble:
				pv, size = parquet.DoubleValue(v.F()), size+8
			case plan.TypeVarchar:
				pv, size = parquet.ByteArrayValue([]byte(v.S)), size+len(v.S)+4
			case plan.TypeBoolean:
				pv, size = parquet.BooleanValue(v.I != 0), size+1
			}
			row[col] = pv.Level(0, 1, col)
		}
		if _, err := w.WriteRows(e.pqRow); err != nil {
			return nil, 0, fmt.Errorf("parquet: %w", err)
		}
		n++
		if size >= maxBytes {
			break
		}
	}
	if err := w.Close(); err != nil {
		return nil, 0, fmt.Errorf("parquet: %w", err)
	}
	return buf.Bytes(), n, nil
}
