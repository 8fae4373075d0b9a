package value

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScan is a minimal JSON reader over one request body, enough for the
// ingest decoder: it reads strings, numbers and literals in place and skips
// nested values, with encoding/json's grammar (RFC 8259) and its handling of
// invalid UTF-8 and unpaired surrogates (both become U+FFFD). It works on a
// string so that unescaped string values are substrings of the body rather
// than allocations; the ingest path encodes them into log rows before the
// body goes away.
//
// Errors are syntax errors worded like encoding/json's.
type jsonScan struct {
	s   string
	i   int    // read position
	esc []byte // scratch for strings with escapes
	// maxDepth is the nesting limit, counted from the outermost value (a
	// JSON array body counts); skip refuses deeper values with errTooDeep.
	maxDepth int
	// Unescaped strings are appended here and returned as substrings of
	// its String(), which stay valid as it grows: no allocation each.
	arena strings.Builder
}

type syntaxError string

func (e syntaxError) Error() string { return string(e) }

// errTooDeep is skip's error for a value nested deeper than maxDepth. It
// is found without recursion, so no depth costs stack.
var errTooDeep = syntaxError("exceeded max depth")

func errUnexpectedEnd() error { return syntaxError("unexpected end of JSON input") }

func errInvalid(c byte, context string) error {
	return syntaxError(fmt.Sprintf("invalid character %s %s", quoteChar(c), context))
}

// quoteChar formats c as encoding/json does in its errors.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := fmt.Sprintf("%q", string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// ws skips JSON whitespace.
func (j *jsonScan) ws() {
	for j.i < len(j.s) {
		switch j.s[j.i] {
		case ' ', '\t', '\n', '\r':
			j.i++
		default:
			return
		}
	}
}

// peek returns the next byte, 0 at the end.
func (j *jsonScan) peek() byte {
	if j.i < len(j.s) {
		return j.s[j.i]
	}
	return 0
}

// atEnd reports whether only whitespace is left.
func (j *jsonScan) atEnd() bool {
	j.ws()
	return j.i == len(j.s)
}

// str reads a string starting at its opening quote and returns its value.
// Without escapes or invalid UTF-8 (the usual case) the value is a substring
// of the body.
func (j *jsonScan) str() (string, error) {
	start := j.i + 1
	i := start
	// Eight bytes at a time while none needs a look: most strings are
	// plain ASCII.
	for ; i+8 <= len(j.s); i += 8 {
		w := j.s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		if special(x) {
			break
		}
	}
	for i < len(j.s) {
		c := j.s[i]
		switch {
		case c == '"':
			j.i = i + 1
			return j.s[start:i], nil
		case c == '\\':
			return j.strSlow(start, i)
		case c < 0x20:
			return "", errInvalid(c, "in string literal")
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRuneInString(j.s[i:])
			if r == utf8.RuneError && n == 1 {
				return j.strSlow(start, i)
			}
			i += n
		}
	}
	return "", errUnexpectedEnd()
}

// special reports whether any of the eight bytes in x is a quote, a
// backslash, a control character or not ASCII (bit tricks from "Bit
// Twiddling Hacks": hasless and haszero; exact about whether, not where).
func special(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(b-ones)&^b|x)&highs != 0
}

