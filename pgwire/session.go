package pgwire

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
)

// The client and session statements of PostgreSQL that this layer answers
// itself: recognized by their exact shape (after folding case and spaces
// and dropping one trailing semicolon), never rewritten into streamsql
// SQL. Anything else goes to the engine.
var (
	selectFnRE = regexp.MustCompile(`^select (version|current_database|current_schema|current_user|session_user|pg_catalog\.version|pg_catalog\.current_database|pg_catalog\.current_schema)(\(\))?$`)
	showRE     = regexp.MustCompile(`^show (time zone|[a-z_]+)$`)
	setRE      = regexp.MustCompile(`^set (?:session |local )?(time zone|[a-z_]+)(?: to | ?= ?| )(.+)$`)
)

// normalize folds sql for recognition: lower case outside quotes, runs of
// spaces as one, no trailing semicolon. Quoted text keeps its case.
func normalize(sql string) string {
	s := strings.TrimSpace(sql)
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	var b strings.Builder
	quote := byte(0)
	space := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if quote != 0 {
			b.WriteByte(ch)
			if ch == quote {
				quote = 0
			}
			continue
		}
		switch {
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			space = true
			continue
		case 'A' <= ch && ch <= 'Z':
			ch += 'a' - 'A'
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteByte(ch)
	}
	return b.String()
}

// showParams are the parameters SHOW answers: name as SHOW takes it ->
// the session parameter's key.
var showParams = map[string]string{
	"server_version": "server_version", "server_encoding": "server_encoding", "client_encoding": "client_encoding",
	"datestyle": "DateStyle", "timezone": "TimeZone", "time zone": "TimeZone", "integer_datetimes": "integer_datetimes",
	"standard_conforming_strings": "standard_conforming_strings", "application_name": "application_name",
	"search_path": "search_path", "extra_float_digits": "extra_float_digits", "intervalstyle": "IntervalStyle",
	"is_superuser": "is_superuser", "transaction_isolation": "transaction_isolation", "server_version_num": "server_version_num",
	"consistency": "consistency",
}

// reported are the parameters whose change is reported with
// ParameterStatus, as PostgreSQL reports them.
var reported = map[string]bool{"application_name": true, "client_encoding": true, "DateStyle": true, "TimeZone": true, "IntervalStyle": true}

// session answers sql if it is one of the statements above: ok false
// sends it to the engine. A refused SET is an error.
func (c *conn) session(sql string) (res queries.Result, ok bool, err error) {
	n := normalize(sql)
	if r, ok, err := c.transaction(n); ok {
		return r, ok, err
	}
	text := func(kind, col, v string) queries.Result {
		return queries.Result{Kind: kind, Columns: []string{col}, Rows: []queries.Object{{Cols: []string{col}, Vals: []any{v}}}, Types: []plan.Type{plan.TypeVarchar}}
	}
	if m := selectFnRE.FindStringSubmatch(n); m != nil {
		fn := strings.TrimPrefix(m[1], "pg_catalog.")
		switch fn {
		case "version":
			return text("select", fn, "PostgreSQL "+ServerVersion+" (the PostgreSQL wire protocol of streamsql)"), true, nil
		case "current_database":
			return text("select", fn, c.params["database"]), true, nil
		case "current_schema":
			return text("select", fn, "public"), true, nil
		case "current_user", "session_user":
			return text("select", fn, c.params["user"]), true, nil
		}
	}
	if m := showRE.FindStringSubmatch(n); m != nil {
		key, known := showParams[m[1]]
		if !known {
			return res, false, nil // SHOW TABLES and the engine's others
		}
		v := c.params[key]
		switch key {
		case "transaction_isolation":
			v = "read committed"
		case "server_version_num":
			v = "150000"
		case "consistency":
			if v == "" {
				v = plan.ConsistencyCommitted
			}
		}
		return text("show", strings.ReplaceAll(m[1], " ", ""), v), true, nil
	}
	if m := setRE.FindStringSubmatch(n); m != nil {
		if m[1] == "consistency" {
			return c.setConsistency(m[2])
		}
		return c.set(m[1], m[2])
	}
	return res, false, nil
}

