package plan

import "strings"

// Redacted stands in for a password RedactSecrets removed.
const Redacted = "REDACTED"

// RedactSecrets returns s with the passwords of connection strings in it
// replaced by Redacted: the password of a URL's userinfo
// (postgres://user:password@host, any scheme) and the value of a
// password key (password=, sslpassword= and any key ending in "password",
// passwd=, pwd=) in key=value connection strings and URL query strings.
// s may be SQL text, JSON text, a log line or an error message: a
// redaction never runs past an unescaped '"', so JSON text stays JSON.
// The catalog keeps the connection as written (a sink needs it); every
// output that can show one (the API, SHOW CREATE TABLE, errors, the
// server log) passes through here.
func RedactSecrets(s string) string {
	if !strings.Contains(s, "://") && !hasPasswordKey(s) {
		return s
	}
	return redactKeys(redactUserinfo(s))
}

// hasPasswordKey reports whether s may hold a password key (a quick
// check before the scan).
func hasPasswordKey(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if c := s[i] | 0x20; c == 'p' && (s[i+1]|0x20 == 'a' || s[i+1]|0x20 == 'w') {
			return true
		}
	}
	return false
}

// userinfoByte reports whether c may appear in a URL's authority (RFC
// 3986 userinfo and host; what net/url accepts): anything else ends it.
func userinfoByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=%@:[]", c) >= 0
}

// redactUserinfo replaces the password of every scheme://user:password@
// in s.
func redactUserinfo(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		i += from
		from = i + 3
		// A scheme: a letter, then letters, digits, '+', '-', '.'.
		j := i
		for j > 0 && (isAlnum(s[j-1]) || s[j-1] == '+' || s[j-1] == '-' || s[j-1] == '.') {
			j--
		}
		for j < i && !isLetter(s[j]) {
			j++
		}
		if j == i {
			continue
		}
		end := from
		for end < len(s) && userinfoByte(s[end]) {
			end++
		}
		at := strings.LastIndexByte(s[from:end], '@')
		if at < 0 {
			continue
		}
		colon := strings.IndexByte(s[from:from+at], ':')
		if colon < 0 || colon == at-1 {
			continue // no password, or an empty one
		}
		b.WriteString(s[done : from+colon+1])
		b.WriteString(Redacted)
		done = from + at
		from = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// redactKeys replaces the value of every password key in s: password,
// any key ending in it (sslpassword), passwd and pwd, followed by '='
// (spaces around it allowed, as in libpq's key=value strings).
func redactKeys(s string) string {
	lower := asciiLower(s)
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		var k int // the key's length
		switch {
		case strings.HasPrefix(lower[i:], "password"):
			k = 8
		case strings.HasPrefix(lower[i:], "passwd"):
			k = 6
		case strings.HasPrefix(lower[i:], "pwd") && (i == 0 || !isAlnum(s[i-1])):
			k = 3
		default:
			continue
		}
		v := i + k
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if v == len(s) || s[v] != '=' {
			continue
		}
		v++
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		end := valueEnd(s, v)
		if end == v {
			continue
		}
		b.WriteString(s[done:v])
		b.WriteString(Redacted)
		done = end
		i = end - 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// valueEnd is the end of the value starting at s[v]. A quoted value ends
// at its closing quote: a single quote as libpq writes it, two single
// quotes inside a SQL string (where quotes are doubled), or a backslash
// and a quote. Any other value ends at whitespace, '&' (the next query
// parameter), a single quote (the end of the SQL string around it), an
// unescaped '"', or an escape sequence of JSON or of a quoted log value
// that is not part of the value (a backslash before '"', n, t, r or u).
func valueEnd(s string, v int) int {
	closing := func(q string, from int) int {
		for i := from; i < len(s); i++ {
			if s[i] == '"' && (i == 0 || s[i-1] != '\\') {
				return i // never past a JSON string's end
			}
			if strings.HasPrefix(s[i:], q) && (len(q) > 1 || s[i-1] != '\\') {
				return i + len(q)
			}
		}
		return len(s)
	}
	switch {
	case strings.HasPrefix(s[v:], "''"):
		return closing("''", v+2)
	case strings.HasPrefix(s[v:], `\'`):
		return closing(`\'`, v+2)
	case strings.HasPrefix(s[v:], "'"):
		return closing("'", v+1)
	}
	i := v
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '&' || c == '"':
			return i
		case c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				i += 2 // a quote doubled inside a SQL string
				continue
			}
			return i
		case c == '\\' && i+1 < len(s):
			switch s[i+1] {
			case '"', 'n', 't', 'r', 'u':
				return i
			}
			i += 2 // an escaped character of the value (\\)
			continue
		}
		i++
	}
	return i
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isAlnum(c byte) bool  { return isLetter(c) || '0' <= c && c <= '9' || c == '_' }

// asciiLower lower-cases the ASCII letters of s only, keeping its length.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
