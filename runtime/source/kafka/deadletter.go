package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DeadLetter sends the records a source could not decode to a topic of
// their own, with the reason and where they came from in headers
// (streamsql-error, streamsql-topic, streamsql-partition,
// streamsql-offset). Best effort and at least once: Send never blocks the
// source (a record that does not fit kgo's buffer, or that the topic
// refuses, is not sent: it is still counted in bad_records and sampled);
// a replay after a crash sends its records again.
//
// Threading: Send and Close are called by the source task's goroutine.
type DeadLetter struct {
	cl     *kgo.Client
	topic  string
	source string
}

// NewDeadLetter makes the producer of dead-letter topic topic for records
// of source topic source. It does no I/O.
func NewDeadLetter(brokers []string, source, topic string) (*DeadLetter, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ClientID(DefaultClientID), kgo.MaxBufferedRecords(10000))
	if err != nil {
		return nil, fmt.Errorf("dead-letter topic %s: %w", topic, err)
	}
	return &DeadLetter{cl: cl, topic: topic, source: source}, nil
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

// Close sends what is buffered (for up to five seconds) and closes.
func (d *DeadLetter) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.cl.Flush(ctx)
	d.cl.Close()
}
