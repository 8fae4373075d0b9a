package funcs

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestDateFormatCache: DATE_FORMAT with a constant format keeps its last
// result for the unit of time it holds for; over times that move both
// ways across day, hour, minute and second boundaries (before 1970
// too), it gives what formatting each time afresh gives.
func TestDateFormatCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	ts := func(r plan.Row) plan.Value { return r[0] }
	for _, format := range []string{"%Y-%m-%d", "%H:%i", "%Y%m%d %H", "%T", "%s.%f", "%W %j %p", "plain"} {
		f := func(plan.Row) plan.Value { return plan.Str(format) }
		cached := compileDateFormat(&plan.Call{Args: []plan.Expr{&plan.ColRef{}, &plan.Const{V: plan.Str(format)}}}, []Eval{ts, f}, &Env{})
		at := int64(-86_400_000 * 3)
		for range 5000 {
			at += rng.Int64N(7_200_000) - 3_000_000
			row := plan.Row{plan.Time(at)}
			want := string(appendDateFormat(nil, time.UnixMilli(at).UTC(), format))
			if got := cached(row); got.S != want {
				t.Fatalf("%q at %d: %q, want %q", format, at, got.S, want)
			}
		}
		if got := cached(plan.Row{plan.Null}); !got.IsNull() {
			t.Fatalf("%q of NULL: %v", format, got)
		}
	}
	if got := string(appendDateFormat(nil, time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC), "%Y-%m-%d %H:%i:%s.%f %e %c %k %h %p %j %y")); got != "2026-03-04 05:06:07.008000 4 3 5 05 AM 063 26" {
		t.Fatalf("specifiers: %q", got)
	}
}
