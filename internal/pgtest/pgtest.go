package pgtest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is one PostgreSQL server.
type Server struct {
	Dir  string // the cluster's directory (data/ and the log)
	Port int
	bin  string
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan error
}

// BinDir finds the PostgreSQL server binaries: $PG_BIN, else the newest
// /usr/lib/postgresql/<version>/bin with initdb and postgres in it.
func BinDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin or PATH; install postgresql or set PG_BIN")
}

func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start creates a cluster in a new temporary directory and starts it.
func Start() (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin}
	if err := s.init(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) init() error {
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(s.Dir, uid, gid); err != nil {
			return err
		}
	}
	cmd := exec.Command(filepath.Join(s.bin, "initdb"), "-D", filepath.Join(s.Dir, "data"),
		"-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = s.procAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	return l.Close()
}

// Start starts the server (after Stop or Kill) and waits until it
// accepts connections.
func (s *Server) Start() error {
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.Dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer logf.Close()
	// fsync off: a killed server keeps what it committed in the page
	// cache (these tests never lose the machine); synchronous_commit
	// stays on, so a commit is in the WAL before it is acknowledged.
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.Dir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(s.Port),
		"-c", "unix_socket_directories="+s.Dir, "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=50")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = s.procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.Query("SELECT 1"); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("pgtest: server not ready after 30s: %v\n%s", err, s.Log())
		}
		select {
		case err := <-s.done:
			s.cmd = nil
			return fmt.Errorf("pgtest: postgres exited: %v\n%s", err, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the server down (fast shutdown: sessions are disconnected,
// open transactions rolled back) and waits for it.
func (s *Server) Stop() error { return s.signal(syscall.SIGINT) }

// Kill stops the server at once (immediate shutdown: no checkpoint; the
// next start recovers from the WAL).
func (s *Server) Kill() error { return s.signal(syscall.SIGQUIT) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil {
		return nil
	}
	s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	s.Kill()
	return os.RemoveAll(s.Dir)
}

// DSN is the connection string of database db ("postgres" when empty).
func (s *Server) DSN(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Query runs sql with psql (over TCP) and returns the rows of its last
// statement as CSV fields (NULL as the empty string).
func (s *Server) Query(sql string) ([][]string, error) {
	psql := filepath.Join(s.bin, "psql")
	if _, err := os.Stat(psql); err != nil {
		psql = "psql"
	}
	cmd := exec.Command(psql, "-X", "-q", "-t", "--csv", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres", "-d", "postgres", "-c", sql)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("psql: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return csv.NewReader(&out).ReadAll()
}

// Exec runs sql with psql, ignoring its output.
func (s *Server) Exec(sql string) error {
	_, err := s.Query(sql)
	return err
}

// Log returns the server's log (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// Freeze stops the server and every one of its processes with SIGSTOP:
// connections stay open and new ones are accepted by the kernel, but
// nothing answers (a hung database, not a dead one). Thaw resumes them.
func (s *Server) Freeze() error { return s.signalAll(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() error { return s.signalAll(syscall.SIGCONT) }

// signalAll sends sig to the postmaster and its children (Linux: read
// from /proc).
func (s *Server) signalAll(sig syscall.Signal) error {
	if s.cmd == nil {
		return errors.New("pgtest: server not running")
	}
	pid := s.cmd.Process.Pid
	pids := []int{pid}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("pgtest: list processes: %w", err)
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgtest: signal %d: %w", p, err)
		}
	}
	return nil
}