// strSlow finishes a string from position i (inside it) on, unescaping into
// scratch space; s[start:i] is the plain prefix.
func (j *jsonScan) strSlow(start, i int) (string, error) {
	b := append(j.esc[:0], j.s[start:i]...)
	defer func() { j.esc = b[:0] }()
	for i < len(j.s) {
		c := j.s[i]
		switch {
		case c == '"':
			j.i = i + 1
			if j.arena.Cap()-j.arena.Len() < len(b) {
				j.arena.Grow(max(len(b), 4096, 2*j.arena.Cap()))
			}
			j.arena.Write(b)
			a := j.arena.String()
			return a[len(a)-len(b):], nil
		case c < 0x20:
			return "", errInvalid(c, "in string literal")
		case c == '\\':
			if i+1 >= len(j.s) {
				return "", errUnexpectedEnd()
			}
			switch e := j.s[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := j.hex4(i + 2)
				if err != nil {
					return "", err
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair only when a \u escape forming one follows at
					// once; anything else makes this one U+FFFD (and the
					// next escape is read on its own).
					if r2, ok := j.u4(i); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b = utf8.AppendRune(b, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", errInvalid(e, "in string escape code")
			}
			i += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(j.s[i:])
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD, one each
			i += n
		}
	}
	return "", errUnexpectedEnd()
}

// hex4 reads the four hex digits of a \u escape at i.
func (j *jsonScan) hex4(i int) (rune, error) {
	var r rune
	for k := i; k < i+4; k++ {
		if k >= len(j.s) {
			return 0, errUnexpectedEnd()
		}
		c := j.s[k]
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, errInvalid(c, `in \u hexadecimal character escape`)
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

// u4 reads a whole \uXXXX escape at i, if there is one.
func (j *jsonScan) u4(i int) (rune, bool) {
	if i+6 > len(j.s) || j.s[i] != '\\' || j.s[i+1] != 'u' {
		return 0, false
	}
	r, err := j.hex4(i + 2)
	return r, err == nil
}

// number reads a number literal and returns its text.
func (j *jsonScan) number() (string, error) {
	s, start, i := j.s, j.i, j.i
	digit := func(k int) bool { return k < len(s) && '0' <= s[k] && s[k] <= '9' }
	bad := func(k int, context string) error {
		if k >= len(s) {
			return errUnexpectedEnd()
		}
		return errInvalid(s[k], context)
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digit(i):
		for digit(i) {
			i++
		}
	default:
		return "", bad(i, "in numeric literal")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digit(i) {
			return "", bad(i, "after decimal point in numeric literal")
		}
		for digit(i) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digit(i) {
			return "", bad(i, "in exponent of numeric literal")
		}
		for digit(i) {
			i++
		}
	}
	j.i = i
	return s[start:i], nil
}

// literal reads true, false or null, whichever starts at the read position.
func (j *jsonScan) literal() (string, error) {
	var want string
	switch j.peek() {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	default:
		want = "null"
	}
	for k := 1; k < len(want); k++ {
		if j.i+k >= len(j.s) {
			return "", errUnexpectedEnd()
		}
		if j.s[j.i+k] != want[k] {
			return "", errInvalid(j.s[j.i+k], fmt.Sprintf("in literal %s (expecting %s)", want, quoteChar(want[k])))
		}
	}
	j.i += len(want)
	return want, nil
}

// skip reads over one value of any kind (validating it) at nesting depth
// depth (of its container), without recursion: a body may be deeply nested.
func (j *jsonScan) skip(depth int) error {
	var stack []byte // open containers: '{' or '['
	for {
		// A value.
		j.ws()
		if j.i >= len(j.s) {
			return errUnexpectedEnd()
		}
		switch c := j.s[j.i]; {
		case c == '{' || c == '[':
			if depth+len(stack)+1 > j.maxDepth {
				return errTooDeep
			}
			j.i++
			j.ws()
			if c == '{' && j.peek() == '}' || c == '[' && j.peek() == ']' {
				j.i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if err := j.key(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, err := j.str(); err != nil {
				return err
			}
		case c == '-' || '0' <= c && c <= '9':
			if _, err := j.number(); err != nil {
				return err
			}
		case c == 't' || c == 'f' || c == 'n':
			if _, err := j.literal(); err != nil {
				return err
			}
		default:
			return errInvalid(c, "looking for beginning of value")
		}
		// After a value: close containers until one continues.
		for {
			if len(stack) == 0 {
				return nil
			}
			top := stack[len(stack)-1]
			j.ws()
			if j.i >= len(j.s) {
				return errUnexpectedEnd()
			}
			c := j.s[j.i]
			j.i++
			if c == ',' {
				if top == '{' {
					if err := j.key(); err != nil {
						return err
					}
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				stack = stack[:len(stack)-1]
				continue
			}
			if top == '{' {
				return errInvalid(c, "after object key:value pair")
			}
			return errInvalid(c, "after array element")
		}
	}
}

// key reads an object key and its colon, leaving the position at the value.
func (j *jsonScan) key() error {
	j.ws()
	if j.i >= len(j.s) {
		return errUnexpectedEnd()
	}
	if j.s[j.i] != '"' {
		return errInvalid(j.s[j.i], "looking for beginning of object key string")
	}
	if _, err := j.str(); err != nil {
		return err
	}
	return j.colon()
}

// colon reads the colon after an object key.
func (j *jsonScan) colon() error {
	j.ws()
	if j.i >= len(j.s) {
		return errUnexpectedEnd()
	}
	if c := j.s[j.i]; c != ':' {
		return errInvalid(c, "after object key")
	}
	j.i++
	j.ws()
	return nil
}
