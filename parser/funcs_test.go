package parser

import (
	"fmt"
	"strings"
	"testing"
)

// TestFuncForms: the operator forms that become function calls (REGEXP,
// RLIKE, ->, ->>) and the CAST and CONVERT targets, each as the parser
// hands it to the planner.
func TestFuncForms(t *testing.T) {
	castString := func(e Expr) string {
		c, ok := e.(*Cast)
		if !ok {
			return exprString(e)
		}
		s := "CAST(" + exprString(c.X) + " AS " + c.Type
		if c.Type == "DECIMAL" {
			s += fmt.Sprintf("(%d, %d)", c.Prec, c.Scale)
		}
		return s + ")"
	}
	for in, want := range map[string]string{
		"s REGEXP '^a'":             "regexp_like(s, '^a')",
		"s NOT REGEXP '^a'":         "(NOT regexp_like(s, '^a'))",
		"s RLIKE p":                 "regexp_like(s, p)",
		"s NOT RLIKE p":             "(NOT regexp_like(s, p))",
		"j->'$.a'":                  "json_extract(j, '$.a')",
		"j->>'$.a'":                 "json_unquote(json_extract(j, '$.a'))",
		"CAST(x AS SIGNED)":         "CAST(x AS BIGINT)",
		"CAST(x AS SIGNED INTEGER)": "CAST(x AS BIGINT)",
		"CAST(x AS UNSIGNED)":       "CAST(x AS UNSIGNED)",
		"CONVERT(x, UNSIGNED)":      "CAST(x AS UNSIGNED)",
		"CAST(x AS DOUBLE)":         "CAST(x AS DOUBLE)",
		"CAST(x AS REAL)":           "CAST(x AS DOUBLE)",
		"CAST(x AS FLOAT)":          "CAST(x AS DOUBLE)",
		"CAST(x AS DECIMAL)":        "CAST(x AS DECIMAL(10, 0))",
		"CAST(x AS DECIMAL(8))":     "CAST(x AS DECIMAL(8, 0))",
		"CAST(x AS DECIMAL(10, 2))": "CAST(x AS DECIMAL(10, 2))",
		"CAST(x AS CHAR)":           "CAST(x AS VARCHAR)",
		"CAST(x AS CHAR(3))":        "CAST(x AS VARCHAR)",
		"CONVERT(x, CHAR)":          "CAST(x AS VARCHAR)",
		"CAST(x AS DATETIME)":       "CAST(x AS TIMESTAMP)",
		"CAST(x AS DATETIME(3))":    "CAST(x AS TIMESTAMP)",
	} {
		sel := parseSelect(t, "SELECT "+in+" FROM t")
		if got := castString(sel.Fields[0].Expr); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestCastErrors: the targets streamsql has no type for, and BOOLEAN,
// which no CAST has, are refused with what to write.
func TestCastErrors(t *testing.T) {
	for in, want := range map[string]struct {
		kind ErrorKind
		msg  string
	}{
		"CAST(x AS DATE)":     {Unsupported, "CAST to DATE (streamsql casts to SIGNED, UNSIGNED, DOUBLE, DECIMAL, CHAR and DATETIME)"},
		"CAST(x AS TIME)":     {Unsupported, "CAST to TIME ("},
		"CAST(x AS JSON)":     {Unsupported, "CAST to JSON ("},
		"CAST(x AS YEAR)":     {Unsupported, "CAST to YEAR ("},
		"CAST(x AS BOOLEAN)":  {Syntax, "CAST has no BOOLEAN target (nor has MySQL); write x <> 0, or IF(x, TRUE, FALSE)"},
		"CAST(x AS BOOL)":     {Syntax, "CAST has no BOOLEAN target"},
		"CONVERT(x, BOOLEAN)": {Syntax, "CAST has no BOOLEAN target"},
	} {
		pe, _ := parseErr(t, "SELECT "+in+" FROM t")
		if pe.Kind != want.kind || !strings.Contains(pe.Msg, want.msg) {
			t.Errorf("%s: %v (kind %d), want kind %d with %q", in, pe, pe.Kind, want.kind, want.msg)
		}
	}
	// Not every syntax error near BOOLEAN is about CAST.
	if pe, _ := parseErr(t, "SELECT a, BOOLEAN) FROM t"); strings.Contains(pe.Msg, "CAST") {
		t.Errorf("a hint about CAST for %v", pe)
	}
}
