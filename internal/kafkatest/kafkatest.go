package kafkatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/streamsql/streamsql/internal/gobin"
)

const (
	startTimeout = 30 * time.Second // process start until it accepts connections
	stopTimeout  = 30 * time.Second // SIGTERM until the process is gone (then SIGKILL)
	// consumeTimeout bounds Consume (reading every record of a topic).
	consumeTimeout = 30 * time.Second
)

// broker is the kfakebroker command ($KFAKEBROKER_BIN, else built).
var broker = &gobin.Binary{Pkg: "github.com/streamsql/streamsql/internal/kafkatest/kfakebroker", Env: "KFAKEBROKER_BIN"}

// Binary returns the broker command: $KFAKEBROKER_BIN, or ./kfakebroker
// built once per process into a temporary directory that Cleanup removes.
// The build runs in the current directory, which must be inside this
// module (a test's package directory is).
func Binary() (string, error) { return broker.Path() }

// Cleanup removes the binary Binary built, if any (call it from TestMain
// once the tests are done).
func Cleanup() { broker.Cleanup() }

// Broker is one kfake broker process on 127.0.0.1, with its data in
// Dir/data and its log in Dir/broker.log.
type Broker struct {
	Dir  string
	bin  string
	addr string // 127.0.0.1:port, the same across restarts
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has been reaped
}

// Start starts a broker on a free port with its data under dir (created
// if missing), and waits until it accepts connections.
func Start(dir string) (*Broker, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	b := &Broker{Dir: dir, bin: bin}
	if err := b.start(0); err != nil {
		return nil, err
	}
	return b, nil
}

// Addr is the broker's address, host:port (the same across restarts).
func (b *Broker) Addr() string { return b.addr }

func (b *Broker) start(port int) error {
	if b.cmd != nil {
		return errors.New("kafkatest: broker already running")
	}
	logf, err := os.OpenFile(filepath.Join(b.Dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "===== kafkatest: start on port %d at %s =====\n", port, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(b.bin, "serve", "--port", strconv.Itoa(port), "--dir", filepath.Join(b.Dir, "data"))
	cmd.Stderr = logf
	cmd.SysProcAttr = procAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kafkatest: start %s: %w", b.bin, err)
	}
	done := make(chan struct{})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Scan()
		line <- s.Text()
		io.Copy(io.Discard, stdout) // until the process exits
		cmd.Wait()
		close(done)
	}()
	b.cmd, b.done = cmd, done
	var addr string
	select {
	case addr = <-line:
	case <-time.After(startTimeout):
	}
	if _, p, err := net.SplitHostPort(addr); err != nil || (port != 0 && p != strconv.Itoa(port)) {
		b.Kill()
		return fmt.Errorf("kafkatest: the broker did not start on port %d (said %q); log:\n%s", port, addr, b.Log())
	}
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Kill()
			return fmt.Errorf("kafkatest: the broker does not accept connections on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.addr = addr
	return nil
}

// Running reports whether the broker process is running.
func (b *Broker) Running() bool { return b.cmd != nil }

// Stop shuts the broker down cleanly (SIGTERM: kfake persists its state in
// the data directory) and waits for it; after stopTimeout it is killed and
// Stop returns an error. Stopping a stopped broker does nothing.
func (b *Broker) Stop() error {
	if b.cmd == nil {
		return nil
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(stopTimeout):
		b.Kill()
		return fmt.Errorf("kafkatest: the broker did not stop within %v of SIGTERM; killed", stopTimeout)
	}
	ps := b.cmd.ProcessState
	b.cmd = nil
	if !ps.Success() {
		return fmt.Errorf("kafkatest: the broker ended with %v on SIGTERM; log:\n%s", ps, b.Log())
	}
	return nil
}

// Kill stops the broker at once (SIGKILL: what kfake has not written to
// its data directory yet is lost) and waits for it.
func (b *Broker) Kill() error {
	if b.cmd == nil {
		return nil
	}
	b.cmd.Process.Kill()
	<-b.done
	b.cmd = nil
	return nil
}

// Restart stops the broker if it runs (Stop) and starts it again on the
// same port and data directory.
func (b *Broker) Restart() error {
	if err := b.Stop(); err != nil {
		return err
	}
	_, p, _ := net.SplitHostPort(b.addr)
	port, _ := strconv.Atoi(p)
	return b.start(port)
}

// Close kills the broker; the directory stays (it is the caller's).
func (b *Broker) Close() { b.Kill() }

// Log returns the tail of the broker's log (for failure messages).
func (b *Broker) Log() string {
	data, _ := os.ReadFile(filepath.Join(b.Dir, "broker.log"))
	if len(data) > 8000 {
		data = data[len(data)-8000:]
	}
	return string(data)
}

// Record is a Kafka record. Key and Value are nil when absent (a
// tombstone's value). Produce ignores Offset, Control and the producer
// fields and fills them in its answer; Timestamp is in milliseconds since
// the epoch, 0 for the current time. Consume returns control records too
// (Control "commit" or "abort", transaction markers, without key and
// value).
//
// KeyBytes and ValueBytes carry keys and values that are not UTF-8 text
// (Avro, Protobuf): Produce writes them instead of Key and Value when
// they are set, and Consume sets them besides Key and Value (which then
// hold U+FFFD for the bytes that are not UTF-8) for such keys and values.
// KeyData and ValueData return the bytes either way. Headers are the
// record's headers (the last value of a name given twice).
type Record struct {
	Partition     int32             `json:"partition"`
	Offset        int64             `json:"offset"`
	Key           *string           `json:"key"`
	Value         *string           `json:"value"`
	KeyBytes      []byte            `json:"key_bytes,omitempty"`
	ValueBytes    []byte            `json:"value_bytes,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Timestamp     int64             `json:"timestamp"`
	Control       string            `json:"control,omitempty"`
	ProducerID    int64             `json:"producer_id"`
	ProducerEpoch int16             `json:"producer_epoch"`
}

// KeyData is the record's key as bytes (nil: no key).
func (r Record) KeyData() []byte { return data(r.KeyBytes, r.Key) }

// ValueData is the record's value as bytes (nil: a tombstone).
func (r Record) ValueData() []byte { return data(r.ValueBytes, r.Value) }

func data(b []byte, s *string) []byte {
	if b != nil {
		return b
	}
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// Str returns a pointer to s, for Record's Key and Value.
func Str(s string) *string { return &s }

// Txn says how Produce and Send write records.
type Txn string

const (
	NoTxn  Txn = ""       // an idempotent producer, outside any transaction
	Commit Txn = "commit" // in a transaction (the open one, if any), committed
	Abort  Txn = "abort"  // in a transaction (the open one, if any), aborted
	Open   Txn = "open"   // in a transaction left open for a later Send
)

// Producer is a producer process writing to one topic; it keeps its
// transactional id (and any open transaction) across Sends.
type Producer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
	topic  string
}

// NewProducer starts a producer of topic, creating the topic with
// partitions partitions first when partitions > 0 and it is missing.
func (b *Broker) NewProducer(topic string, partitions int) (*Producer, error) {
	cmd := exec.Command(b.bin, "produce", "--brokers", b.addr, "--topic", topic, "--partitions", strconv.Itoa(partitions))
	cmd.SysProcAttr = procAttr()
	p := &Producer{cmd: cmd, stderr: &bytes.Buffer{}, topic: topic}
	cmd.Stderr = p.stderr
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 1<<20), 256<<20)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Send produces recs as txn says and returns them with their offsets,
// timestamps and producer ids.
func (p *Producer) Send(recs []Record, txn Txn) ([]Record, error) {
	line, err := json.Marshal(struct {
		Txn     Txn      `json:"txn"`
		Records []Record `json:"records"`
	}{txn, recs})
	if err != nil {
		return nil, err
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("kafkatest: producer of %s: %v: %s", p.topic, err, p.stderr)
	}
	if !p.out.Scan() {
		return nil, fmt.Errorf("kafkatest: producer of %s exited (%v): %s", p.topic, p.out.Err(), p.stderr)
	}
	var ans struct {
		Records []Record `json:"records"`
		Error   string   `json:"error"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &ans); err != nil {
		return nil, fmt.Errorf("kafkatest: producer of %s answered %q: %v", p.topic, p.out.Bytes(), err)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("kafkatest: producing %d records to %s (txn %q): %s", len(recs), p.topic, txn, ans.Error)
	}
	if len(ans.Records) != len(recs) {
		return nil, fmt.Errorf("kafkatest: producing %d records to %s: %d answered", len(recs), p.topic, len(ans.Records))
	}
	return ans.Records, nil
}

