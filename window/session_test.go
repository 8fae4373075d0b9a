package window

import (
	"slices"
	"testing"
)

func TestInsertSession(t *testing.T) {
	w := func(s, e int64) Window { return Window{s, e} }
	ws := func(v ...Window) []Window { return v }
	tests := []struct {
		name         string
		sessions     []Window
		ts, gap      int64
		wantOut      []Window
		wantMerged   Window
		wantAbsorbed []Window
	}{
		{"first row", nil, 5, 10, ws(w(5, 15)), w(5, 15), nil},
		{"new after", ws(w(0, 10)), 30, 10, ws(w(0, 10), w(30, 40)), w(30, 40), nil},
		{"new before", ws(w(30, 40)), 0, 10, ws(w(0, 10), w(30, 40)), w(0, 10), nil},
		{"new between", ws(w(0, 10), w(100, 110)), 50, 10, ws(w(0, 10), w(50, 60), w(100, 110)), w(50, 60), nil},
		{"ts == s.End does not join", ws(w(0, 10)), 10, 10, ws(w(0, 10), w(10, 20)), w(10, 20), nil},
		{"ts+gap == s.Start does not join", ws(w(20, 30)), 10, 10, ws(w(10, 20), w(20, 30)), w(10, 20), nil},
		{"both touching boundaries", ws(w(0, 10), w(20, 30)), 10, 10, ws(w(0, 10), w(10, 20), w(20, 30)), w(10, 20), nil},
		{"extend right (ts = end-1)", ws(w(0, 10)), 9, 10, ws(w(0, 19)), w(0, 19), ws(w(0, 10))},
		{"extend left (ts+gap = start+1)", ws(w(20, 30)), 11, 10, ws(w(11, 30)), w(11, 30), ws(w(20, 30))},
		{"extend left and right", ws(w(20, 25)), 18, 10, ws(w(18, 28)), w(18, 28), ws(w(20, 25))},
		{"inside, unchanged", ws(w(0, 20)), 5, 10, ws(w(0, 20)), w(0, 20), nil},
		{"at start, unchanged", ws(w(0, 10)), 0, 10, ws(w(0, 10)), w(0, 10), nil},
		{"inside, others kept", ws(w(-50, -40), w(0, 20), w(40, 50)), 10, 10, ws(w(-50, -40), w(0, 20), w(40, 50)), w(0, 20), nil},
		{"bridge two", ws(w(0, 10), w(15, 25)), 8, 10, ws(w(0, 25)), w(0, 25), ws(w(0, 10), w(15, 25))},
		{"bridge two, others kept", ws(w(-30, -20), w(0, 10), w(15, 25), w(40, 50)), 9, 10,
			ws(w(-30, -20), w(0, 25), w(40, 50)), w(0, 25), ws(w(0, 10), w(15, 25))},
		{"bridge exactly: ts = end-1, ts+gap = start+1", ws(w(0, 10), w(18, 28)), 9, 10, ws(w(0, 28)), w(0, 28), ws(w(0, 10), w(18, 28))},
		{"no bridge: ts+gap == next start", ws(w(0, 10), w(19, 29)), 9, 10, ws(w(0, 19), w(19, 29)), w(0, 19), ws(w(0, 10))},
		// One row merges at most two sessions built with the same gap, but the
		// code must chain any number (sessions built with a smaller gap).
		{"chain three", ws(w(0, 2), w(3, 5), w(6, 8), w(20, 22)), 1, 10, ws(w(0, 11), w(20, 22)), w(0, 11), ws(w(0, 2), w(3, 5), w(6, 8))},
		{"negative", ws(w(-30, -20)), -21, 10, ws(w(-30, -11)), w(-30, -11), ws(w(-30, -20))},
		{"negative new", ws(w(-30, -20)), -20, 10, ws(w(-30, -20), w(-20, -10)), w(-20, -10), nil},
		{"gap 1ms", ws(w(5, 6)), 6, 1, ws(w(5, 6), w(6, 7)), w(6, 7), nil},
		{"gap 1ms same ts", ws(w(5, 6)), 5, 1, ws(w(5, 6)), w(5, 6), nil},
		{"max: end saturates", nil, maxI - 3, 10, ws(w(maxI-3, maxI)), w(maxI-3, maxI), nil},
		{"max: row at max", nil, maxI, 10, ws(w(maxI, maxI)), w(maxI, maxI), nil},
		{"max: second row at max joins", ws(w(maxI, maxI)), maxI, 10, ws(w(maxI, maxI)), w(maxI, maxI), nil},
		{"max: saturated session is unbounded", ws(w(maxI-3, maxI)), maxI, 10, ws(w(maxI-3, maxI)), w(maxI-3, maxI), nil},
		{"max: extend left into saturated", ws(w(maxI, maxI)), maxI - 5, 10, ws(w(maxI-5, maxI)), w(maxI-5, maxI), ws(w(maxI, maxI))},
		{"max: before saturated", ws(w(maxI-3, maxI)), maxI - 13, 10, ws(w(maxI-13, maxI-3), w(maxI-3, maxI)), w(maxI-13, maxI-3), nil},
		{"min", nil, minI, 10, ws(w(minI, minI+10)), w(minI, minI+10), nil},
		{"min extend", ws(w(minI, minI+10)), minI + 9, 10, ws(w(minI, minI+19)), w(minI, minI+19), ws(w(minI, minI+10))},
		{"huge gap", ws(w(minI, 0)), 0, maxI, ws(w(minI, 0), w(0, maxI)), w(0, maxI), nil},
		{"huge gap merges all", ws(w(minI, 0), w(0, maxI)), -1, maxI, ws(w(minI, maxI)), w(minI, maxI), ws(w(minI, 0), w(0, maxI))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(tt.sessions)
			out, merged, absorbed := InsertSession(tt.sessions, tt.ts, tt.gap)
			if !slices.Equal(out, tt.wantOut) {
				t.Errorf("out = %v, want %v", out, tt.wantOut)
			}
			if merged != tt.wantMerged {
				t.Errorf("merged = %v, want %v", merged, tt.wantMerged)
			}
			if !slices.Equal(absorbed, tt.wantAbsorbed) || (absorbed == nil) != (tt.wantAbsorbed == nil) {
				t.Errorf("absorbed = %#v, want %#v", absorbed, tt.wantAbsorbed)
			}
			if !slices.Equal(tt.sessions, orig) {
				t.Errorf("input modified: %v, was %v", tt.sessions, orig)
			}
			checkInsert(t, orig, tt.ts, out, merged, absorbed)
			// SessionSpan names the same session and the same absorbed
			// ones; replacing them in place gives out.
			m, i, j := SessionSpan(orig, tt.ts, tt.gap)
			if m != merged {
				t.Errorf("SessionSpan merged = %v, InsertSession %v", m, merged)
			}
			inside := j == i+1 && orig[i] == m
			if !inside && !slices.Equal(orig[i:j], absorbed) {
				t.Errorf("SessionSpan absorbs %v, InsertSession %v", orig[i:j], absorbed)
			}
			if inPlace := slices.Replace(slices.Clone(orig), i, j, m); !slices.Equal(inPlace, out) {
				t.Errorf("replacing sessions[%d:%d] by %v gives %v, want %v", i, j, m, inPlace, out)
			}
		})
	}
}

