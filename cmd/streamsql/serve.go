package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	httpapi "github.com/streamsql/streamsql/http"
	"github.com/streamsql/streamsql/pgwire"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/web"
)

// parseSize parses 64MiB, 1KiB, 4096 and the like: a positive size.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	num, mult := s, int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("bad size %q (use e.g. 64MiB, 512KiB or 4096)", s)
	}
	return n * mult, nil
}

// sizeFlag is a flag holding a size (parseSize).
type sizeFlag struct{ n int64 }

func (f *sizeFlag) String() string { return fmtSize(f.n) }

func (f *sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	f.n = n
	return nil
}

// fmtSize writes a size as parseSize reads it, in its largest exact unit.
func fmtSize(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

const serveUsage = `usage: streamsql serve [flags]

Runs the server. It listens on loopback unless told otherwise; any other
address needs --token. Without --token it answers only requests whose
Host is loopback or named by --allowed-host (421 otherwise). With
--tls-cert and --tls-key it serves HTTPS instead of HTTP. The limits below
answer a request beyond them with an error (application/problem+json) and
keep serving: --max-body 413, --max-row-size 413 naming the row,
--max-json-depth 400 naming the row and column, --max-streams 429 with
Retry-After, --body-timeout 408, --max-header-bytes 431, --header-timeout
closes the connection. docs/operations.md, "Limits and safety", has the
whole list; docs/cli.md every flag.
`

// stallOption maps --stall-timeout to queries.Config.StallTimeout: 0
// there is the default, never is negative.
func stallOption(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func (c *cli) serve(args []string) error {
	cmd := newCommand("serve", serveUsage)
	fs := cmd.fs
	addr := fs.String("addr", "127.0.0.1:8080", "listen address; anything but loopback (0.0.0.0, [::], an empty host, a name resolving elsewhere) requires --token")
	data := fs.String("data", "./streamsql-data", "data directory (embedded Badger stores)")
	ckpt := fs.Duration("checkpoint-interval", time.Second, "checkpoint interval; 0 turns checkpoints off (barriers still flow)")
	emit := fs.Duration("emit-interval", 200*time.Millisecond, "barrier interval: how often changes are emitted")
	token := fs.String("token", "", "bearer token required on every API request ($STREAMSQL_TOKEN when not given)")
	var allowedHosts []string
	fs.Func("allowed-host", "without --token, a `name[,name]` (optionally name:port) the server answers besides localhost, 127.0.0.1, [::1] and the host of --addr: requests with another Host get 421 (DNS rebinding); may be repeated", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if err := httpapi.CheckAllowedHost(strings.TrimSpace(h)); err != nil {
				return err
			}
			allowedHosts = append(allowedHosts, strings.TrimSpace(h))
		}
		return nil
	})
	maxBody := &sizeFlag{httpapi.DefaultMaxBody}
	fs.Var(maxBody, "max-body", "largest request body (a `size` such as 64MiB), as sent and, with Content-Encoding: gzip, decompressed (413 beyond)")
	maxRow := &sizeFlag{value.DefaultMaxRowSize}
	fs.Var(maxRow, "max-row-size", "largest ingest row, as JSON text: a `size` (413 naming the row)")
	maxDepth := fs.Int("max-json-depth", value.DefaultMaxJSONDepth, "deepest nesting of JSON in ingest rows, counting a JSON array body and the row (400 naming row and column)")
	maxStreams := fs.Int("max-streams", httpapi.DefaultMaxStreams, "most long-lived requests open at once: GET /v1/queries/{name}/changes streams, POST /v1/checkpoints waits, CPU profiles (429 with Retry-After beyond)")
	maxHeader := &sizeFlag{64 << 10}
	fs.Var(maxHeader, "max-header-bytes", "largest request line and headers: a `size` (431 beyond)")
	headerTimeout := fs.Duration("header-timeout", 10*time.Second, "time a client has to send a request's headers (the connection is closed beyond)")
	bodyTimeout := fs.Duration("body-timeout", httpapi.DefaultBodyTimeout, "time a client has to send a request's body (408 beyond)")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "how long an idle keep-alive connection is kept open")
	idem := fs.Duration("idempotency-window", 24*time.Hour, "how long an Idempotency-Key is remembered")
	sessionTTL := fs.Duration("session-ttl", httpapi.DefaultSessionTTL, "with --token, how long a console login lasts (logout and a restart end it sooner)")
	demo := fs.Bool("demo", false, "create throttled Nexmark tables and example views at the first start")
	stall := fs.Duration("stall-timeout", queries.DefaultStallTimeout, "a query whose task works on one batch for longer, waiting for neither input nor output, is failed as not answering (0: never)")
	diskReserve := fs.String("disk-reserve", "256MiB", "free space kept on the data directory's file system: ingest is refused (507) below it, checkpoints below half of it; 0 turns the check off")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this PEM certificate `file` (the chain, leaf first); needs --tls-key")
	tlsKey := fs.String("tls-key", "", "the PEM private key `file` of --tls-cert")
	pgAddr := fs.String("pg-addr", "", "also serve the PostgreSQL wire protocol on this `address` (off unless given; docs/pgwire.md): the bind rule of --addr; with --token the password is the token, asked for with SCRAM-SHA-256")
	pgCleartext := fs.Bool("pg-cleartext-password", false, "over TLS, ask PostgreSQL clients for the token in cleartext instead of SCRAM-SHA-256 (for clients without SCRAM; without TLS it is always SCRAM)")
	pgMaxMessage := &sizeFlag{pgwire.DefaultMaxMessage}
	fs.Var(pgMaxMessage, "pg-max-message", "largest PostgreSQL protocol message a client may send: a `size` (the connection is closed with an error beyond)")
	rest, err := cmd.parse(c, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cmd.fail("serve takes no arguments, got %q", rest)
	}
	if !flagSet(fs, "token") {
		*token = c.getenv("STREAMSQL_TOKEN") // not the flag's default: --help would print it
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return cmd.fail("--tls-cert and --tls-key go together: give both or neither")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
		zero bool // 0 is allowed
	}{{"checkpoint-interval", *ckpt, true}, {"emit-interval", *emit, false}, {"header-timeout", *headerTimeout, false},
		{"body-timeout", *bodyTimeout, false}, {"idle-timeout", *idleTimeout, false}, {"idempotency-window", *idem, false},
		{"session-ttl", *sessionTTL, false}} {
		if d.v < 0 || d.v == 0 && !d.zero {
			return cmd.fail("--%s must be a positive duration, not %s", d.name, d.v)
		}
	}
	reserve := int64(-1) // 0: no checks
	if *diskReserve != "0" {
		var err error
		if reserve, err = parseSize(*diskReserve); err != nil {
			return cmd.fail("--disk-reserve: %w", err)
		}
	}
	if *maxDepth < 2 {
		return cmd.fail("--max-json-depth must be at least 2 (a JSON array body and its row objects), not %d", *maxDepth)
	}
	if *maxStreams < 1 {
		return cmd.fail("--max-streams must be at least 1, not %d", *maxStreams)
	}
	if maxHeader.n > math.MaxInt32 {
		return cmd.fail("--max-header-bytes %s is too large", maxHeader)
	}
	if err := checkToken(*token); err != nil {
		return cmd.fail("%w", err)
	}
	if err := checkBind(*addr, true, nil); err != nil {
		return cmd.fail("%w", err) // malformed (exit 2)
	}
	if err := checkBind(*addr, *token != "", net.DefaultResolver.LookupIPAddr); err != nil {
		return err // refused for what it is (exit 1)
	}
	if *pgAddr != "" {
		if err := checkBindFlag("--pg-addr", *pgAddr, true, nil); err != nil {
			return cmd.fail("%w", err)
		}
		if err := checkBindFlag("--pg-addr", *pgAddr, *token != "", net.DefaultResolver.LookupIPAddr); err != nil {
			return err
		}
		if pgMaxMessage.n > math.MaxInt32 {
			return cmd.fail("--pg-max-message %s is too large", pgMaxMessage)
		}
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" {
		cert, err := loadKeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if host, _, _ := net.SplitHostPort(*addr); host != "" && net.ParseIP(host) == nil {
		// --addr names the server (checkBind saw it resolve to loopback
		// without a token): requests to that name are meant for it.
		allowedHosts = append(allowedHosts, host)
	}
	logger := slog.New(slog.NewTextHandler(redactWriter{c.stderr}, nil))
	if *token != "" && len(*token) < 16 {
		logger.Warn("the --token is short: anyone who can reach the server may guess it; use 16 or more random characters")
	}
	// Listen before opening the data directory: a port in use is found
	// at once, not after a recovery. Connections wait in the backlog until
	// the catalog is loaded and the API serves.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", *addr, err)
	}
	defer ln.Close()
	if a, ok := ln.Addr().(*net.TCPAddr); *token == "" && (!ok || !a.IP.IsLoopback()) {
		return fmt.Errorf("--addr %s: listening on %s, which is not loopback: set --token", *addr, ln.Addr())
	}
	var pgLn net.Listener
	if *pgAddr != "" {
		if pgLn, err = net.Listen("tcp", *pgAddr); err != nil {
			return fmt.Errorf("--pg-addr %s: %w", *pgAddr, err)
		}
		defer pgLn.Close()
		if a, ok := pgLn.Addr().(*net.TCPAddr); *token == "" && (!ok || !a.IP.IsLoopback()) {
			return fmt.Errorf("--pg-addr %s: listening on %s, which is not loopback: set --token", *pgAddr, pgLn.Addr())
		}
	}
	eng, err := queries.Open(queries.Config{DataDir: *data, CheckpointInterval: *ckpt, EmitInterval: *emit, IdempotencyWindow: *idem, DiskReserve: reserve, Logger: logger,
		Limits: value.Limits{MaxRowSize: int(min(maxRow.n, math.MaxInt32)), MaxDepth: *maxDepth}, StallTimeout: stallOption(*stall)})
	if err != nil {
		return err
	}
	defer func() {
		// SIGTERM: every query takes a final checkpoint, so the next start
		// resumes without replaying anything.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		eng.Close(ctx)
		logger.Info("stopped")
	}()
	if *demo {
		if err := eng.Demo(context.Background()); err != nil {
			logger.Warn("demo setup", "err", err)
		}
	}
	// No ReadTimeout or WriteTimeout: /changes streams for as long as its
	// reader stays; bodies have --body-timeout instead.
	srv := &http.Server{
		Handler: httpapi.New(eng, httpapi.Options{Token: *token, AllowedHosts: allowedHosts, MaxBody: maxBody.n, MaxStreams: *maxStreams, BodyTimeout: *bodyTimeout,
			SessionTTL: *sessionTTL, Logger: logger, Web: web.FS()}),
		ReadHeaderTimeout: *headerTimeout,
		IdleTimeout:       *idleTimeout,
		MaxHeaderBytes:    int(maxHeader.n),
		TLSConfig:         tlsConfig,
		// net/http's own complaints (a failed TLS handshake, a panic) go
		// to the server log, redacted like the rest.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 2)
	var pgSrv *pgwire.Server
	if pgLn != nil {
		if pgSrv, err = pgwire.New(eng, pgwire.Options{Token: *token, TLS: tlsConfig, CleartextPassword: *pgCleartext, MaxMessage: int(pgMaxMessage.n), Logger: logger}); err != nil {
			return fmt.Errorf("--pg-addr: %w", err)
		}
		logger.Info("streamsql serving the PostgreSQL protocol", "pg_addr", pgLn.Addr().String())
		go func() {
			if err := pgSrv.Serve(pgLn); err != nil && !errors.Is(err, pgwire.ErrServerClosed) {
				errc <- fmt.Errorf("--pg-addr: %w", err)
			}
		}()
	}
	logger.Info("streamsql serving", "addr", ln.Addr().String(), "url", scheme+"://"+ln.Addr().String(), "data", *data)
	go func() {
		if tlsConfig != nil {
			errc <- srv.ServeTLS(ln, "", "") // the certificate is in TLSConfig
			return
		}
		errc <- srv.Serve(ln)
	}()
	var runErr error
	select {
	case runErr = <-errc:
	case <-ctx.Done():
		logger.Info("shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pgSrv != nil {
		// Its listener and connections close; statements running on them
		// have their contexts cancelled.
		pgSrv.Close(sctx)
	}
	if runErr != nil {
		srv.Close()
		return runErr
	}
	return srv.Shutdown(sctx)
}

// loadKeyPair reads the certificate and key of --tls-cert and --tls-key,
// naming the file that is wrong.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key: %w", err)
	}
	if err := checkPEM(certPEM, "CERTIFICATE"); err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert %s: %w", certFile, err)
	}
	if err := checkPEM(keyPEM, "PRIVATE KEY"); err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key %s: %w", keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert %s with --tls-key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// checkPEM checks that b holds a PEM block whose type ends with kind
