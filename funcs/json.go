package funcs

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
)

// JSON_EXTRACT(json, path) and JSON_UNQUOTE(s) over VARCHAR text, as
// MySQL's over its JSON type (and so the -> and ->> operators, which the
// parser turns into them). The document is read where it lies, never
// decoded into a tree: the path walks the text, and the value found is
// written as MySQL writes JSON (", " and ": " between items, object keys
// by length then bytes, the last of duplicate keys, strings re-escaped;
// numbers as they are written in the document, where MySQL writes the
// number it read: 1E2 is 100.0 there).
//
// The path is a subset of MySQL's: $, .key, ."quoted key", [n],
// [last], [last-n]; wildcards (*, **) and ranges (m to n) are refused.
// A constant path is checked when planning; a path from the row that is
// no path, and a document that is no JSON (MySQL: errors), make the
// row's result NULL, as a path that finds nothing does.

// maxJSONDepth is MySQL's limit of nesting in a document (deeper is
// invalid JSON).
const maxJSONDepth = 100

type jsonStep struct {
	key  string // an object member's name, decoded
	idx  int64  // an array index, or from the end when last
	isIx bool
	last bool
}

// parseJSONPath appends path's steps to steps, or says what is wrong.
func parseJSONPath(path string, steps []jsonStep) ([]jsonStep, string) {
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "$") {
		return steps, "does not begin with $"
	}
	p = p[1:]
	for len(p) > 0 {
		switch p[0] {
		case ' ', '\t', '\n', '\r':
			p = p[1:]
		case '.':
			p = p[1:]
			if strings.HasPrefix(p, "*") {
				return steps, "has a wildcard (.*), which streamsql does not support"
			}
			if strings.HasPrefix(p, "\"") {
				end, ok := jsonSkipString(p, 0)
				if !ok {
					return steps, "has an unterminated quoted key"
				}
				k, ok := jsonUnquoteString(p[:end], nil)
				if !ok {
					return steps, "has a bad quoted key"
				}
				steps = append(steps, jsonStep{key: k})
				p = p[end:]
				continue
			}
			n := 0
			for n < len(p) && p[n] != '.' && p[n] != '[' && p[n] != ' ' && p[n] != '*' {
				n++
			}
			if n == 0 {
				return steps, "has a '.' without a key after it"
			}
			steps = append(steps, jsonStep{key: p[:n]})
			p = p[n:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return steps, "has a '[' without its ']'"
			}
			in := strings.TrimSpace(p[1:end])
			p = p[end+1:]
			st := jsonStep{isIx: true}
			switch {
			case in == "*":
				return steps, "has a wildcard ([*]), which streamsql does not support"
			case strings.Contains(in, " to "):
				return steps, "has a range ([m to n]), which streamsql does not support"
			case strings.HasPrefix(in, "last"):
				st.last = true
				rest := strings.TrimSpace(in[4:])
				if rest != "" {
					if rest[0] != '-' {
						return steps, "has a bad index [" + in + "]"
					}
					n, err := strconv.ParseInt(strings.TrimSpace(rest[1:]), 10, 64)
					if err != nil || n < 0 {
						return steps, "has a bad index [" + in + "]"
					}
					st.idx = n
				}
			default:
				n, err := strconv.ParseInt(in, 10, 64)
				if err != nil || n < 0 || in[0] == '+' {
					return steps, "has a bad index [" + in + "]"
				}
				st.idx = n
			}
			steps = append(steps, st)
		case '*':
			return steps, "has a wildcard (**), which streamsql does not support"
		default:
			return steps, "has " + strconv.Quote(p[:1]) + " where a .key or [n] belongs"
		}
	}
	return steps, ""
}

func bindJSONExtract(name string, args []plan.Expr, _ plan.Type) ([]plan.Expr, error) {
	if pv, ok := constArg(args, 1); ok {
		if _, bad := parseJSONPath(ToString(pv), nil); bad != "" {
			return nil, errorf("", "%s: path %s %s (paths are $, .key, .\"key\", [n], [last], [last-n])", name, quoteSQL(ToString(pv)), bad)
		}
	}
	return args, nil
}

