package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestCheckBind: without a token only loopback is served: every
// interface (an empty host, 0.0.0.0, [::]), another address, or a name
// resolving to one is refused; with a token anything goes. A bad port is
// refused either way.
func TestCheckBind(t *testing.T) {
	hosts := map[string][]string{
		"localhost":  {"127.0.0.1", "::1"},
		"db.example": {"10.1.2.3"},
		"mixed":      {"127.0.0.1", "192.0.2.1"},
		"any":        {"0.0.0.0"},
	}
	lookup := func(_ context.Context, host string) ([]net.IPAddr, error) {
		ips, ok := hosts[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		var out []net.IPAddr
		for _, ip := range ips {
			out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
		}
		return out, nil
	}
	for addr, want := range map[string]string{
		"127.0.0.1:8080":        "",
		"127.0.0.2:8080":        "",
		"[::1]:8080":            "",
		"localhost:8080":        "",
		"[::ffff:127.0.0.1]:80": "",
		":8080":                 "listens on every interface",
		"0.0.0.0:8080":          "listens on every interface",
		"[::]:8080":             "listens on every interface",
		"any:8080":              "listens on every interface",
		"192.0.2.7:8080":        "--addr 192.0.2.7:8080 is not loopback: set --token",
		"db.example:8080":       "db.example resolves to 10.1.2.3, which is not loopback: set --token",
		"mixed:8080":            "mixed resolves to 192.0.2.1, which is not loopback",
		"nowhere:8080":          "cannot resolve nowhere",
		"127.0.0.1":             "missing port in address",
		"127.0.0.1:99999":       "bad port",
		"127.0.0.1:http-nope":   "bad port",
	} {
		err := checkBind(addr, false, lookup)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("checkBind(%q) without a token: %v, want %q", addr, err, want)
		}
	}
	for addr, ok := range map[string]bool{"0.0.0.0:8080": true, ":8080": true, "db.example:80": true, "[::]:80": true, "0.0.0.0:99999": false} {
		if err := checkBind(addr, true, lookup); (err == nil) != ok {
			t.Errorf("checkBind(%q) with a token: %v", addr, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"64MiB": 64 << 20, "1KiB": 1024, "4096": 4096, "2GiB": 2 << 30, "1KB": 1000, "7B": 7} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
		if fmtSize(want) != s && want%1024 == 0 {
			if back, _ := parseSize(fmtSize(want)); back != want {
				t.Errorf("fmtSize(%d) = %q does not parse back", want, fmtSize(want))
			}
		}
	}
	for _, s := range []string{"", "0", "-1MiB", "abc", "1.5MiB", "MiB", "9999999999GiB", "64 MiB", "64mib"} {
		if n, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", s, n)
		}
	}
}

func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{"": true, "s3cret-TOKEN_0123456789": true, "a b": false, "tab\t": false, "é": false, "x\x7f": false} {
		if err := checkToken(tok); (err == nil) != ok {
			t.Errorf("checkToken(%q): %v", tok, err)
		}
	}
}

// TestRedactWriter: the server log's lines lose their passwords, whole.
func TestRedactWriter(t *testing.T) {
	var b strings.Builder
	logger := slog.New(slog.NewTextHandler(redactWriter{&b}, nil))
	logger.Warn("sink unavailable", "err", errors.New("connect postgres://u:l0g-S3cret@h/db: host=h password='a b' refused"))
	if strings.Contains(b.String(), "l0g-S3cret") || strings.Contains(b.String(), "a b") || !strings.Contains(b.String(), "REDACTED") {
		t.Errorf("log line %q", b.String())
	}
}
