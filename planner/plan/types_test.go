package plan

import (
	"encoding/json"
	"math"
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
		{Float(math.NaN()), `null`},
		{Float(math.Inf(1)), `null`},
		{Float(math.Inf(-1)), `null`},
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
