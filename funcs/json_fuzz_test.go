package funcs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// FuzzJSONExtract: JSON_EXTRACT never panics, takes a document as JSON
// exactly when encoding/json does (within MySQL's depth), and finds what
// encoding/json's decoding finds on the same path, written as JSON that
// decodes to the same value.
func FuzzJSONExtract(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"a": {"b": [1, "x", {"c": null}]}}`, "$.a.b[2].c"},
		{`[1, [2, [3]]]`, "$[1][1][0]"},
		{`{"a":1,"a":{"b":2}}`, "$.a.b"},
		{`{"a b": "\u00e9\n"}`, `$."a b"`},
		{`[true, false, null, -1.5e3]`, "$[last]"},
		{`{"x": [0, 1, 2]}`, "$.x[last-2]"},
		{`"s"`, "$[0]"},
		{`{"a":`, "$.a"},
	} {
		f.Add(seed[0], seed[1])
	}
	fn := Lookup("json_extract")
	f.Fuzz(func(t *testing.T, doc, path string) {
		steps, bad := parseJSONPath(path, nil)
		if bad != "" {
			return
		}
		call := &plan.Call{Fn: fn.Fn, Args: []plan.Expr{&plan.ColRef{Index: 0, T: plan.TypeVarchar}, &plan.Const{V: plan.Str(path)}}, T: plan.TypeVarchar}
		e := fn.Compile(call, []Eval{func(r plan.Row) plan.Value { return r[0] }, func(plan.Row) plan.Value { return plan.Str(path) }}, &Env{})
		got := e(plan.Row{plan.Str(doc)})
		var v any
		if err := decodeNumbers(doc, &v); err != nil || !jsonValidUTF8(doc) || jsonDepth(doc) > maxJSONDepth || duplicateKeys(doc) {
			if err != nil && !got.IsNull() {
				t.Fatalf("JSON_EXTRACT(%q, %q) = %v of no JSON", doc, path, got)
			}
			return
		}
		want, found := v, true
		for _, st := range steps {
			switch x := want.(type) {
			case map[string]any:
				if st.isIx {
					found = st.idx == 0
					continue
				}
				want, found = x[st.key]
			case []any:
				if !st.isIx {
					found = false
					break
				}
				i := st.idx
				if st.last {
					i = int64(len(x)) - 1 - st.idx
				}
				if i < 0 || i >= int64(len(x)) {
					found = false
					break
				}
				want = x[i]
			default:
				found = st.isIx && st.idx == 0
			}
			if !found {
				break
			}
		}
		if !found {
			if !got.IsNull() {
				t.Fatalf("JSON_EXTRACT(%q, %q) = %v, want NULL", doc, path, got)
			}
			return
		}
		var g any
		if got.IsNull() || decodeNumbers(got.S, &g) != nil || !reflect.DeepEqual(g, want) {
			t.Fatalf("JSON_EXTRACT(%q, %q) = %v, want %v", doc, path, got, want)
		}
	})
}

// decodeNumbers decodes s as JSON, numbers as their text (any number is
// JSON, however large).
func decodeNumbers(s string, v *any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if strings.TrimLeft(s[dec.InputOffset():], " \t\r\n") != "" {
		return errors.New("text after the value")
	}
	return nil
}

// jsonDepth is the nesting of doc's brackets outside strings.
func jsonDepth(doc string) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			d++
			most = max(most, d)
		case !in && (c == '}' || c == ']'):
			d--
		}
	}
	return most
}

// duplicateKeys: some object of doc has a key twice (encoding/json keeps
// the last, as MySQL does, but the fuzz oracle walks maps, so leave
// these to the table tests).
func duplicateKeys(doc string) bool {
	dec := json.NewDecoder(strings.NewReader(doc))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				ks, _ := k.(string)
				if seen[ks] || walk() {
					return true
				}
				seen[ks] = true
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				if walk() {
					return true
				}
			}
			dec.Token()
		}
		return false
	}
	return walk()
}

func jsonValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }
