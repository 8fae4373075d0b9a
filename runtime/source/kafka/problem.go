package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// partProblemTTL: a partition's fetch error is dropped once no fetch
	// has reported it for this long. A lasting error comes back with
	// every fetch of the partition, which kgo repeats once each Poll
	// drained the last one.
	partProblemTTL = 10 * time.Second
	// brokerProblemTTL: a broker's connection error is dropped once it
	// has not recurred for this long (kgo retries a broker it needs
	// every few seconds at most; it never calls one it no longer needs).
	brokerProblemTTL = 15 * time.Second
	// noticeTTL: how long a one-time report (kgo found the log
	// truncated below what was read: data loss) stays.
	noticeTTL = 5 * time.Minute
	// boundsTTL: how long looked-up log bounds serve out-of-range
	// messages.
	boundsTTL = 10 * time.Second
	// lookupTimeout bounds a look-up of the log bounds.
	lookupTimeout = 10 * time.Second
	// maxShown is the most problems Problem names.
	maxShown = 4
)

// OffsetOutOfRangeError: a partition's position is not in its log, as a
// broker answered a fetch. Fetching the partition is retried as is
// (never moved elsewhere), so it resumes if the log grows to the
// position; a position below the log start never comes back.
type OffsetOutOfRangeError struct {
	Partition int32
	Offset    int64 // the position fetched
	LogStart  int64 // the partition's log start offset (-1: unknown)
	LogEnd    int64 // the partition's high watermark (-1: unknown)
}

func (e *OffsetOutOfRangeError) Error() string {
	switch {
	case e.LogStart >= 0 && e.Offset < e.LogStart:
		return fmt.Sprintf("partition %d: offset %d is below the log start %d (deleted by retention)", e.Partition, e.Offset, e.LogStart)
	case e.LogEnd >= 0 && e.Offset > e.LogEnd:
		return fmt.Sprintf("partition %d: offset %d is past the log end %d (was the topic deleted and recreated, or did the brokers lose data?)", e.Partition, e.Offset, e.LogEnd)
	case e.LogStart < 0 || e.LogEnd < 0:
		return fmt.Sprintf("partition %d: offset %d is out of range of the log (OFFSET_OUT_OF_RANGE; looking up the log start and end)", e.Partition, e.Offset)
	default:
		return fmt.Sprintf("partition %d: offset %d was out of range of the log (which now spans offsets %d to %d)", e.Partition, e.Offset, e.LogStart, e.LogEnd)
	}
}

// Unwrap makes errors.Is(err, kerr.OffsetOutOfRange) hold.
func (e *OffsetOutOfRangeError) Unwrap() error { return kerr.OffsetOutOfRange }

type partProblem struct {
	err    error
	seen   time.Time
	sticky bool // kgo stopped fetching the partition: never expires
	notice bool // a one-time report (data loss): progress does not clear it
}

type brokerProblem struct {
	err error // names the broker
	raw error // as kgo reported it
	at  time.Time
	// shown: Problem reports it. A connection the broker dropped (a
	// read or write error) is shown only when the broker fails again
	// before it answers: kgo redials at once, and a restarted broker
	// drops every connection it had once. A failed dial is shown at
	// once.
	shown bool
}

type logBounds struct {
	start, end int64
	at         time.Time
}

// problems are the consumer's current troubles; guarded by Consumer.mu.
type problems struct {
	parts     map[int32]partProblem // -1: the whole topic
	brokers   map[int32]brokerProblem
	nbrokers  atomic.Int32 // len(brokers), read without the lock
	bounds    map[int32]logBounds
	lookingUp bool
}

func (p *problems) init() {
	p.parts = map[int32]partProblem{}
	p.brokers = map[int32]brokerProblem{}
	p.bounds = map[int32]logBounds{}
}

// noteEvents applies what the partitions did in a Poll: progress clears
// a partition's problem (and the topic's), an error sets it. Problems no
// fetch reported lately are dropped.
func (c *Consumer) noteEvents(now time.Time) {
	if len(c.seen) == 0 && len(c.probs.parts) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, e := range c.seen {
		if e.progress {
			if !c.probs.parts[p].notice {
				delete(c.probs.parts, p)
			}
			if !c.probs.parts[-1].notice {
				delete(c.probs.parts, -1)
			}
			continue
		}
		c.probs.parts[p] = c.partProblem(p, e, now)
	}
	clear(c.seen)
	for p, pp := range c.probs.parts {
		ttl := partProblemTTL
		if pp.notice {
			ttl = noticeTTL
		}
		if !pp.sticky && now.Sub(pp.seen) > ttl {
			delete(c.probs.parts, p)
		}
	}
}