// ("PRIVATE KEY" covers "EC PRIVATE KEY" and "RSA PRIVATE KEY") and,
// for a certificate, that it parses.
func checkPEM(b []byte, kind string) error {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return fmt.Errorf("no PEM block of type %s in it", kind)
		}
		if !strings.HasSuffix(block.Type, kind) {
			continue
		}
		if kind == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(block.Bytes); err != nil {
				return fmt.Errorf("its certificate does not parse: %w", err)
			}
		}
		return nil
	}
}

// redactWriter is the server log's writer: it redacts the password of
// every connection string (plan.RedactSecrets) in what it writes (an
// error quoting a statement or a driver's message). slog writes a record
// in one Write, so a secret is never split between two.
type redactWriter struct{ w io.Writer }

func (r redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, plan.RedactSecrets(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// checkToken refuses a token that cannot travel in an Authorization
// header as given: spaces, control characters, non-ASCII.
func checkToken(token string) error {
	for _, c := range []byte(token) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("--token must be printable ASCII without spaces (it travels in an Authorization header)")
		}
	}
	return nil
}

// checkBind refuses an --addr that would listen beyond loopback without a
// token: an empty host or 0.0.0.0 or [::] (every interface), another
// address, or a name that resolves to anything but loopback addresses.
// A bad port is refused here too, before the data directory is opened.
// lookup resolves names (net.DefaultResolver.LookupIPAddr).
func checkBind(addr string, haveToken bool, lookup func(context.Context, string) ([]net.IPAddr, error)) error {
	return checkBindFlag("--addr", addr, haveToken, lookup)
}

// checkBindFlag is checkBind of the address of flag (--addr, --pg-addr).
func checkBindFlag(flag, addr string, haveToken bool, lookup func(context.Context, string) ([]net.IPAddr, error)) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %s: %w (use host:port, e.g. 127.0.0.1:8080)", flag, addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%s %s: bad port: %w", flag, addr, err)
	}
	if haveToken {
		return nil
	}
	all := fmt.Errorf("%s %s listens on every interface, not only loopback: set --token (or listen on 127.0.0.1)", flag, addr)
	if host == "" {
		return all
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		addrs, err := lookup(ctx, host)
		if err != nil {
			return fmt.Errorf("%s %s: cannot resolve %s to check that it is loopback: %w", flag, addr, host, err)
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		switch {
		case ip.IsUnspecified():
			return all
		case !ip.IsLoopback():
			if ip.String() != host {
				return fmt.Errorf("%s %s: %s resolves to %s, which is not loopback: set --token (or listen on 127.0.0.1)", flag, addr, host, ip)
			}
			return fmt.Errorf("%s %s is not loopback: set --token (or listen on 127.0.0.1)", flag, addr)
		}
	}
	return nil
}
