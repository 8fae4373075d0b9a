package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// sourceHash hashes the console's sources as web/build.sh does: every file
// under console/ but node_modules and dot-files, in byte order of its path,
// as "path\nsha256(content)\n".
func sourceHash(root string) (string, []string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || rel == "node_modules" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s\n%s\n", f, hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(h.Sum(nil)), files, nil
}

// TestBundleFresh fails when web/static was not rebuilt after a change
// under web/console: run web/build.sh and commit web/static.
func TestBundleFresh(t *testing.T) {
	want, files, err := sourceHash("console")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || !contains(files, "package-lock.json") || !contains(files, "src/main.ts") {
		t.Fatalf("console sources not found (have %v)", files)
	}
	got, err := os.ReadFile("static/.source-hash")
	if err != nil {
		t.Fatalf("web/static has no .source-hash: run web/build.sh (%v)", err)
	}
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("web/static is stale: it was built from sources hashing to %s, web/console now hashes to %s; run web/build.sh and commit web/static",
			strings.TrimSpace(string(got)), want)
	}
}

// TestBundleComplete checks that the embedded index.html loads only files
// that are embedded, from the server itself (the console works offline).
func TestBundleComplete(t *testing.T) {
	index, err := fs.ReadFile(FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(index), -1)
	assets := 0
	for _, m := range refs {
		ref := m[1]
		switch {
		case strings.HasPrefix(ref, "data:"):
		case strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"):
			if _, err := fs.Stat(FS(), strings.TrimPrefix(ref, "/")); err != nil {
				t.Errorf("index.html refers to %s, which is not embedded", ref)
			}
			assets++
		default:
			t.Errorf("index.html refers to %s, outside the server", ref)
		}
	}
	if assets < 2 {
		t.Errorf("index.html loads %d assets, want the script and the style sheet:\n%s", assets, index)
	}
	err = fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		for _, cdn := range []string{"unpkg.com", "cdn.jsdelivr", "cdnjs.", "googleapis.com"} {
			if strings.Contains(string(b), cdn) {
				t.Errorf("%s mentions %s: the console must work offline", p, cdn)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBundleLicenses: the licences shipped with the bundle
// (static/THIRD-PARTY-LICENSES.txt, written by build.sh from the packages
// npm installed) name each package of the lock file that is not a build
// tool, at its locked version.
func TestBundleLicenses(t *testing.T) {
	lock, err := os.ReadFile(filepath.Join("console", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
			Dev     bool   `json:"dev"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		t.Fatal(err)
	}
	notices, err := fs.ReadFile(static, "static/THIRD-PARTY-LICENSES.txt")
	if err != nil {
		t.Fatalf("the bundle ships no licences (run web/build.sh): %v", err)
	}
	n := 0
	for path, p := range l.Packages {
		if path == "" || p.Dev {
			continue
		}
		name := path[strings.LastIndex(path, "node_modules/")+len("node_modules/"):]
		if !strings.Contains(string(notices), "==== "+name+" "+p.Version+" (") {
			t.Errorf("THIRD-PARTY-LICENSES.txt lacks %s %s (run web/build.sh)", name, p.Version)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the lock file lists no bundled packages")
	}
}