// partProblem makes the problem of partition p (-1: the topic) from a
// fetch error. Called with c.mu held.
func (c *Consumer) partProblem(p int32, e event, now time.Time) partProblem {
	what := fmt.Sprintf("partition %d", p)
	if p < 0 {
		what = "topic"
	}
	var tooLarge *kgo.ErrDecompressTooLarge
	var loss *kgo.ErrDataLoss
	switch {
	case errors.As(e.err, &loss):
		return partProblem{err: fmt.Errorf("%s: %w", what, e.err), seen: now, notice: true}
	case errors.Is(e.err, kerr.OffsetOutOfRange):
		oe := &OffsetOutOfRangeError{Partition: p, Offset: e.offset, LogStart: e.start, LogEnd: e.end}
		if oe.LogStart < 0 || oe.LogEnd < 0 {
			// Kafka sends no bounds with OFFSET_OUT_OF_RANGE: look them
			// up, off the polling goroutine.
			if b, ok := c.probs.bounds[p]; ok && now.Sub(b.at) < boundsTTL {
				oe.LogStart, oe.LogEnd = b.start, b.end
			} else {
				c.lookUpBounds()
			}
		}
		return partProblem{err: oe, seen: now}
	case errors.Is(e.err, kerr.UnknownTopicOrPartition), errors.Is(e.err, kerr.UnknownTopicID):
		return partProblem{err: fmt.Errorf("%s: %w (was the topic deleted?): %w", what, ErrUnknownTopic, e.err), seen: now}
	case errors.As(e.err, &tooLarge):
		return partProblem{err: fmt.Errorf("%s: %w (kgo stopped fetching the partition)", what, e.err), seen: now, sticky: true}
	default:
		return partProblem{err: fmt.Errorf("%s: %w", what, e.err), seen: now}
	}
}

// lookUpBounds lists the log start and end offsets of the topic's
// partitions in a goroutine of its own (at most one at a time; Close
// waits for it), for out-of-range messages. Called with c.mu held.
func (c *Consumer) lookUpBounds() {
	if c.probs.lookingUp || c.closed || c.cl == nil {
		return
	}
	c.probs.lookingUp = true
	cl := c.cl
	c.lookups.Add(1)
	go func() {
		defer c.lookups.Done()
		ctx, cancel := context.WithTimeout(c.ctx, lookupTimeout)
		defer cancel()
		adm := kadm.NewClient(cl)
		starts, err1 := adm.ListStartOffsets(ctx, c.cfg.Topic)
		ends, err2 := adm.ListEndOffsets(ctx, c.cfg.Topic)
		now := time.Now()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.probs.lookingUp = false
		if err1 != nil || err2 != nil {
			return
		}
		starts.Each(func(s kadm.ListedOffset) {
			if s.Err != nil || s.Topic != c.cfg.Topic {
				return
			}
			e, ok := ends.Lookup(s.Topic, s.Partition)
			if !ok || e.Err != nil {
				return
			}
			c.probs.bounds[s.Partition] = logBounds{start: s.Offset, end: e.Offset, at: now}
			if pp, ok := c.probs.parts[s.Partition]; ok {
				if oe, ok := pp.err.(*OffsetOutOfRangeError); ok && (oe.LogStart < 0 || oe.LogEnd < 0) {
					pp.err = &OffsetOutOfRangeError{Partition: oe.Partition, Offset: oe.Offset, LogStart: s.Offset, LogEnd: e.Offset}
					c.probs.parts[s.Partition] = pp
				}
			}
		})
	}()
}

// brokerResult notes the outcome of a request write or a response read
// (dial false) or of a connection attempt (dial true), from kgo's hooks:
// an error is the broker's problem (see brokerProblem.shown); a response
// read clears it (and a real broker's response clears the seed brokers'
// problems). A dial that succeeds clears nothing: a broker that accepts
// connections and never answers is still a problem.
func (c *Consumer) brokerResult(meta kgo.BrokerMetadata, err error, dial bool) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed)) {
		return
	}
	if err == nil && (dial || c.probs.nbrokers.Load() == 0) {
		return // the common case: no lock per response
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.probs.nbrokers.Store(int32(len(c.probs.brokers))) }()
	if c.closed {
		return
	}
	if err == nil {
		delete(c.probs.brokers, meta.NodeID)
		if meta.NodeID >= 0 {
			for n := range c.probs.brokers {
				if n < 0 {
					delete(c.probs.brokers, n)
				}
			}
		}
		return
	}
	name := fmt.Sprintf("broker %d (%s)", meta.NodeID, hostPort(meta))
	if meta.NodeID < 0 {
		name = "seed broker " + hostPort(meta)
	}
	_, again := c.probs.brokers[meta.NodeID]
	c.probs.brokers[meta.NodeID] = brokerProblem{err: fmt.Errorf("%s: %w", name, err), raw: err, at: time.Now(), shown: dial || again}
}

func hostPort(meta kgo.BrokerMetadata) string {
	return fmt.Sprintf("%s:%d", meta.Host, meta.Port)
}

// Problem is what keeps fetching from working now, or nil: fetch errors
// of partitions (offset out of range, unknown topic, ...) and brokers
// that cannot be reached. kgo retries all of them by itself (an offset
// out of range is retried at the same offset). Safe for concurrent use.
func (c *Consumer) Problem() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	var errs []error
	parts := make([]int32, 0, len(c.probs.parts))
	for p := range c.probs.parts {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		errs = append(errs, c.probs.parts[p].err)
	}
	nodes := make([]int32, 0, len(c.probs.brokers))
	for n, bp := range c.probs.brokers {
		if now.Sub(bp.at) > brokerProblemTTL {
			delete(c.probs.brokers, n)
			c.probs.nbrokers.Store(int32(len(c.probs.brokers)))
			continue
		}
		if bp.shown {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	for _, n := range nodes {
		errs = append(errs, c.probs.brokers[n].err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", c.where, multiError(errs))
}

// multiError is several problems in one line; errors.Is and errors.As
// see each.
type multiError []error

func (m multiError) Error() string {
	var b strings.Builder
	for i, e := range m {
		if i == maxShown {
			fmt.Fprintf(&b, "; and %d more", len(m)-maxShown)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (m multiError) Unwrap() []error { return m }