// setParams are the parameters SET takes here: name -> the session
// parameter's key.
var setParams = map[string]string{
	"search_path": "search_path", "datestyle": "DateStyle", "timezone": "TimeZone", "time zone": "TimeZone",
	"application_name": "application_name", "extra_float_digits": "extra_float_digits", "client_encoding": "client_encoding",
	"names": "client_encoding", "intervalstyle": "IntervalStyle", "client_min_messages": "client_min_messages",
	"statement_timeout": "statement_timeout", "standard_conforming_strings": "standard_conforming_strings",
}

// set answers SET name value for the session's parameters; other names go
// to the engine (its SET options).
func (c *conn) set(name, value string) (queries.Result, bool, error) {
	key, known := setParams[name]
	if !known {
		return queries.Result{}, false, nil
	}
	v := unquote(value)
	bad := func(format string, args ...any) (queries.Result, bool, error) {
		return queries.Result{}, true, &pgError{code: "22023", msg: fmt.Sprintf(format, args...)}
	}
	switch key {
	case "client_encoding":
		if u := strings.ToUpper(strings.ReplaceAll(v, "-", "")); u != "UTF8" && u != "UNICODE" {
			return bad("client_encoding %s is not supported: this server speaks UTF8", v)
		}
		v = "UTF8"
	case "DateStyle":
		if !strings.Contains(strings.ToUpper(v), "ISO") {
			return bad("DateStyle %s is not supported: timestamps are written as ISO (ISO, MDY)", v)
		}
		v = "ISO, MDY"
	case "TimeZone":
		switch strings.ToUpper(v) {
		case "UTC", "ETC/UTC", "GMT", "Z", "ZULU", "UCT", "0", "+00:00", "00:00", "LOCAL", "DEFAULT":
			v = "UTC"
		default:
			return bad("time zone %s is not supported: streamsql's TIMESTAMP values are UTC", v)
		}
	case "extra_float_digits":
		if _, err := strconv.Atoi(v); err != nil {
			return bad("invalid value for parameter \"extra_float_digits\": %q", v)
		}
	case "standard_conforming_strings":
		if strings.ToLower(v) != "on" {
			return bad("standard_conforming_strings must be on")
		}
	case "IntervalStyle":
		v = strings.ToLower(v)
	}
	c.params[key] = v
	if reported[key] {
		c.reportParam(key, v)
	}
	return queries.Result{Kind: "set"}, true, nil
}

// setConsistency answers SET consistency, the engine's session setting of
// pull queries (committed or latest): the engine checks the value (as its
// SET does), then the connection keeps it in its parameters (not
// reported: it is no PostgreSQL parameter) and passes it with every
// statement (sessionSet). A SET followed by more statements in the same
// Query goes to the engine whole, as over HTTP: it holds for the rest of
// that text.
func (c *conn) setConsistency(value string) (queries.Result, bool, error) {
	if strings.Contains(value, ";") {
		return queries.Result{}, false, nil
	}
	v := unquote(value)
	if err := c.s.eng.CheckSet([]parser.SetVar{{Name: "consistency", Value: v}}); err != nil {
		return queries.Result{}, true, &pgError{code: "22023", msg: err.Error()}
	}
	c.params["consistency"] = strings.ToLower(v)
	return queries.Result{Kind: "set"}, true, nil
}

// sessionSet are the engine's session settings SET on the connection, for
// queries.ExecOptions.Set.
func (c *conn) sessionSet() []parser.SetVar {
	if v := c.params["consistency"]; v != "" {
		return []parser.SetVar{{Name: "consistency", Value: v}}
	}
	return nil
}

// unquote takes a SET value's quotes off ('x', "x"); a list (search_path)
// stays as written.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') && !strings.Contains(v[1:len(v)-1], ",") {
		return v[1 : len(v)-1]
	}
	return v
}
