package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DeadLetter sends the records a source could not decode to a topic of
// their own, with the reason and where they came from in headers
// (streamsql-error, streamsql-topic, streamsql-partition,
// streamsql-offset). Best effort and at least once: Send never blocks the
// source (a record that does not fit kgo's buffer, or that the topic
// refuses, is not sent: it is still counted in bad_records and sampled);
// a replay after a crash sends its records again; each checkpoint
// Flushes first, so the dead letters of the records it covers are not
// lost to a crash after it. EnsureTopic creates the topic when it is
// missing (brokers that do not create topics on first use, such as Amazon
// MSK's default, would refuse every record).
//
// Threading: EnsureTopic, Send, Flush and Close are called by the source
// task's goroutine.
type DeadLetter struct {
	cl     *kgo.Client
	topic  string
	source string
}

// NewDeadLetter makes the producer of dead-letter topic topic for records
// of source topic source. It does no I/O.
func NewDeadLetter(brokers []string, source, topic string) (*DeadLetter, error) {
	return newDeadLetter(brokers, source, topic)
}

// newDeadLetter is NewDeadLetter with more client options (tests).
func newDeadLetter(brokers []string, source, topic string, opts ...kgo.Opt) (*DeadLetter, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ClientID(DefaultClientID), kgo.MaxBufferedRecords(10000)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter topic %s: %w", topic, err)
	}
	return &DeadLetter{cl: cl, topic: topic, source: source}, nil
}

// EnsureTopic creates the dead-letter topic (the brokers' default
// partitions and replication) unless it exists.
func (d *DeadLetter) EnsureTopic(ctx context.Context) error {
	adm := kadm.NewClient(d.cl)
	details, err := adm.ListTopics(ctx, d.topic)
	if err != nil {
		return fmt.Errorf("dead-letter topic %s: list topics: %w", d.topic, err)
	}
	if dt, ok := details[d.topic]; ok && dt.Err == nil {
		return nil
	}
	if _, err := adm.CreateTopic(ctx, -1, -1, nil, d.topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("dead-letter topic %s: create topic: %w", d.topic, err)
	}
	return nil
}

// Send queues record r, which could not be decoded because of reason.
func (d *DeadLetter) Send(r *Record, reason string) {
	rec := &kgo.Record{Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{
		{Key: "streamsql-error", Value: []byte(reason)},
		{Key: "streamsql-topic", Value: []byte(d.source)},
		{Key: "streamsql-partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
		{Key: "streamsql-offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
	}}
	d.cl.TryProduce(context.Background(), rec, nil)
}

// Flush waits until the brokers have every record sent so far (or ctx
// ends): a checkpoint calls it before it records the source's offsets,
// so a record below them has its dead letter even if the server dies the
// next moment.
func (d *DeadLetter) Flush(ctx context.Context) error { return d.cl.Flush(ctx) }

// Close sends what is buffered (for up to five seconds) and closes.
func (d *DeadLetter) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.cl.Flush(ctx)
	d.cl.Close()
}
