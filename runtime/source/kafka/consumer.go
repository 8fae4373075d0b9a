package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultClientID is the client id unless Config.ClientID says.
const DefaultClientID = "streamsql"

const (
	dialTimeout = 10 * time.Second
	// fetchMaxWait is how long a broker holds a fetch that found
	// nothing (Kafka's Java consumer default; kgo's is 5s). It bounds how
	// soon an idle consumer notices a broker that went away.
	fetchMaxWait = 500 * time.Millisecond
)

// Record is one record of the topic handed out by Poll.
type Record struct {
	Partition int32
	Offset    int64
	// Key and Value are the record's bytes; Value nil is a tombstone.
	// They are not reused: the receiver may keep them.
	Key, Value []byte
	Timestamp  int64 // ms since the epoch
}

// Config says which topic of which cluster to read.
type Config struct {
	// Brokers are the bootstrap brokers, host:port each (ParseBrokers
	// makes them from a CONNECTION string).
	Brokers []string
	// Topic is the topic to read.
	Topic string
	// ClientID is the Kafka client id (default DefaultClientID).
	ClientID string
}

// ErrUnknownTopic: the topic does not exist (wrapped; use errors.Is).
var ErrUnknownTopic = errors.New("unknown topic")

// ErrClosed is returned by the methods of a closed Consumer.
var ErrClosed = errors.New("consumer closed")

// Consumer reads one topic at explicit offsets; see the package doc.
type Consumer struct {
	cfg     Config
	where   string // "Kafka topic t (brokers a,b)", for messages
	ctx     context.Context
	cancel  context.CancelFunc
	ready   chan struct{}
	lookups sync.WaitGroup // out-of-range bound look-ups in flight

	mu      sync.Mutex // guards cl, closed, started and the problems
	cl      *kgo.Client
	closed  bool
	started bool
	known   map[int32]bool // the partitions Partitions last found (nil: not asked)
	probs   problems
	// ends are the partitions' last stable offsets as last seen (Ends:
	// for the lag the API shows, so that no request waits for a broker).
	ends map[int32]int64

	// Owned by the polling goroutine.
	pos  map[int32]int64
	rec  Record
	seen map[int32]event // per Poll: the last thing each partition did

	// boundsUnknown (tests) ignores the log start and end a fetch error
	// carries, as real Kafka brokers send none with OFFSET_OUT_OF_RANGE.
	boundsUnknown bool
}

// New checks cfg and makes a consumer. It does no I/O.
func New(cfg Config) (*Consumer, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafka source: no brokers (want host:port[,host:port...])")
	}
	for _, b := range cfg.Brokers {
		if err := checkBroker(b); err != nil {
			return nil, fmt.Errorf("kafka source: broker %v", err)
		}
	}
	if err := checkTopic(cfg.Topic); err != nil {
		return nil, fmt.Errorf("kafka source: topic %q: %v", cfg.Topic, err)
	}
	if cfg.ClientID == "" {
		cfg.ClientID = DefaultClientID
	}
	cfg.Brokers = append([]string(nil), cfg.Brokers...)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Consumer{
		cfg:    cfg,
		where:  fmt.Sprintf("Kafka topic %s (brokers %s)", cfg.Topic, strings.Join(cfg.Brokers, ",")),
		ctx:    ctx,
		cancel: cancel,
		ready:  make(chan struct{}, 1),
		seen:   map[int32]event{},
	}
	c.probs.init()
	return c, nil
}

// ParseBrokers splits a CONNECTION string, "host:port[,host:port...]",
// into broker addresses.
func ParseBrokers(conn string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(conn, ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		if err := checkBroker(b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no brokers in %q (want host:port[,host:port...])", conn)
	}
	return out, nil
}

func checkBroker(b string) error {
	host, port, err := net.SplitHostPort(b)
	if err == nil && host != "" {
		if n, perr := strconv.Atoi(port); perr == nil && n >= 1 && n <= 65535 {
			return nil
		}
	}
	return fmt.Errorf("%q is not host:port", b)
}

// checkTopic checks a Kafka topic name: 1 to 249 of [a-zA-Z0-9._-], not
// "." or "..".
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("empty")
	case len(t) > 249:
		return errors.New("longer than 249 characters")
	case t == "." || t == "..":
		return errors.New("not a valid topic name")
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q is not allowed in a topic name (letters, digits, '.', '_', '-')", r)
		}
	}
	return nil
}

