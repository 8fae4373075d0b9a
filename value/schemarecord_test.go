package value

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestSchemaRecordDecoder: members that name no column are skipped
// (nested ones too, and "_op" of a table without a PRIMARY KEY), where
// RecordDecoder refuses them; the columns' values are checked as ever.
func TestSchemaRecordDecoder(t *testing.T) {
	src := &plan.Source{Table: "t", Schema: plan.Schema{{Name: "a", Type: plan.TypeBigint, NotNull: true}, {Name: "s", Type: plan.TypeVarchar}}, EventTime: -1}
	lax, err := SchemaRecordDecoder(src)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := RecordDecoder(src)
	if err != nil {
		t.Fatal(err)
	}
	v := []byte(`{"x": {"deep": [1, {"y": null}]}, "a": 1, "_op": "delete", "z": "q", "S": "s"}`)
	row, err := lax(v)
	if err != nil || fmt.Sprint(row) != fmt.Sprint(plan.Row{plan.Int(1), plan.Str("s")}) {
		t.Fatalf("lax: %v %v", row, err)
	}
	if _, err := strict(v); err == nil || !strings.Contains(err.Error(), "column x: unknown column") {
		t.Fatalf("strict: %v", err)
	}
	for _, c := range []struct{ v, want string }{
		{`{"a": "1"}`, "column a: expected BIGINT, got a string"},
		{`{"s": "x", "b": 2}`, "column a: missing value for NOT NULL column"},
		{`{"a": 1, "x": [1,}`, "not a JSON object"},
		{`{"a": 1, "x": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "column x: JSON nested deeper than"},
	} {
		if _, err := lax([]byte(c.v)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.v, err, c.want)
		}
	}
}
