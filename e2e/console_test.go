package e2e

// The web console in headless Chromium: Debian's chromium (installed here
// with apt-get when missing and we are root), driven by playwright-core
// (pinned in e2e/browser/package-lock.json; never a downloaded browser)
// against the real server with --token, and a second one started with
// --demo for the operator graphs of the demo views. The steps and their
// checks are in e2e/browser/console.mjs; screenshots of every page go to
// $STREAMSQL_SCREENSHOTS, else e2e/testdata/screenshots (git-ignored).

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const browserTimeout = 4 * time.Minute

func TestConsoleBrowser(t *testing.T) {
	chromium := ensureChromium(t)
	driver := ensureBrowserDriver(t)
	shots := os.Getenv("STREAMSQL_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join("testdata", "screenshots")
	}
	shots, err := filepath.Abs(shots)
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(shots)
	const token = "console-e2e-token"
	s := startServer(t, "--token", token)
	demo := startServer(t, "--demo")

	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console.mjs")
	cmd.Dir = driver
	cmd.Env = append(os.Environ(), "BASE_URL="+s.base, "DEMO_URL="+demo.base, "TOKEN="+token, "SHOTS="+shots, "CHROMIUM="+chromium)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("console.mjs (%v):\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("the browser test failed (%v); screenshots in %s", err, shots)
	}
	if !strings.Contains(out.String(), "console: all steps passed") {
		t.Fatalf("console.mjs ended without passing every step; screenshots in %s", shots)
	}
	pngs, _ := filepath.Glob(filepath.Join(shots, "*.png"))
	if len(pngs) < 10 {
		t.Errorf("%d screenshots in %s, want one per page", len(pngs), shots)
	}
	t.Logf("%d screenshots in %s", len(pngs), shots)
}

// ensureChromium returns Debian's chromium ($CHROMIUM, else
// /usr/bin/chromium), installing the package when it is missing and we are
// root. It never skips: without a browser the test fails, saying why.
func ensureChromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if os.Getenv("CHROMIUM") != "" {
		t.Fatalf("CHROMIUM=%s does not exist", path)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is missing and this test is not root, so it cannot install it: run `apt-get install -y chromium` as root (Debian's package; the test never downloads a browser)", path)
	}
	install := func(args ...string) error {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("apt-get %s: %v\n%s", strings.Join(args, " "), err, lastBytes(b, 4096))
		}
		return err
	}
	t.Logf("%s is missing: apt-get install -y chromium", path)
	if install("install", "-y", "-q", "chromium") != nil {
		if err := install("update", "-q"); err != nil {
			t.Fatalf("apt-get update failed (%v): cannot install Debian's chromium for the browser test", err)
		}
		if err := install("install", "-y", "-q", "chromium"); err != nil {
			t.Fatalf("apt-get install -y chromium failed (%v): the browser test needs Debian's chromium", err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("apt-get installed chromium but %s is still missing", path)
	}
	return path
}

// ensureBrowserDriver returns e2e/browser with its node_modules installed
// by `npm ci` from the pinned lock, kept between runs while the installed
// playwright-core is the locked version.
func ensureBrowserDriver(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("browser")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: the browser test drives chromium with playwright-core on Node.js")
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if err != nil {
		t.Fatalf("e2e/browser/package-lock.json: %v", err)
	}
	want := lock.Packages["node_modules/playwright-core"].Version
	var have struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err == nil && json.Unmarshal(b, &have) == nil && have.Version == want {
		return dir
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in e2e/browser: %v\n%s", err, lastBytes(out, 4096))
	}
	return dir
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