// client returns the kgo client, making it on first use.
func (c *Consumer) client() (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%s: %w", c.where, ErrClosed)
	}
	if c.cl != nil {
		return c.cl, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ClientID(c.cfg.ClientID),
		kgo.DialTimeout(dialTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Markers come back as records so that positions move past
		// them (kgo drops aborted records itself).
		kgo.KeepControlRecords(),
		// An offset out of range is an error for the partition, never a
		// silent jump elsewhere.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// Unknown topic, not leader...: shown through Problem. kgo
		// retries them all the same.
		kgo.KeepRetryableFetchErrors(),
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.WithHooks(hooks{c}),
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.where, err)
	}
	c.cl = cl
	return cl, nil
}

// Start begins consuming each partition of from at its offset: the
// offset of the first record to hand out, as Position reports it. It is
// called once per Consumer. It does no I/O of its own. The partitions
// must exist: kgo waits silently for one that does not, so after a call
// of Partitions, Start refuses partitions it did not find.
func (c *Consumer) Start(from map[int32]int64) error {
	if len(from) == 0 {
		return fmt.Errorf("%s: Start with no partitions", c.where)
	}
	offsets := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		if p < 0 || o < 0 {
			return fmt.Errorf("%s: Start: bad position %d for partition %d", c.where, o, p)
		}
		offsets[p] = kgo.NewOffset().At(o)
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("%s: Start called twice", c.where)
	}
	if c.known != nil {
		for p := range from {
			if !c.known[p] {
				c.mu.Unlock()
				return fmt.Errorf("%s: Start: partition %d does not exist (the topic has %d)", c.where, p, len(c.known))
			}
		}
	}
	c.started = true
	c.mu.Unlock()
	c.pos = make(map[int32]int64, len(from))
	for p, o := range from {
		c.pos[p] = o
	}
	// An exact offset (epoch -1) of a partition the client knows from
	// metadata becomes the fetch position as is; kgo lists (and clamps)
	// only for start/end/time offsets.
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{c.cfg.Topic: offsets})
	return nil
}

// noteEnd records a partition's end from a fetch: its last stable offset
// (read_committed), else its high watermark.
func (c *Consumer) noteEnd(p int32, lso, hwm int64) {
	end := lso
	if end < 0 {
		end = hwm
	}
	if end < 0 {
		return
	}
	c.mu.Lock()
	if c.ends == nil {
		c.ends = map[int32]int64{}
	}
	c.ends[p] = end
	c.mu.Unlock()
}

// Ends is each partition's last stable offset as last seen: in the last
// fetch that brought its records, or the last EndOffsets (the reader
// looks them up once at start). A caught-up partition's fetches bring
// nothing, and its end is its position. Partitions not seen yet are
// missing. It is a copy and does no I/O.
func (c *Consumer) Ends() map[int32]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]int64, len(c.ends))
	for p, e := range c.ends {
		out[p] = e
	}
	return out
}

// event is what a partition did last in a Poll.
type event struct {
	err      error
	progress bool
	offset   int64 // the position the error was met at
	start    int64 // the fetch's log start (-1: unknown)
	end      int64 // the fetch's high watermark (-1: unknown)
}

