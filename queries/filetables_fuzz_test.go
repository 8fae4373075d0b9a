package queries

import (
	"bytes"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

var fuzzSideDef = &plan.TableDef{Name: "s", Columns: plan.Schema{{Name: "k", Type: plan.TypeBigint}, {Name: "v", Type: plan.TypeVarchar},
	{Name: "d", Type: plan.TypeDouble}, {Name: "t", Type: plan.TypeTimestamp}, {Name: "b", Type: plan.TypeBoolean}},
	PrimaryKey: []string{"k"}, EventTime: 3, Attrs: map[string]string{"format": "csv"}}

// FuzzParseSideFile: any file content parses or fails with an error, and
// a version that parses round-trips through the catalog's encoding.
func FuzzParseSideFile(f *testing.F) {
	f.Add(true, []byte("k,v,d\n1,a,0.5\n2,\"b,c\",NaN\n"))
	f.Add(false, []byte("{\"k\": 1, \"v\": \"a\", \"b\": true}\n{\"k\": 2}\n"))
	f.Add(true, []byte("t,k\n2024-01-01T00:00:00Z,1\n"))
	f.Fuzz(func(t *testing.T, csv bool, b []byte) {
		def := *fuzzSideDef
		def.Attrs = map[string]string{"format": "ndjson"}
		if csv {
			def.Attrs["format"] = "csv"
		}
		v, err := parseSideFile(&def, "f", b, 1000)
		if err != nil {
			return
		}
		w, err := decodeVersion(encodeVersion(v))
		if err != nil {
			t.Fatalf("a parsed version does not decode: %v", err)
		}
		if !bytes.Equal(encodeVersion(w), encodeVersion(v)) || len(changes(&def, v, w)) != 0 {
			t.Fatalf("a version does not round-trip")
		}
	})
}

// FuzzDecodeVersion: any catalog bytes decode or fail, never panic.
func FuzzDecodeVersion(f *testing.F) {
	v, _ := parseSideFile(fuzzSideDef, "f", []byte("k,v\n1,a\n2,b\n"), 5)
	f.Add(encodeVersion(v))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := decodeVersion(b); err == nil {
			changes(fuzzSideDef, v, v)
		}
	})
}
