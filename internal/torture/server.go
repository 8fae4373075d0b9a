package torture

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is the streamsql binary run as a process on one data directory;
// each start listens on a new free loopback port.
type server struct {
	bin, data, logPath string
	checkpoint         time.Duration
	client             *http.Client

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	base   string // http://127.0.0.1:port of the current process
	starts int
}

const (
	startTimeout   = 90 * time.Second
	requestTimeout = 30 * time.Second
)

// Build builds the server binary into dir and returns its path. It runs
// the go command in the current directory, which must be inside this
// module.
func Build(dir string) (string, error) {
	out := filepath.Join(dir, "streamsql")
	cmd := exec.Command("go", "build", "-o", out, "github.com/streamsql/streamsql/cmd/streamsql")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build streamsql: %v\n%s", err, b)
	}
	return out, nil
}

func newServer(bin, dir string, checkpoint time.Duration) *server {
	return &server{bin: bin, data: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "server.log"), checkpoint: checkpoint,
		client: &http.Client{Timeout: requestTimeout}}
}

// start launches the process with fault (a STREAMSQL_FAULT value, "" for
// none), without waiting for it to serve.
func (s *server) start(fault string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("server already running")
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	s.starts++
	fmt.Fprintf(log, "\n===== torture: start #%d on %s at %s (STREAMSQL_FAULT=%q) =====\n", s.starts, addr, time.Now().Format(time.RFC3339Nano), fault)
	cmd := exec.Command(s.bin, "serve", "--addr", addr, "--data", s.data, "--checkpoint-interval", s.checkpoint.String())
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STREAMSQL_FAULT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if fault != "" {
		cmd.Env = append(cmd.Env, "STREAMSQL_FAULT="+fault)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		log.Close()
		close(exited)
	}()
	s.cmd, s.exited, s.base = cmd, exited, "http://"+addr
	return nil
}

// running returns the current process's exit channel, nil when none.
func (s *server) running() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited
}

// reap forgets a process that has exited.
func (s *server) reap() *os.ProcessState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps *os.ProcessState
	if s.cmd != nil {
		ps = s.cmd.ProcessState
	}
	s.cmd, s.exited = nil, nil
	return ps
}

// kill SIGKILLs the process and waits until it is gone.
func (s *server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	s.reap()
}

// waitHealthy waits until /healthz answers 200; an error if the process
// exits first or startTimeout passes.
func (s *server) waitHealthy() error {
	exited := s.running()
	if exited == nil {
		return fmt.Errorf("server not running")
	}
	health := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("server exited before /healthz answered; log:\n%s", s.logTail(4000))
		default:
		}
		if resp, err := health.Get(s.url("/healthz")); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET /healthz: no 200 within %v", startTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) url(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base + path
}

// do sends one request and returns the status and body.
func (s *server) do(method, path string, header http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, s.url(path), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// sql runs statements and fails on anything but 200.
func (s *server) sql(stmts string) error {
	status, body, err := s.do("POST", "/v1/sql", http.Header{"Content-Type": {"application/sql"}}, []byte(stmts))
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("POST /v1/sql: %d %s", status, body)
	}
	return nil
}

// logTail returns the last n bytes of the server log.
func (s *server) logTail(n int64) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// logSize is the log's length, for logSince.
func (s *server) logSize() int64 {
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns the log from offset off on.
func (s *server) logSince(off int64) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	f.Seek(off, io.SeekStart)
	b, _ := io.ReadAll(f)
	return string(b)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