func compileJSONExtract(c *plan.Call, a []Eval, _ *Env) Eval {
	var fixed []jsonStep
	constPath := false
	if pv, ok := constArg(c.Args, 1); ok {
		fixed, _ = parseJSONPath(ToString(pv), nil) // checked by Bind
		constPath = true
	}
	var steps []jsonStep
	var buf []byte
	var keys []jsonMember
	return Strict2(a[0], a[1], func(d, p plan.Value) plan.Value {
		doc := ToString(d)
		path := fixed
		if !constPath {
			var bad string
			if steps, bad = parseJSONPath(ToString(p), steps[:0]); bad != "" {
				return plan.Null
			}
			path = steps
		}
		if end, ok := jsonSkipValue(doc, jsonSkipWS(doc, 0), 0); !ok || jsonSkipWS(doc, end) != len(doc) {
			return plan.Null // no JSON (MySQL: an error)
		}
		start, ok := jsonFind(doc, path)
		if !ok {
			return plan.Null
		}
		end, _ := jsonSkipValue(doc, start, 0)
		v := doc[start:end]
		switch v[0] {
		case '{', '[':
			buf, keys = jsonWrite(buf[:0], v, keys)
			return plan.Str(string(buf))
		case '"':
			if strings.IndexByte(v, '\\') < 0 {
				return plan.Str(v)
			}
			s, _ := jsonUnquoteString(v, buf[:0])
			buf = jsonQuote(buf[:0], s)
			return plan.Str(string(buf))
		}
		return plan.Str(v)
	})
}

// jsonFind is the offset of the value path finds in doc (valid JSON).
func jsonFind(doc string, path []jsonStep) (int, bool) {
	at := jsonSkipWS(doc, 0)
	for _, st := range path {
		c := doc[at]
		switch {
		case !st.isIx:
			if c != '{' {
				return 0, false
			}
			found := -1
			jsonMembers(doc, at, func(k string, v int) {
				if jsonKeyIs(k, st.key) {
					found = v // the last of duplicates, as MySQL keeps it
				}
			})
			if found < 0 {
				return 0, false
			}
			at = found
		case c != '[':
			if st.idx != 0 { // [0] and [last] of a value that is no array: the value
				return 0, false
			}
		default:
			var elems int64
			jsonElems(doc, at, func(int) { elems++ })
			i := st.idx
			if st.last {
				i = elems - 1 - st.idx
			}
			if i < 0 || i >= elems {
				return 0, false
			}
			var n int64
			jsonElems(doc, at, func(v int) {
				if n == i {
					at = v
				}
				n++
			})
		}
	}
	return at, true
}

// jsonKeyIs: the raw member name k (quoted, as in the document) is key.
func jsonKeyIs(k, key string) bool {
	if strings.IndexByte(k, '\\') < 0 {
		return k[1:len(k)-1] == key
	}
	var tmp [64]byte
	s, ok := jsonUnquoteString(k, tmp[:0])
	return ok && s == key
}

// jsonMembers calls f with each member's raw name and value offset of
// the object at (valid JSON).
func jsonMembers(doc string, at int, f func(k string, v int)) {
	i := jsonSkipWS(doc, at+1)
	if doc[i] == '}' {
		return
	}
	for {
		kend, _ := jsonSkipString(doc, i)
		k := doc[i:kend]
		v := jsonSkipWS(doc, jsonSkipWS(doc, kend)+1) // past ':'
		f(k, v)
		end, _ := jsonSkipValue(doc, v, 0)
		i = jsonSkipWS(doc, end)
		if doc[i] == '}' {
			return
		}
		i = jsonSkipWS(doc, i+1) // past ','
	}
}

// jsonElems calls f with each element's offset of the array at.
func jsonElems(doc string, at int, f func(v int)) {
	i := jsonSkipWS(doc, at+1)
	if doc[i] == ']' {
		return
	}
	for {
		f(i)
		end, _ := jsonSkipValue(doc, i, 0)
		i = jsonSkipWS(doc, end)
		if doc[i] == ']' {
			return
		}
		i = jsonSkipWS(doc, i+1)
	}
}

type jsonMember struct {
	key  string // decoded
	v    int
	last bool // not overridden by a later duplicate
}

