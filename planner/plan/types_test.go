package plan

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestValueJSON(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want string
	}{
		{Null, `null`},
		{Int(-42), `-42`},
		{Int(math.MaxInt64), `9223372036854775807`},
		{Float(1.5), `1.5`},
		{Float(1e21), `1e+21`},
		// Non-finite DOUBLEs as PostgreSQL's to_json writes them, never
		// null (which is NULL's): issue 15 item 11.
		{Float(math.NaN()), `"NaN"`},
		{Float(math.Float64frombits(0xfff8000000000001)), `"NaN"`},
		{Float(math.Inf(1)), `"Infinity"`},
		{Float(math.Inf(-1)), `"-Infinity"`},
		{Float(math.Copysign(0, -1)), `-0`},
		{Str(`a "b" é`), `"a \"b\" é"`},
		{Time(1704067210000), `"2024-01-01T00:00:10.000Z"`},
		{Time(-1), `"1969-12-31T23:59:59.999Z"`},
		{Bool(true), `true`},
		{Bool(false), `false`},
	} {
		b, err := json.Marshal(c.v.JSON())
		if err != nil {
			t.Fatalf("%v: %v", c.v, err)
		}
		if string(b) != c.want {
			t.Errorf("%v: got %s, want %s", c.v, b, c.want)
		}
	}
}

func TestTimeRange(t *testing.T) {
	if FormatTime(MinTime) != "0001-01-01T00:00:00.000Z" || FormatTime(MaxTime) != "9999-12-31T23:59:59.999Z" {
		t.Fatalf("range %s to %s", FormatTime(MinTime), FormatTime(MaxTime))
	}
	for _, c := range []struct {
		ms int64
		ok bool
	}{
		{0, true}, {MinTime, true}, {MaxTime, true}, {MinTime - 1, false}, {MaxTime + 1, false},
		{math.MaxInt64, false}, {math.MinInt64, false},
	} {
		if TimeInRange(c.ms) != c.ok || (CheckTime(c.ms) == nil) != c.ok {
			t.Errorf("%d: in range %v, CheckTime %v; want %v", c.ms, TimeInRange(c.ms), CheckTime(c.ms), c.ok)
		}
	}
	if err := CheckTime(math.MaxInt64); err == nil || !strings.Contains(err.Error(), TimeRange) {
		t.Errorf("CheckTime(MaxInt64) = %v, want the range named", err)
	}
}
