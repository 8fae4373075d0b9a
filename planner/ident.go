package planner

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

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
// names ("table", "view", "column", "alias"). The rule, one for names in
// SQL and in URLs (docs/operations.md, "Limits and safety"): a name is 1 to MaxNameLen
// bytes of UTF-8 in Unicode normalization form NFC, neither "." nor "..",
// without whitespace at either end and without control, format (bidi
// controls, zero-width characters) or line and paragraph separator
// characters (Unicode categories Cc, Cf, Zl, Zp) anywhere: two names that
// look the same are the same bytes. Table and view names, which are URL
// path segments and part of sink ids, also have no '/' or '\' (MySQL
// refuses those in table names too). The error (400) names the identifier.
//
// Names are checked where they are created only: a catalog written by an
// older version loads as it is, and lookups (LookupName) take any string.
func CheckName(what, name string) error {
	if msg := nameProblem(name, what == "table" || what == "view"); msg != "" {
		return badf(name, "%s name %s %s", what, quoteName(name), msg)
	}
	return nil
}

// LookupName is the catalog name a table or view is looked up by when the
// name does not come from SQL (a URL path segment): lower-cased as the
// parser lower-cases table and view identifiers (TiDB's CIStr.L), so
// /v1/tables/Bids finds the table CREATE TABLE Bids made, as SELECT ...
// FROM Bids does.
func LookupName(name string) string { return strings.ToLower(name) }

// nameProblem says what is wrong with name, or "".
func nameProblem(name string, path bool) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("is %d bytes long, over the limit of %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case name == "." || name == "..":
		return "is a path segment of its own (\".\" and \"..\" are not names)"
	}
	if r, _ := utf8.DecodeRuneInString(name); unicode.IsSpace(r) {
		return fmt.Sprintf("starts with the space character %U", r)
	}
	if r, _ := utf8.DecodeLastRuneInString(name); unicode.IsSpace(r) {
		if r == ' ' {
			return "ends with a space"
		}
		return fmt.Sprintf("ends with the space character %U", r)
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return fmt.Sprintf("contains the control character %U", r)
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("contains the invisible format character %U (a bidi control or zero-width character)", r)
		case unicode.In(r, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("contains the line or paragraph separator %U", r)
		case path && (r == '/' || r == '\\'):
			return fmt.Sprintf("contains %q (names are URL path segments)", r)
		}
	}
	if !norm.NFC.IsNormalString(name) {
		return fmt.Sprintf("is not in Unicode normalization form NFC (%+q; write it as %+q, which looks the same)", name, norm.NFC.String(name))
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
// subqueries, UNION ALL branches and WITH queries): they name the columns
// of its results.
func CheckAliases(sel *parser.Select) error {
	if sel == nil {
		return nil
	}
	for _, c := range sel.With {
		if err := CheckName("view", c.Name); err != nil {
			return err
		}
		if err := CheckAliases(c.Select); err != nil {
			return err
		}
	}
	for _, u := range sel.UnionAll {
		if err := CheckAliases(u); err != nil {
			return err
		}
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
