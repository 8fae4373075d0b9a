package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestParseAddr: --addr takes host:port, :port or an http(s) URL and
// refuses anything else before a connection, naming the problem; the URL
// form is never prefixed again (http://127.0.0.1:8080 once became
// http://http//127.0.0.1:8080, and the name "http" was looked up).
func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080":                    "http://127.0.0.1:8080",
		":8080":                             "http://127.0.0.1:8080",
		"localhost:9000":                    "http://localhost:9000",
		"[::1]:8080":                        "http://[::1]:8080",
		"db.example_1:80":                   "http://db.example_1:80",
		"http://127.0.0.1:8080":             "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":            "http://127.0.0.1:8080",
		"https://127.0.0.1:8443":            "https://127.0.0.1:8443",
		"https://streams.example":           "https://streams.example",
		"https://[::1]:8443/":               "https://[::1]:8443",
		"https://proxy.example/streamsql/":  "https://proxy.example/streamsql",
		"http://proxy.example:81/a/b":       "http://proxy.example:81/a/b",
		"http://proxy.example/with%20space": "http://proxy.example/with%20space",
		"HTTP://127.0.0.1:8080":             "http://127.0.0.1:8080", // schemes are case-insensitive
	} {
		got, err := parseAddr(in)
		if err != nil || got != want {
			t.Errorf("parseAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                            "--addr is empty",
		"127.0.0.1":                   `--addr "127.0.0.1": missing port in address (use host:port, :port, http://host:port or https://host:port)`,
		"127.0.0.1:":                  `--addr "127.0.0.1:": empty port`,
		"127.0.0.1:http":              `port "http" is not a number from 1 to 65535`,
		"127.0.0.1:0":                 `port "0" is not a number`,
		"127.0.0.1:65536":             `port "65536" is not a number`,
		"127.0.0.1:+80":               `port "+80" is not a number`,
		"http//127.0.0.1:8080":        `host "http//127.0.0.1" is neither a name nor an IP address`,
		"http:/127.0.0.1:8080":        "too many colons in address",
		"http://http//127.0.0.1:8080": `path "//127.0.0.1:8080" is not a path prefix`,
		"ftp://127.0.0.1:21":          `scheme "ftp": use http or https`,
		"http://":                     "no host",
		"http://:8080":                `host "" is neither a name nor an IP address`,
		"http://127.0.0.1:":           "empty port",
		"http://127.0.0.1:99999":      `port "99999" is not a number`,
		"http://u:p@127.0.0.1:8080":   "no user or password in the address: the token goes in --token",
		"http://127.0.0.1:8080/?x=1":  "no query or fragment",
		"http://127.0.0.1:8080#top":   "no query or fragment",
		"http://exa mple:80":          "invalid character",
		"exa mple:80":                 `host "exa mple" is neither a name nor an IP address`,
		"-x:80":                       `host "-x"`,
	} {
		got, err := parseAddr(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseAddr(%q) = %q, %v; want an error with %q", in, got, err, want)
		}
	}
}

// TestStatementEnds: the shell runs its buffer once it ends with a ';'
// outside quotes and comments.
func TestStatementEnds(t *testing.T) {
	for text, want := range map[string]bool{
		"SHOW TABLES;\n":                        true,
		"SHOW TABLES\n":                         false,
		"SHOW TABLES;   \n\t":                   true,
		"SELECT 1;\nSELECT 2;\n":                true,
		"SELECT 1; SELECT 2\n":                  false,
		"SELECT ';'\n":                          false,
		"SELECT 'a;\n":                          false,
		"SELECT 'a;\nb';\n":                     true,
		`SELECT 'it\'s;'` + "\n":                false,
		`SELECT 'it\'s';`:                       true,
		"SELECT 'it''s;'\n":                     false,
		"SELECT 'it''s';\n":                     true,
		"SELECT \"x;\"\n":                       false,
		"SELECT `a;b` FROM t;":                  true,
		"SELECT `a\\`;":                         true, // no backslash escape in backticks
		"SELECT 1; -- done\n":                   true,
		"SELECT 1; -- done":                     true,
		"SELECT 1 -- not yet;\n":                false,
		"SELECT 1 # not yet;\n":                 false,
		"SELECT 1; # done\n":                    true,
		"SELECT 1 /* ; */\n":                    false,
		"SELECT 1; /* note */":                  true,
		"SELECT 1; /* open\n":                   false,
		"CREATE VIEW v AS /*+ SET_VAR(a=1) */;": true,
		"SELECT 5--1;":                          true, // --1 is no comment
		"SELECT 5 --1\n;":                       true,
		";":                                     true,
		"":                                      false,
	} {
		if got := statementEnds(text); got != want {
			t.Errorf("statementEnds(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestWriteProblem: a server error is printed once, with its line and a
// caret under the column, whatever precedes it on the line.
func TestWriteProblem(t *testing.T) {
	line := func(l, c int) *problem {
		return &problem{Status: 422, Title: "cannot run this SQL", Detail: "statement 0: unknown column nope", Line: l, Column: c}
	}
	for _, c := range []struct {
		name, text string
		p          *problem
		want       string
	}{
		{"second line", "CREATE VIEW v AS SELECT a,\n  nope FROM t", line(2, 3),
			"ERROR 422: statement 0: unknown column nope\nLINE 2:   nope FROM t\n          ^\n"},
		{"first column", "nope", line(1, 1), "ERROR 422: statement 0: unknown column nope\nLINE 1: nope\n        ^\n"},
		{"past the end", "SELECT (", line(1, 9), "ERROR 422: statement 0: unknown column nope\nLINE 1: SELECT (\n                ^\n"},
		{"tab kept", "\tSELECT\tnope", line(1, 9), "ERROR 422: statement 0: unknown column nope\nLINE 1: \tSELECT\tnope\n        \t      \t^\n"},
		{"wide runes", "SELECT '日本', nope", line(1, 18), "ERROR 422: statement 0: unknown column nope\nLINE 1: SELECT '日本', nope\n" + strings.Repeat(" ", 8+15) + "^\n"},
		{"CRLF", "SELECT 1;\r\nSELECT nope\r\n", line(2, 8), "ERROR 422: statement 0: unknown column nope\nLINE 2: SELECT nope\n               ^\n"},
		{"no position", "SELECT 1", &problem{Status: 400, Detail: "no SQL in the request body"}, "ERROR 400: no SQL in the request body\n"},
		{"line beyond the text", "SELECT 1", line(3, 1), "ERROR 422: statement 0: unknown column nope\n"},
		{"long line cut", "SELECT " + strings.Repeat("a, ", 40) + "nope" + strings.Repeat(", b", 40), line(1, 128),
			"ERROR 422: statement 0: unknown column nope\nLINE 1: ..." + strings.Repeat(", a", 16) + ", nope, b" + strings.Repeat(", b", 11) + "...\n" + strings.Repeat(" ", 61) + "^\n"},
	} {
		var b bytes.Buffer
		writeProblem(&b, c.p, c.text)
		if b.String() != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, b.String(), c.want)
		}
	}
}

func testAnswer(t *testing.T, body string) *answer {
	t.Helper()
	var out struct {
		Results []result `json:"results"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	return &answer{raw: []byte(body), results: out.Results}
}

// TestPrinter: the output formats of one answer: DDL confirmations, an
// aligned table (numbers right, a multi-line value on its lines, NULL),
// expanded rows, CSV with NULL apart from the empty string, and JSON as
// the server sent it.
func TestPrinter(t *testing.T) {
	body := `{"results":[{"statement":0,"kind":"create_table","name":"bids"},{"statement":1,"kind":"drop_view","name":"a,b"},` +
		`{"statement":2,"kind":"select","name":"v","columns":["auction","channel","n","ok"],"rows":[` +
		`{"auction":1,"channel":"web","n":12345678901234567890,"ok":true},{"auction":22,"channel":null,"n":-3,"ok":false},{"auction":3,"channel":"","n":0.5,"ok":null}]},` +
		`{"statement":3,"kind":"explain","columns":["plan"],"rows":[{"plan":"Stage 0\n  Source\tx\n"}]}]}`
	a := testAnswer(t, body)
	for format, want := range map[string]string{
		"table": `CREATE TABLE bids
DROP VIEW a, b

 auction | channel | n                    | ok
---------+---------+----------------------+-------
       1 | web     | 12345678901234567890 | true
      22 | NULL    |                   -3 | false
       3 |         |                  0.5 | NULL
(3 rows)

 plan
-------------
 Stage 0
   Source\tx
(1 row)
`,
		"expanded": `CREATE TABLE bids
DROP VIEW a, b

-[ RECORD 1 ]-----------------
auction | 1
channel | web
n       | 12345678901234567890
ok      | true
-[ RECORD 2 ]-----------------
auction | 22
channel | NULL
n       | -3
ok      | false
-[ RECORD 3 ]-----------------
auction | 3
channel |
n       | 0.5
ok      | NULL

-[ RECORD 1 ]-----
plan | Stage 0
     |   Source\tx
`,
		"csv": "auction,channel,n,ok\r\n1,web,12345678901234567890,true\r\n22,,-3,false\r\n3,\"\",0.5,\r\n" +
			"\nplan\r\n\"Stage 0\n  Source\tx\n\"\r\n",
	} {
		var b bytes.Buffer
		p := &printer{out: &b, format: format}
		if format == "expanded" {
			p.format, p.expanded = "table", true
		}
		if err := p.print(a); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s: got\n%s\nwant\n%s", format, b.String(), want)
		}
	}
	var b bytes.Buffer
	if err := (&printer{out: &b, format: "json"}).print(a); err != nil {
		t.Fatal(err)
	}
	var back, orig any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || json.Unmarshal([]byte(body), &orig) != nil {
		t.Fatalf("json output %q: %v", b.String(), err)
	}
	if bb, _ := json.Marshal(back); string(bb) != func() string { ob, _ := json.Marshal(orig); return string(ob) }() || !strings.Contains(b.String(), "\n  \"results\"") {
		t.Errorf("json output is not the server's body, indented:\n%s", b.String())
	}
	b.Reset()
	if err := (&printer{out: &b, format: "table"}).print(testAnswer(t, `{"results":[{"statement":0,"kind":"show","columns":["name"],"rows":[]}]}`)); err != nil {
		t.Fatal(err)
	}
	if b.String() != " name\n------\n(0 rows)\n" {
		t.Errorf("empty table: %q", b.String())
	}
}

// TestVersionText: what version prints from the build information Go
// records, and when there is none.
func TestVersionText(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/streamsql/streamsql", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(info)
	if !strings.HasPrefix(got, "streamsql v1.2.3\ncommit:   0123abcd (2026-01-02T03:04:05Z, modified)\ngo:       go1.99.1 ") {
		t.Errorf("version text:\n%s", got)
	}
	info.Main.Version, info.Settings = "(devel)", nil
	if got := versionText(info); !strings.HasPrefix(got, "streamsql (devel)\ncommit:   unknown (not recorded in this build)\ngo:       go1.99.1 ") {
		t.Errorf("version text without VCS:\n%s", got)
	}
	if got := versionText(nil); !strings.HasPrefix(got, "streamsql (unknown)\ngo:       go1.") {
		t.Errorf("version text without build info:\n%s", got)
	}
}

// TestRunUsage: help goes to stdout with exit 0, a wrong command line to
// stderr with its usage and exit 2 (in-process; cli_test.go runs the
// binary).
func TestRunUsage(t *testing.T) {
	run := func(env map[string]string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		return c.run(args), out.String(), errb.String()
	}
	for _, args := range [][]string{{"sql", "--help"}, {"sql", "-h"}, {"help", "sql"}, {"sql", "SHOW TABLES", "--help"}} {
		code, out, errs := run(nil, args...)
		if code != 0 || !strings.HasPrefix(out, "usage: streamsql sql ") || !strings.Contains(out, "-format") || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sql", "--addr", "http//127.0.0.1:1", "SHOW TABLES"}, `--addr "http//127.0.0.1:1"`},
		{[]string{"sql", "--format", "xml", "SHOW TABLES"}, `--format "xml": use table, json, csv`},
		{[]string{"sql", "--cacert", "x.pem", "SHOW TABLES"}, "--cacert and --insecure are for an https:// --addr"},
		{[]string{"sql", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"sql", "  "}, "no SQL"},
		{[]string{"version", "x"}, `version takes no arguments, got ["x"]`},
		{[]string{"bench", "--query", "q99"}, `--query "q99": use one of`},
		{[]string{"bench", "--query", "nexmark/q99"}, `--query "q99": use one of`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
	} {
		code, out, errs := run(nil, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) || !strings.Contains(errs, "usage: streamsql") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q with the usage", c.args, code, out, errs, c.want)
		}
	}
	code, _, errs := run(map[string]string{"STREAMSQL_ADDR": "http:/x"}, "sql", "SHOW TABLES")
	if code != 2 || !strings.Contains(errs, `$STREAMSQL_ADDR: --addr "http:/x"`) {
		t.Errorf("bad $STREAMSQL_ADDR: exit %d, %q", code, errs)
	}
	// The token from the environment is used, never printed by --help.
	code, out, _ := run(map[string]string{"STREAMSQL_TOKEN": "s3cret-env-token"}, "serve", "--help")
	if code != 0 || strings.Contains(out, "s3cret-env-token") {
		t.Errorf("serve --help with $STREAMSQL_TOKEN: exit %d, prints the token: %v", code, strings.Contains(out, "s3cret-env-token"))
	}
	code, out, _ = run(map[string]string{"STREAMSQL_TOKEN": "s3cret-env-token"}, "sql", "--help")
	if code != 0 || strings.Contains(out, "s3cret-env-token") {
		t.Errorf("sql --help with $STREAMSQL_TOKEN: exit %d, prints the token: %v", code, strings.Contains(out, "s3cret-env-token"))
	}
}

// TestCLIDoc: docs/cli.md names every flag of every command, and the
// shell's commands.
func TestCLIDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	flagRE := regexp.MustCompile(`(?m)^  -(\S+)`)
	for name := range commands() {
		var out bytes.Buffer
		c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: func(string) string { return "" }}
		if code := c.run([]string{name, "--help"}); code != 0 {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		if !strings.Contains(string(doc), "## streamsql "+name) {
			t.Errorf("docs/cli.md has no section for streamsql %s", name)
		}
		for _, m := range flagRE.FindAllStringSubmatch(out.String(), -1) {
			f := "`--" + m[1]
			if len(m[1]) == 1 {
				f = "`-" + m[1]
			}
			if !strings.Contains(string(doc), f) {
				t.Errorf("docs/cli.md does not name %s's flag %s", name, f)
			}
		}
	}
	for _, meta := range []string{`\x`, `\format`, `\?`, `\q`, "Ctrl-C", "Ctrl-D"} {
		if !strings.Contains(string(doc), meta) || !strings.Contains(shellHelp, meta) {
			t.Errorf("the shell's %s is missing from docs/cli.md or \\?", meta)
		}
	}
}

// TestBenchExampleNames: bench runs a Nexmark example by its name or by
// its path in the examples (nexmark/q21, as the issue names them).
func TestBenchExampleNames(t *testing.T) {
	for _, q := range []string{"q22", "nexmark/q21"} {
		var out, errb bytes.Buffer
		c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		if code := c.run([]string{"bench", "--query", q, "--events", "5000", "--checkpoint-interval", "0", "--json"}); code != 0 {
			t.Fatalf("%s: exit %d: %s", q, code, errb.String())
		}
		var res struct {
			Query string `json:"query"`
			Rows  int    `json:"result_rows"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Query != strings.TrimPrefix(q, "nexmark/") || res.Rows == 0 {
			t.Errorf("%s: %+v, %v: %s", q, res, err, out.String())
		}
	}
}
