package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/runtime/sink"
)

// childEnv tells a test binary it is TestFaultPoints' child: "ADDR TOPIC".
const childEnv = "STREAMSQL_KAFKASINK_FAULT_CHILD"

// TestFaultPoints crashes a child process at the sink's fault points (the
// broker lives on in this process) and checks what Kafka kept: nothing
// of the epoch before the commit, the whole epoch with its progress
// record after it.
func TestFaultPoints(t *testing.T) {
	if os.Getenv("STREAMSQL_FAULT") != "" {
		t.Skip("STREAMSQL_FAULT is set for this process")
	}
	_, addr := newCluster(t)
	for i, point := range []string{"sink.before_commit", "sink.after_commit"} {
		t.Run(point, func(t *testing.T) {
			topic := fmt.Sprintf("crash%d", i)
			cmd := exec.Command(os.Args[0], "-test.run=^TestFaultChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "STREAMSQL_FAULT="+point+"@2", fmt.Sprintf("%s=%s %s", childEnv, addr, topic))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want it killed at %s\n%s", err, point, out)
			}
			if !strings.Contains(string(out), "fault: crashing at "+point) {
				t.Fatalf("child output:\n%s", out)
			}
			// The epoch's records reached the broker either way.
			if u := readTopic(t, addr, topic, false); len(u) != 3 {
				t.Fatalf("read_uncommitted: %v, want the 3 records of epochs 1 and 2", recStrings(u))
			}
			spec := testSpec(addr, topic, true)
			p := open(t, spec)
			n := committed(t, p) // fences the dead child's producer
			got := readTopic(t, addr, topic, true)
			epochs := progressRecs(t, addr, topic+".streamsql-progress", spec.SinkID)
			endOffsets(t, addr, topic, topic+".streamsql-progress") // nothing left open
			if point == "sink.before_commit" {
				if n != 1 || len(got) != 1 || !reflect.DeepEqual(epochs, []uint64{1}) {
					t.Fatalf("crash before the commit: Committed %d, records %v, progress %v; want epoch 1's 1 record", n, recStrings(got), epochs)
				}
				// The runtime publishes epoch 2 again.
				commit(t, p, 2, upsert(row(2, "b", 2, 2, true, 2)), upsert(row(3, "c", 3, 3, true, 3)))
				got = readTopic(t, addr, topic, true)
			} else if n != 2 || len(got) != 3 || !reflect.DeepEqual(epochs, []uint64{1, 2}) {
				t.Fatalf("crash after the commit: Committed %d, records %v, progress %v; want epoch 2's 3 records", n, recStrings(got), epochs)
			}
			if err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(9, "x", 0, 0, true, 0))}); !errors.Is(err, sink.ErrCommitted) {
				t.Fatalf("CommitEpoch(2) after recovery: %v, want ErrCommitted", err)
			}
			if !sameSet(recStrings(got), []string{kv(1, "a", 1, 1, true, 1), kv(2, "b", 2, 2, true, 2), kv(3, "c", 3, 3, true, 3)}) {
				t.Fatalf("records: %v", recStrings(got))
			}
		})
	}
}

func TestFaultChild(t *testing.T) {
	v := os.Getenv(childEnv)
	if v == "" {
		t.Skip("run by TestFaultPoints")
	}
	fault.ArmFromEnv() // as cmd/streamsql does at its start
	f := strings.Fields(v)
	p := open(t, testSpec(f[0], f[1], true))
	if n := committed(t, p); n != 0 {
		t.Fatalf("Committed = %d", n)
	}
	// The point is armed for its second hit: epoch 1 commits, epoch 2
	// crashes.
	commit(t, p, 1, upsert(row(1, "a", 1, 1, true, 1)))
	commit(t, p, 2, upsert(row(2, "b", 2, 2, true, 2)), upsert(row(3, "c", 3, 3, true, 3)))
	t.Fatal("survived the fault point")
}

// freePort is a loopback port nothing listens on (now).
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestUnreachableBrokers(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	spec := testSpec(addr, "out", true)
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	err = p.Open(ctx(t))
	if err == nil || sink.IsPermanent(err) || !strings.Contains(err.Error(), "cannot reach the brokers") ||
		!strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "sink table kafka_out") {
		t.Fatalf("Open with no broker: %v; want a retryable error naming the brokers and the sink table", err)
	}
	t.Logf("Open failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if _, err := p.Committed(ctx(t)); err == nil || sink.IsPermanent(err) {
		t.Fatalf("Committed with no broker: %v", err)
	}
	if err := p.CommitEpoch(ctx(t), 1, []sink.Change{upsert(row(1, "a", 1, 1, true, 1))}); err == nil || sink.IsPermanent(err) {
		t.Fatalf("CommitEpoch with no broker: %v", err)
	}
}