// Close ends the producer process (an open transaction is left to the
// broker's transaction timeout).
func (p *Producer) Close() error {
	p.in.Close()
	err := p.cmd.Wait()
	if err != nil {
		return fmt.Errorf("kafkatest: producer of %s: %v: %s", p.topic, err, p.stderr)
	}
	return nil
}

// Produce writes recs to topic with a producer of its own (NewProducer,
// Send, Close).
func (b *Broker) Produce(topic string, partitions int, recs []Record, txn Txn) ([]Record, error) {
	p, err := b.NewProducer(topic, partitions)
	if err != nil {
		return nil, err
	}
	out, err := p.Send(recs, txn)
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return out, err
}

// ErrNoTopic is Consume's error for a topic that does not exist.
var ErrNoTopic = errors.New("kafkatest: no such topic")

// Consume reads every record of topic up to its end offsets at the time
// of the call (with readCommitted, as a read_committed consumer up to the
// last stable offsets: aborted records left out, an open transaction's
// not reached), control records included, in partition and offset order.
func (b *Broker) Consume(topic string, readCommitted bool) ([]Record, error) {
	args := []string{"consume", "--brokers", b.addr, "--topic", topic, "--timeout", consumeTimeout.String()}
	if readCommitted {
		args = append(args, "--read-committed")
	}
	cmd := exec.Command(b.bin, args...)
	cmd.SysProcAttr = procAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			return nil, fmt.Errorf("%w: %s", ErrNoTopic, topic)
		}
		return nil, fmt.Errorf("kafkatest: consuming %s: %v: %s", topic, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var recs []Record
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("kafkatest: consuming %s: line %q: %v", topic, line, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// Data returns the records of recs that are not control records.
func Data(recs []Record) []Record {
	var out []Record
	for _, r := range recs {
		if r.Control == "" {
			out = append(out, r)
		}
	}
	return out
}

// String renders a record for messages.
func (r Record) String() string {
	show := func(s *string) string {
		if s == nil {
			return "null"
		}
		return strconv.Quote(*s)
	}
	if r.Control != "" {
		return fmt.Sprintf("[%d]@%d %s marker (producer %d/%d)", r.Partition, r.Offset, r.Control, r.ProducerID, r.ProducerEpoch)
	}
	if r.KeyBytes != nil {
		k := fmt.Sprintf("%x", r.KeyBytes)
		r.Key = &k
	}
	if r.ValueBytes != nil {
		v := fmt.Sprintf("%x", r.ValueBytes)
		r.Value = &v
	}
	return fmt.Sprintf("[%d]@%d %s => %s", r.Partition, r.Offset, show(r.Key), strings.TrimSpace(show(r.Value)))
}