// jsonWrite appends the container v (valid JSON) as MySQL writes it.
// keys is scratch space, returned for reuse.
func jsonWrite(dst []byte, v string, keys []jsonMember) ([]byte, []jsonMember) {
	switch v[0] {
	case '[':
		dst = append(dst, '[')
		n := 0
		jsonElems(v, 0, func(e int) {
			if n > 0 {
				dst = append(dst, ", "...)
			}
			n++
			dst, keys = jsonWriteValue(dst, v, e, keys)
		})
		return append(dst, ']'), keys
	case '{':
		base := len(keys)
		jsonMembers(v, 0, func(k string, e int) {
			s, _ := jsonUnquoteString(k, nil)
			keys = append(keys, jsonMember{key: s, v: e})
		})
		ms := keys[base:]
		sort.SliceStable(ms, func(i, j int) bool {
			if len(ms[i].key) != len(ms[j].key) {
				return len(ms[i].key) < len(ms[j].key)
			}
			return ms[i].key < ms[j].key
		})
		dst = append(dst, '{')
		n := 0
		for i, m := range ms {
			if i+1 < len(ms) && ms[i+1].key == m.key {
				continue // a later duplicate wins (stable sort keeps document order)
			}
			if n > 0 {
				dst = append(dst, ", "...)
			}
			n++
			dst = jsonQuote(dst, m.key)
			dst = append(dst, ": "...)
			dst, keys = jsonWriteValue(dst, v, m.v, keys)
		}
		return append(dst, '}'), keys[:base]
	}
	return dst, keys
}

func jsonWriteValue(dst []byte, doc string, at int, keys []jsonMember) ([]byte, []jsonMember) {
	end, _ := jsonSkipValue(doc, at, 0)
	v := doc[at:end]
	switch v[0] {
	case '{', '[':
		return jsonWrite(dst, v, keys)
	case '"':
		s, _ := jsonUnquoteString(v, nil)
		return jsonQuote(dst, s), keys
	}
	return append(dst, v...), keys
}

// jsonQuote appends s as a JSON string, escaped as MySQL escapes it.
func jsonQuote(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			if c < 0x20 {
				dst = append(dst, `\u00`...)
				dst = append(dst, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

func jsonSkipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// jsonSkipValue is the end of the JSON value at s[i], false when there is
// none (or it nests deeper than maxJSONDepth).
func jsonSkipValue(s string, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '"':
		return jsonSkipString(s, i)
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = jsonSkipWS(s, i+1)
		if i < len(s) && s[i] == close {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(s) || s[i] != '"' {
					return i, false
				}
				var ok bool
				if i, ok = jsonSkipString(s, i); !ok {
					return i, false
				}
				if i = jsonSkipWS(s, i); i >= len(s) || s[i] != ':' {
					return i, false
				}
				i = jsonSkipWS(s, i+1)
			}
			var ok bool
			if i, ok = jsonSkipValue(s, i, depth+1); !ok {
				return i, false
			}
			if i = jsonSkipWS(s, i); i >= len(s) {
				return i, false
			}
			if s[i] == close {
				return i + 1, true
			}
			if s[i] != ',' {
				return i, false
			}
			i = jsonSkipWS(s, i+1)
		}
	case c == 't':
		return i + 4, strings.HasPrefix(s[i:], "true")
	case c == 'f':
		return i + 5, strings.HasPrefix(s[i:], "false")
	case c == 'n':
		return i + 4, strings.HasPrefix(s[i:], "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return jsonSkipNumber(s, i)
	}
	return i, false
}

func jsonSkipNumber(s string, i int) (int, bool) {
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return i, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, false
		}
	}
	return i, true
}

// jsonSkipString is the end of the JSON string at s[i] (a '"').
func jsonSkipString(s string, i int) (int, bool) {
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			i++
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) {
					return i, false
				}
				if _, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err != nil {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		}
	}
	return i, false
}

// jsonUnquoteString decodes the JSON string q (with its quotes), into
// dst's space.
func jsonUnquoteString(q string, dst []byte) (string, bool) {
	if end, ok := jsonSkipString(q, 0); !ok || end != len(q) {
		return "", false
	}
	body := q[1 : len(q)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch body[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := strconv.ParseUint(body[i+1:i+5], 16, 16)
			i += 4
			ru := rune(r)
			if ru >= 0xd800 && ru < 0xdc00 && i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				if r2, err := strconv.ParseUint(body[i+3:i+7], 16, 16); err == nil && r2 >= 0xdc00 && r2 < 0xe000 {
					ru = (ru-0xd800)<<10 | (rune(r2) - 0xdc00) + 0x10000
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, ru)
		default:
			dst = append(dst, body[i])
		}
	}
	return string(dst), true
}

// JSON_UNQUOTE(s): s without its quotes and escapes when it is a JSON
// string; any other text as it is. Text in quotes that is no JSON string
// is NULL (MySQL: an error).
func compileJSONUnquote(_ *plan.Call, a []Eval, _ *Env) Eval {
	var buf []byte
	return Strict1(a[0], func(v plan.Value) plan.Value {
		s := ToString(v)
		if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
			return plan.Str(s)
		}
		u, ok := jsonUnquoteString(s, buf[:0])
		if !ok {
			return plan.Null
		}
		return plan.Str(u)
	})
}