func TestTransactionTimeoutAboveBrokerMax(t *testing.T) {
	_, addr := newCluster(t, kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "10000"}))
	p, err := New(testSpec(addr, "out", true, "transaction_timeout", "20s"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Open(ctx(t)); err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "transaction.max.timeout.ms (10s)") {
		t.Fatalf("Open: %v, want a permanent error naming the brokers' maximum", err)
	}
	open(t, testSpec(addr, "out", true, "transaction_timeout", "10s"))
}

// TestBrokerRestart stops the broker (kfake with a data directory) in the
// middle of an epoch's transaction, then starts it again on the same
// port and directory: Open and Committed recover, the committed epochs
// and their records are there, the interrupted epoch is not, and the
// publisher goes on.
func TestBrokerRestart(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	start := func() *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.Ports(port), kfake.DataDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	c1 := start()
	addr := c1.ListenAddrs()[0]
	spec := testSpec(addr, "out", true)
	p := open(t, spec)
	if n := committed(t, p); n != 0 {
		t.Fatalf("Committed = %d", n)
	}
	commit(t, p, 1, upsert(row(1, "a", 1, 1, true, 1)))
	commit(t, p, 2, upsert(row(2, "b", 2, 2, true, 2)), del(1))

	// Epoch 3: the broker stops once its records are produced, before
	// the commit.
	cctx, cancel := context.WithCancel(ctx(t))
	p.beforeEnd = func() {
		p.beforeEnd = nil
		c1.Close()
		cancel()
	}
	err := p.CommitEpoch(cctx, 3, []sink.Change{upsert(row(3, "lost", 3, 3, true, 3))})
	if err == nil || sink.IsPermanent(err) || errors.Is(err, sink.ErrCommitted) {
		t.Fatalf("CommitEpoch while the broker stops: %v, want a retryable error", err)
	}
	if err := p.Open(ctx(t)); err == nil || sink.IsPermanent(err) {
		t.Fatalf("Open while the broker is down: %v, want a retryable error", err)
	}

	start()
	if err := p.Open(ctx(t)); err != nil {
		t.Fatalf("Open after the restart: %v", err)
	}
	if n := committed(t, p); n != 2 {
		t.Fatalf("Committed after the restart = %d, want 2", n)
	}
	endOffsets(t, addr, "out", "out.streamsql-progress") // the open transaction was aborted
	want := []string{kv(1, "a", 1, 1, true, 1), kv(2, "b", 2, 2, true, 2), tomb(1)}
	if got := recStrings(readTopic(t, addr, "out", true)); !sameSet(got, want) {
		t.Fatalf("records after the restart: %v, want %v", got, want)
	}
	if u := readTopic(t, addr, "out", false); len(u) != 4 {
		t.Fatalf("read_uncommitted after the restart: %v, want epoch 3's aborted record too", recStrings(u))
	}
	commit(t, p, 3, upsert(row(3, "c", 3, 3, true, 3)))
	if l := latest(readTopic(t, addr, "out", true)); !reflect.DeepEqual(l, map[string]string{jsonKey(2): jsonRow(2, "b", 2, 2, true, 2), jsonKey(3): jsonRow(3, "c", 3, 3, true, 3)}) {
		t.Fatalf("latest: %v", l)
	}
	if e := progressRecs(t, addr, "out.streamsql-progress", spec.SinkID); !reflect.DeepEqual(e, []uint64{1, 2, 3}) {
		t.Fatalf("progress epochs %v, want [1 2 3]", e)
	}
}

// cutProxy forwards TCP connections to a broker; armed, it passes an
// EndTxn request on to the broker and then cuts the connection instead
// of returning the broker's answer: the commit happened, the client
// cannot know.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool // cut the next EndTxn's answer
	always atomic.Bool // cut every EndTxn's answer
	cut    atomic.Int32
	mu     sync.Mutex
	conns  []net.Conn
}

// advertised is a broker's listener that advertises the proxy's address
// (kfake tells clients its listener's address).
type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// newProxiedCluster starts a broker that clients reach only through a
// cutProxy.
func newProxiedCluster(t *testing.T) (*cutProxy, string) {
	var x *cutProxy
	listen := func(network, address string) (net.Listener, error) {
		real, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		pl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			real.Close()
			return nil, err
		}
		x = &cutProxy{ln: pl, target: real.Addr().String()}
		go x.serve()
		return advertised{real, pl.Addr()}, nil
	}
	_, addr := newCluster(t, kfake.ListenFn(listen))
	t.Cleanup(x.close)
	return x, addr
}

func (x *cutProxy) close() {
	x.ln.Close()
	x.mu.Lock()
	for _, c := range x.conns {
		c.Close()
	}
	x.mu.Unlock()
}