// Poll hands at most max buffered records (max <= 0: all of them) to
// fn, in offset order per partition, and returns how many. It never
// waits for the network. The *Record passed to fn is reused after fn
// returns (its Key and Value are not). Transaction markers are not
// handed out but move Position past them; kgo drops the records of
// aborted transactions (the abort marker that follows them moves
// Position past them).
func (c *Consumer) Poll(max int, fn func(*Record)) int {
	c.mu.Lock()
	cl, ok := c.cl, c.started && !c.closed
	c.mu.Unlock()
	if !ok {
		return 0
	}
	handed := 0
	for max <= 0 || handed < max {
		want := 0
		if max > 0 {
			want = max - handed
		}
		// A nil context: kgo drains what is buffered and returns.
		fs := cl.PollRecords(nil, want) //nolint:staticcheck // nil: do not wait (a canceled context returns before draining)
		got := 0
		for _, f := range fs {
			for _, t := range f.Topics {
				if t.Topic != c.cfg.Topic && t.Topic != "" {
					continue
				}
				for i := range t.Partitions {
					fp := &t.Partitions[i]
					if len(fp.Records) > 0 {
						c.seen[fp.Partition] = event{progress: true}
						c.noteEnd(fp.Partition, fp.LastStableOffset, fp.HighWatermark)
					}
					for _, r := range fp.Records {
						got++
						// Offsets only grow, except after kgo found the
						// log truncated under us (an ErrDataLoss before
						// these records): the log's offsets are the truth.
						c.pos[r.Partition] = r.Offset + 1
						if r.Attrs.IsControl() {
							continue
						}
						c.rec = Record{
							Partition: r.Partition,
							Offset:    r.Offset,
							Key:       r.Key,
							Value:     r.Value,
							Timestamp: r.Timestamp.UnixMilli(),
						}
						fn(&c.rec)
						handed++
					}
					if fp.Err != nil && !errors.Is(fp.Err, kgo.ErrClientClosed) {
						e := event{err: fp.Err, offset: -1, start: fp.LogStartOffset, end: fp.HighWatermark}
						part := fp.Partition
						if t.Topic == "" || part < 0 {
							part = -1 // the whole topic (or client)
						}
						if pos, ok := c.pos[part]; ok {
							e.offset = pos
						}
						if c.boundsUnknown {
							e.start, e.end = -1, -1
						}
						c.seen[part] = e
					}
				}
			}
		}
		// Fewer than asked for: kgo has nothing more buffered. As many:
		// some may have been markers, so ask again.
		if max <= 0 || got < want {
			break
		}
	}
	c.noteEvents(time.Now())
	return handed
}

// Position is the offset of the next record to read in each started
// partition: what a checkpoint records and Start resumes at. It is a
// copy. Nil before Start.
func (c *Consumer) Position() map[int32]int64 {
	if c.pos == nil {
		return nil
	}
	out := make(map[int32]int64, len(c.pos))
	for p, o := range c.pos {
		out[p] = o
	}
	return out
}

// Ready receives a value after records (markers included) were buffered
// since it last did: wait on it, then Poll. A value may be stale (Poll
// then returns 0); errors do not signal it.
func (c *Consumer) Ready() <-chan struct{} { return c.ready }

// Close stops consuming and closes the connections; the Consumer cannot
// be used again (make a new one to resume from Position). It waits for
// nothing but its own look-ups to stop.
func (c *Consumer) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	cl := c.cl
	c.mu.Unlock()
	c.cancel()
	if cl != nil {
		cl.Close()
	}
	c.lookups.Wait()
}

// hooks are kgo's callbacks into the consumer (run on kgo's goroutines).
type hooks struct{ c *Consumer }

var (
	_ kgo.HookFetchRecordBuffered = hooks{}
	_ kgo.HookBrokerConnect       = hooks{}
	_ kgo.HookBrokerWrite         = hooks{}
	_ kgo.HookBrokerRead          = hooks{}
)

func (h hooks) OnFetchRecordBuffered(*kgo.Record) {
	select {
	case h.c.ready <- struct{}{}:
	default:
	}
}

func (h hooks) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	h.c.brokerResult(meta, err, true)
}

func (h hooks) OnBrokerWrite(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.c.brokerResult(meta, err, false)
	}
}

func (h hooks) OnBrokerRead(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	h.c.brokerResult(meta, err, false)
}
