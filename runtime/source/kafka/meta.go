package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Partitions looks the topic up (a metadata request) and returns its
// partition ids, sorted. A missing topic is an error wrapping
// ErrUnknownTopic (and kerr.UnknownTopicOrPartition). Bounded by ctx
// (kgo retries unreachable brokers until it ends). Safe for concurrent
// use.
func (c *Consumer) Partitions(ctx context.Context) ([]int32, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	details, err := kadm.NewClient(cl).ListTopics(ctx, c.cfg.Topic)
	if err != nil {
		return nil, c.requestError(ctx, "looking up the topic", err)
	}
	d, ok := details[c.cfg.Topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("%s: %w: %w", c.where, ErrUnknownTopic, kerr.UnknownTopicOrPartition)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("%s: looking up the topic: %w", c.where, d.Err)
	}
	out := make([]int32, 0, len(d.Partitions))
	known := make(map[int32]bool, len(d.Partitions))
	for p := range d.Partitions {
		out = append(out, p)
		known[p] = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	c.mu.Lock()
	c.known = known
	c.mu.Unlock()
	return out, nil
}

// StartOffsets resolves start positions for every partition: the log
// start offset (the earliest record kept), or with latest the last
// stable offset (the end as read_committed sees it: the first offset of
// the oldest open transaction, else the high watermark). Bounded by ctx.
// Safe for concurrent use.
func (c *Consumer) StartOffsets(ctx context.Context, latest bool) (map[int32]int64, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	if latest {
		l, err := adm.ListCommittedOffsets(ctx, c.cfg.Topic)
		return c.offsets(ctx, "listing the last stable offsets", l, err)
	}
	l, err := adm.ListStartOffsets(ctx, c.cfg.Topic)
	return c.offsets(ctx, "listing the log start offsets", l, err)
}

// EndOffsets are the partitions' last stable offsets now (the end of
// what read_committed can read): a flush reads until Position reaches
// them. Bounded by ctx. Safe for concurrent use.
func (c *Consumer) EndOffsets(ctx context.Context) (map[int32]int64, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	l, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, c.cfg.Topic)
	ends, err := c.offsets(ctx, "listing the last stable offsets", l, err)
	if err == nil {
		for p, end := range ends {
			c.noteEnd(p, end, -1)
		}
	}
	return ends, err
}

func (c *Consumer) offsets(ctx context.Context, what string, l kadm.ListedOffsets, err error) (map[int32]int64, error) {
	if err != nil {
		return nil, c.requestError(ctx, what, err)
	}
	out := map[int32]int64{}
	var perr error
	l.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Topic != c.cfg.Topic:
		case o.Err != nil && perr == nil:
			if errors.Is(o.Err, kerr.UnknownTopicOrPartition) && o.Partition < 0 {
				perr = fmt.Errorf("%s: %w: %w", c.where, ErrUnknownTopic, o.Err)
			} else {
				perr = fmt.Errorf("%s: %s: partition %d: %w", c.where, what, o.Partition, o.Err)
			}
		case o.Err == nil:
			out[o.Partition] = o.Offset
		}
	})
	if perr != nil {
		return nil, perr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: %w", c.where, ErrUnknownTopic, kerr.UnknownTopicOrPartition)
	}
	return out, nil
}

// requestError says what a failed request was, and when the brokers
// could not be reached, the last connection error.
func (c *Consumer) requestError(ctx context.Context, what string, err error) error {
	var ne net.Error
	unreachable := ctx.Err() != nil || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
	if !unreachable {
		return fmt.Errorf("%s: %s: %w", c.where, what, err)
	}
	c.mu.Lock()
	var last brokerProblem
	for _, bp := range c.probs.brokers {
		if last.err == nil || bp.at.After(last.at) {
			last = bp
		}
	}
	c.mu.Unlock()
	if last.err != nil && !strings.Contains(err.Error(), last.raw.Error()) {
		return fmt.Errorf("%s: %s: cannot reach the brokers: %w (last: %v)", c.where, what, err, last.err)
	}
	return fmt.Errorf("%s: %s: cannot reach the brokers: %w", c.where, what, err)
}