func (x *cutProxy) serve() {
	for {
		c, err := x.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", x.target)
		if err != nil {
			c.Close()
			continue
		}
		x.mu.Lock()
		x.conns = append(x.conns, c, s)
		x.mu.Unlock()
		var cutCorr atomic.Int64
		cutCorr.Store(-1)
		go x.toBroker(c, s, &cutCorr)
		go x.toClient(c, s, &cutCorr)
	}
}

// frame reads one size-prefixed Kafka message.
func frame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, 4+binary.BigEndian.Uint32(n[:]))
	copy(b, n[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// toBroker forwards requests (size, api key int16, version int16,
// correlation id int32, ...), noting the armed EndTxn's correlation id.
func (x *cutProxy) toBroker(c, s net.Conn, cutCorr *atomic.Int64) {
	defer s.Close()
	for {
		b, err := frame(c)
		if err != nil {
			return
		}
		const endTxn = 26
		if len(b) >= 12 && binary.BigEndian.Uint16(b[4:]) == endTxn && (x.always.Load() || x.armed.CompareAndSwap(true, false)) {
			cutCorr.Store(int64(binary.BigEndian.Uint32(b[8:])))
		}
		if _, err := s.Write(b); err != nil {
			return
		}
	}
}

// toClient forwards responses (size, correlation id int32, ...), but cuts
// the client off in place of the armed EndTxn's answer.
func (x *cutProxy) toClient(c, s net.Conn, cutCorr *atomic.Int64) {
	defer c.Close()
	for {
		b, err := frame(s)
		if err != nil {
			return
		}
		if len(b) >= 8 && int64(binary.BigEndian.Uint32(b[4:])) == cutCorr.Load() {
			x.cut.Add(1)
			s.Close()
			return
		}
		if _, err := c.Write(b); err != nil {
			return
		}
	}
}

// TestCommitOutcomeUnknown: the connection breaks after the broker
// committed an epoch, before its answer arrives.
//
// Once: kgo sends EndTxn again on a new connection, and the broker takes
// it for a retry of the commit it did (KIP-890: the producer's epoch is
// one below its own, no transaction open, the last one committed) and
// answers success.
//
// Every time, until the caller's deadline: CommitEpoch reports the
// outcome unknown; Committed (after Open, as the runtime does, or by
// CommitEpoch itself when called again without) finds the epoch
// committed, and committing it again is ErrCommitted.
func TestCommitOutcomeUnknown(t *testing.T) {
	x, addr := newProxiedCluster(t)
	spec := testSpec(addr, "out", true)
	p := open(t, spec)
	commit(t, p, 1, upsert(row(1, "a", 1, 1, true, 1)))

	x.armed.Store(true)
	err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2))})
	if x.cut.Load() != 1 {
		t.Fatalf("the proxy did not cut the EndTxn answer (CommitEpoch: %v)", err)
	}
	if err != nil && (sink.IsPermanent(err) || !strings.Contains(err.Error(), "outcome unknown")) {
		t.Fatalf("CommitEpoch cut once during EndTxn: %v, want success or a retryable 'outcome unknown' error", err)
	}
	t.Logf("CommitEpoch cut once during EndTxn: %v", err)
	if n := committed(t, p); n != 2 {
		t.Fatalf("Committed = %d, want 2", n)
	}

	x.always.Store(true)
	short, cancel := context.WithTimeout(ctx(t), time.Second)
	defer cancel()
	err = p.CommitEpoch(short, 3, []sink.Change{upsert(row(3, "c", 3, 3, true, 3))})
	x.always.Store(false)
	if err == nil || sink.IsPermanent(err) || errors.Is(err, sink.ErrCommitted) || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("CommitEpoch cut during EndTxn until its deadline: %v, want a retryable 'outcome unknown' error", err)
	}
	if x.cut.Load() < 2 {
		t.Fatalf("the proxy cut %d EndTxn answers", x.cut.Load())
	}
	// Called again without Open, CommitEpoch fences and reads the
	// progress itself.
	if err := p.CommitEpoch(ctx(t), 3, []sink.Change{upsert(row(3, "c", 3, 3, true, 3))}); !errors.Is(err, sink.ErrCommitted) {
		t.Fatalf("CommitEpoch(3) retried without Open: %v, want ErrCommitted", err)
	}
	if err := p.Open(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := committed(t, p); n != 3 {
		t.Fatalf("Committed = %d, want 3", n)
	}
	wantRecs(t, "records", sortRecs(readTopic(t, addr, "out", true)), kv(1, "a", 1, 1, true, 1), kv(2, "b", 2, 2, true, 2), kv(3, "c", 3, 3, true, 3))
	if e := progressRecs(t, addr, "out.streamsql-progress", spec.SinkID); !reflect.DeepEqual(e, []uint64{1, 2, 3}) {
		t.Fatalf("progress epochs %v, want [1 2 3]", e)
	}
}

func sortRecs(recs []rec) []rec {
	out := append([]rec(nil), recs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].String() < out[i].String() {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
