package planner

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/streamsql/streamsql/parser"
)

// MaxNameLen is the longest name, in bytes, of a table, view, column or
// alias a statement creates.
const MaxNameLen = 128

// maxPGName is PostgreSQL's longest identifier (NAMEDATALEN - 1): it
// silently truncates longer ones, so a sink would write one table and
// look for another.
const maxPGName = 63

// CheckName validates a name a statement creates, before it reaches the
// catalog's keys, URL paths, sink ids or generated SQL. what says what it
// names ("table", "view", "column", "alias"). A name is 1 to MaxNameLen
// bytes of UTF-8 without control characters and without trailing spaces
// (MySQL's rule); table and view names, which are URL path segments and
// part of sink ids, also have no '/' or '\' (MySQL refuses those in
// table names too). The error (400) names the identifier.
func CheckName(what, name string) error {
	if msg := nameProblem(name, what == "table" || what == "view"); msg != "" {
		return badf(name, "%s name %s %s", what, quoteName(name), msg)
	}
	return nil
}

// nameProblem says what is wrong with name, or "".
func nameProblem(name string, path bool) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("is %d bytes long, over the limit of %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.HasSuffix(name, " "):
		return "ends with a space"
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
		if path && (r == '/' || r == '\\') {
			return fmt.Sprintf("contains %q (names are URL path segments)", r)
		}
	}
	return ""
}

// quoteName quotes a name for a message, shortened when long.
func quoteName(name string) string {
	if len(name) > MaxNameLen {
		i := MaxNameLen
		for i > 0 && !utf8.RuneStart(name[i]) {
			i--
		}
		return fmt.Sprintf("%q...", name[:i])
	}
	return fmt.Sprintf("%q", name)
}

// CheckAliases validates the column aliases of a SELECT (and of its
// subqueries): they name the columns of its results.
func CheckAliases(sel *parser.Select) error {
	if sel == nil {
		return nil
	}
	for _, f := range sel.Fields {
		if f.Alias != "" {
			if err := CheckName("column", f.Alias); err != nil {
				return err
			}
		}
	}
	var from func(r *parser.TableRef) error
	from = func(r *parser.TableRef) error {
		switch {
		case r == nil:
			return nil
		case r.Join != nil:
			if err := from(r.Join.Left); err != nil {
				return err
			}
			return from(r.Join.Right)
		}
		return CheckAliases(r.Subquery)
	}
	return from(sel.From)
}