// TestInsertSessionNoAliasing checks that neither result shares memory with
// the input: the caller may keep sessions if the row turns out to be late,
// and may keep absorbed after writing to out.
func TestInsertSessionNoAliasing(t *testing.T) {
	sessions := make([]Window, 2, 10) // spare capacity an append would reuse
	sessions[0], sessions[1] = Window{0, 10}, Window{15, 25}
	for _, ts := range []int64{8, 5, 40, -40} {
		in := slices.Clone(sessions)
		out, _, absorbed := InsertSession(sessions, ts, 10)
		keep := slices.Clone(absorbed)
		for i := range out {
			out[i] = Window{-1, -1}
		}
		if !slices.Equal(sessions, in) {
			t.Fatalf("ts %d: writing to out changed sessions: %v", ts, sessions)
		}
		if !slices.Equal(absorbed, keep) {
			t.Fatalf("ts %d: writing to out changed absorbed: %v", ts, absorbed)
		}
		if ext := sessions[:cap(sessions)]; ext[2] != (Window{}) {
			t.Fatalf("ts %d: InsertSession wrote into spare capacity: %v", ts, ext)
		}
	}
}

// checkInsert checks the invariants of one InsertSession call.
func checkInsert(t *testing.T, old []Window, ts int64, out []Window, merged Window, absorbed []Window) {
	t.Helper()
	checkSessions(t, out)
	if !merged.Contains(ts) {
		t.Errorf("merged %v does not contain ts %d", merged, ts)
	}
	if !slices.Contains(out, merged) {
		t.Errorf("merged %v not in out %v", merged, out)
	}
	if slices.Contains(absorbed, merged) {
		t.Errorf("merged %v is in absorbed %v", merged, absorbed)
	}
	for _, a := range absorbed {
		if !slices.Contains(old, a) {
			t.Errorf("absorbed %v was not an input session %v", a, old)
		}
		if a.Start < merged.Start || a.End > merged.End {
			t.Errorf("absorbed %v is not inside merged %v", a, merged)
		}
	}
	if len(absorbed) == 0 && slices.Contains(old, merged) {
		if !slices.Equal(out, old) {
			t.Errorf("unchanged session but out %v != input %v", out, old)
		}
		return
	}
	if slices.Contains(old, merged) {
		t.Errorf("merged %v was an input session but absorbed %v is not empty", merged, absorbed)
	}
	// out = old - absorbed + merged.
	var want []Window
	for _, s := range old {
		if !slices.Contains(absorbed, s) {
			want = append(want, s)
		}
	}
	want = append(want, merged)
	slices.SortFunc(want, func(a, b Window) int { return cmpInt(a.Start, b.Start) })
	if !slices.Equal(out, want) {
		t.Errorf("out %v != input %v - absorbed %v + merged %v", out, old, absorbed, merged)
	}
}

// checkSessions checks that sessions are sorted, non-empty (except the
// degenerate saturated one) and non-overlapping.
func checkSessions(t *testing.T, s []Window) {
	t.Helper()
	for i, w := range s {
		if w.End <= w.Start && !(w.Start == maxI && w.End == maxI) {
			t.Errorf("session %d %v is empty", i, w)
		}
		if i > 0 && s[i-1].End > w.Start {
			t.Errorf("sessions %v and %v overlap or are out of order", s[i-1], w)
		}
		if i > 0 && s[i-1].End == maxI {
			t.Errorf("session %v after a saturated session %v", w, s[i-1])
		}
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
