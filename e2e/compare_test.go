package e2e

// Comparing an oracle Result with the rows a server returned, decoded from
// JSON with UseNumber (numbers are json.Number, NULL is nil).

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// doubleTolerance is the relative tolerance for DOUBLE results (docs/sql.md).
const doubleTolerance = 1e-9

// diffResult compares want with the served columns and rows and returns one
// line per difference, sorted; none means equal. Rows are compared as an
// unordered set keyed by want.Key (a key served twice is a difference), or,
// for an append-only result (want.Key == nil), as a multiset of whole rows
// over want.Columns; served columns beyond those (row ids) are ignored then.
func diffResult(want Result, cols []string, rows []map[string]any) []string {
	var diffs []string
	if want.Key != nil {
		if !slices.Equal(cols, want.Columns) {
			diffs = append(diffs, fmt.Sprintf("columns: got %q, want %q", cols, want.Columns))
		}
	} else {
		for _, c := range want.Columns {
			if !slices.Contains(cols, c) {
				diffs = append(diffs, fmt.Sprintf("columns: %q missing from %q", c, cols))
			}
		}
	}

	keyCols := want.Key
	if keyCols == nil {
		keyCols = want.Columns
	}
	wantBy := map[string][]map[string]any{}
	for _, r := range want.Rows {
		k := rowKey(keyCols, r)
		if want.Key != nil && len(wantBy[k]) > 0 {
			panic(fmt.Sprintf("oracle produced key %s twice", k))
		}
		wantBy[k] = append(wantBy[k], r)
	}
	gotBy := map[string][]map[string]any{}
	for _, r := range rows {
		k := rowKey(keyCols, r)
		gotBy[k] = append(gotBy[k], r)
	}

	for k, ws := range wantBy {
		gs := gotBy[k]
		switch {
		case len(gs) == 0:
			diffs = append(diffs, "missing:    "+formatRow(want.Columns, ws[0]))
		case want.Key == nil:
			if len(gs) != len(ws) {
				diffs = append(diffs, fmt.Sprintf("count %d, want %d: %s", len(gs), len(ws), formatRow(want.Columns, ws[0])))
			}
		default:
			if len(gs) > 1 {
				diffs = append(diffs, fmt.Sprintf("key served %d times: %s", len(gs), formatRow(want.Columns, gs[0])))
			}
			var bad []string
			for _, c := range want.Columns {
				if slices.Contains(keyCols, c) {
					continue
				}
				v, ok := gs[0][c]
				if !ok {
					bad = append(bad, fmt.Sprintf("%s absent", c))
				} else if d := valueDiff(ws[0][c], v); d != "" {
					bad = append(bad, c+": "+d)
				}
			}
			if len(bad) > 0 {
				diffs = append(diffs, fmt.Sprintf("wrong:      %s: %s", formatRow(keyCols, ws[0]), strings.Join(bad, "; ")))
			}
		}
	}
	for k, gs := range gotBy {
		if _, ok := wantBy[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected: %s (x%d)", formatRow(want.Columns, gs[0]), len(gs)))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func rowKey(cols []string, r map[string]any) string {
	vals := make([]any, len(cols))
	for i, c := range cols {
		v, ok := r[c]
		if !ok {
			v = absent{}
		}
		vals[i] = v
	}
	return canonKey(vals)
}

// absent stands for a column missing from a served row, so that it never
// keys like NULL.
type absent struct{}

// valueDiff says how got (decoded from JSON) differs from want (an oracle
// value), or returns "" when they are equal under the API's encoding:
// BIGINT an integral JSON number, DOUBLE a number within doubleTolerance,
// VARCHAR a string, TIMESTAMP the string Timestamp.String gives, BOOLEAN
// a bool, NULL null.
func valueDiff(want, got any) string {
	switch w := want.(type) {
	case nil:
		if got == nil {
			return ""
		}
	case int64:
		if n, ok := got.(json.Number); ok {
			if v, err := strconv.ParseInt(string(n), 10, 64); err == nil && v == w {
				return ""
			}
		}
	case float64:
		if n, ok := got.(json.Number); ok {
			if v, err := strconv.ParseFloat(string(n), 64); err == nil && approxEqual(w, v) {
				return ""
			}
		}
	case string:
		if g, ok := got.(string); ok && g == w {
			return ""
		}
	case Timestamp:
		if g, ok := got.(string); ok && g == w.String() {
			return ""
		}
	case bool:
		if g, ok := got.(bool); ok && g == w {
			return ""
		}
	default:
		panic(fmt.Sprintf("oracle value of type %T", want))
	}
	return fmt.Sprintf("got %s, want %s", showValue(got), showValue(want))
}

func approxEqual(want, got float64) bool {
	if want == got {
		return true
	}
	if math.IsNaN(want) || math.IsNaN(got) || math.IsInf(want, 0) || math.IsInf(got, 0) {
		return false
	}
	return math.Abs(want-got) <= doubleTolerance*math.Max(math.Abs(want), math.Abs(got))
}

func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case absent:
		return "(absent)"
	case string:
		return strconv.Quote(x)
	case Timestamp:
		return x.String()
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

func formatRow(cols []string, r map[string]any) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v, ok := r[c]
		if !ok {
			v = absent{}
		}
		parts[i] = c + "=" + showValue(v)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// formatDiffs renders diffResult's lines for a test failure: a count per
// kind of difference, then at most perKind lines of each kind.
func formatDiffs(diffs []string, perKind int) string {
	var kinds []string
	byKind := map[string][]string{}
	for _, d := range diffs {
		kind, _, _ := strings.Cut(d, ":")
		if strings.HasPrefix(kind, "count ") {
			kind = "count"
		}
		if _, ok := byKind[kind]; !ok {
			kinds = append(kinds, kind)
		}
		byKind[kind] = append(byKind[kind], d)
	}
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", len(byKind[k]), k)
	}
	for _, k := range kinds {
		ds := byKind[k]
		for i, d := range ds {
			if i == perKind {
				fmt.Fprintf(&b, "\n  ... %d more %s", len(ds)-perKind, k)
				break
			}
			b.WriteString("\n  " + d)
		}
	}
	return b.String()
}

// canonicalRows renders served rows as sorted JSON lines (object keys
// sorted), for comparing two reads of the same results exactly.
func canonicalRows(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	sort.Strings(out)
	return out
}

// diffCanonical compares two canonicalRows and describes up to n
// differences; "" means equal.
func diffCanonical(before, after []string, n int) string {
	var b strings.Builder
	i, j, shown := 0, 0, 0
	note := func(s string) {
		if shown < n {
			b.WriteString("\n  " + s)
		}
		shown++
	}
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || (i < len(before) && before[i] < after[j]):
			note("gone:  " + before[i])
			i++
		case i == len(before) || after[j] < before[i]:
			note("added: " + after[j])
			j++
		default:
			i++
			j++
		}
	}
	if shown == 0 {
		return ""
	}
	return fmt.Sprintf("%d rows before, %d after, %d differences:%s", len(before), len(after), shown, b.String())
}
