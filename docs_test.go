package streamsql_test

// The documents stand on their own: every relative link of README.md,
// DESIGN.md, RELIABILITY.md, BENCHMARKS.md and docs/*.md names a file of
// the repository (and, with #anchor, a heading that exists there), and
// none points outside it: no link out of the root, no absolute path, and
// no mention of the design contract the repository grew from, which a
// clone does not have.

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// documents are the Markdown files checked, relative to the root.
func documents(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "DESIGN.md", "RELIABILITY.md", "BENCHMARKS.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append(docs, more...)
}

// mdDoc is a parsed document: its links and its headings' anchors.
type mdDoc struct {
	links   []mdLink
	anchors map[string]bool
}

type mdLink struct {
	dest string
	line int
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

func parseDoc(t *testing.T, file string) mdDoc {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	root := markdown.Parser().Parse(text.NewReader(src))
	d := mdDoc{anchors: map[string]bool{}}
	seen := map[string]int{}
	lineOf := func(n ast.Node) int {
		// The line of the nearest block holding n.
		for ; n != nil; n = n.Parent() {
			if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
				return 1 + strings.Count(string(src[:n.Lines().At(0).Start]), "\n")
			}
		}
		return 0
	}
	err = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			slug := githubAnchor(plainText(n, src))
			if k := seen[slug]; k > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
		case *ast.Link:
			d.links = append(d.links, mdLink{string(n.Destination), lineOf(n)})
		case *ast.Image:
			d.links = append(d.links, mdLink{string(n.Destination), lineOf(n)})
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// plainText is a heading's text as GitHub reads it for its anchor: the
// text of its inlines, code spans included.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Value(src))
			case *ast.String:
				b.Write(c.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// githubAnchor is the id GitHub gives a heading: lower case, every
// character but letters, digits, '-', '_' and spaces dropped, spaces made
// '-' (a repeated heading gets -1, -2, ... after it: parseDoc).
func githubAnchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestGitHubAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"Limits and safety":                   "limits-and-safety",
		"Exactly-once through crashes":        "exactly-once-through-crashes",
		"`POST /v1/checkpoints`":              "post-v1checkpoints",
		"Backups: stop, copy, start":          "backups-stop-copy-start",
		"GET /v1/queries/{name}/results":      "get-v1queriesnameresults",
		"Memory and disk: what uses them, 2x": "memory-and-disk-what-uses-them-2x",
	} {
		if got := githubAnchor(in); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", in, got, want)
		}
	}
}

// forbidden are texts no document may contain: paths of the machine the
// project was written on and the design contract outside the repository.
var forbidden = []string{"/work/", "SPEC.md", "SPEC section", "shared/design"}

func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	parsed := map[string]mdDoc{}
	doc := func(file string) mdDoc {
		if d, ok := parsed[file]; ok {
			return d
		}
		d := parseDoc(t, file)
		parsed[file] = d
		return d
	}
	checked := 0
	for _, file := range documents(t) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, f := range forbidden {
				if strings.Contains(line, f) {
					t.Errorf("%s:%d mentions %q, which is outside the repository: %s", file, i+1, f, strings.TrimSpace(line))
				}
			}
		}
		for _, l := range doc(file).links {
			checked++
			where := fmt.Sprintf("%s:%d: link %q", file, l.line, l.dest)
			u, err := url.Parse(l.dest)
			if err != nil {
				t.Errorf("%s: not a URL: %v", where, err)
				continue
			}
			switch {
			case u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "mailto":
				continue // a page on the web, not a file
			case u.Scheme != "" || u.Host != "":
				t.Errorf("%s points outside the repository (scheme %q)", where, u.Scheme)
				continue
			case strings.HasPrefix(u.Path, "/"):
				t.Errorf("%s is an absolute path: links are relative to the document", where)
				continue
			}
			target := file
			if u.Path != "" {
				target = path.Join(path.Dir(filepath.ToSlash(file)), u.Path)
				abs := filepath.Join(root, filepath.FromSlash(target))
				if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Errorf("%s leads out of the repository (to %s)", where, target)
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s: no such file in the repository: %s", where, target)
					continue
				}
			}
			if u.Fragment == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s: an anchor into %s, which is not Markdown", where, target)
				continue
			}
			if !doc(target).anchors[u.Fragment] {
				t.Errorf("%s: %s has no heading with anchor #%s", where, target, u.Fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the parser read nothing")
	}
}
