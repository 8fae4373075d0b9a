package kafka

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProblemBookkeeping drives the problem rules without a broker:
// progress clears a partition's problem and the topic's, a data-loss
// report outlives progress, problems no fetch repeats expire, a
// partition kgo stopped fetching never does, a failed dial shows at
// once and a dropped connection only when the broker fails again before
// it answers, broker errors clear on an answer.
func TestProblemBookkeeping(t *testing.T) {
	c, err := New(Config{Brokers: []string{"b:1"}, Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	note := func(at time.Time, evs map[int32]event) {
		for p, e := range evs {
			c.seen[p] = e
		}
		c.noteEvents(at)
	}
	problem := func() string {
		if err := c.Problem(); err != nil {
			return strings.TrimPrefix(err.Error(), "Kafka topic t (brokers b:1): ")
		}
		return ""
	}
	fail := func(err error) event { return event{err: err, offset: 7, start: 10, end: 20} }
	note(t0, map[int32]event{
		-1: fail(kerr.TopicAuthorizationFailed),
		0:  fail(kerr.OffsetOutOfRange),
		1:  fail(kerr.NotLeaderForPartition),
		2:  fail(&kgo.ErrDataLoss{Topic: "t", Partition: 2, ConsumedTo: 9, ResetTo: 5}),
		3:  fail(&kgo.ErrDecompressTooLarge{Topic: "t", Partition: 3}),
	})
	p := problem()
	for _, want := range []string{"topic: TOPIC_AUTHORIZATION_FAILED", "partition 0: offset 7 is below the log start 10", "partition 1: NOT_LEADER_FOR_PARTITION", "and 1 more"} {
		if !strings.Contains(p, want) {
			t.Fatalf("Problem %q lacks %q", p, want)
		}
	}
	if !errors.Is(c.Problem(), kerr.NotLeaderForPartition) {
		t.Fatal("errors.Is does not see a partition's error")
	}
	note(t0.Add(time.Second), map[int32]event{1: {progress: true}, 2: {progress: true}})
	if p := problem(); strings.Contains(p, "NOT_LEADER") || strings.Contains(p, "TOPIC_AUTHORIZATION") || !strings.Contains(p, "partition 2: ") {
		t.Fatalf("after progress in partitions 1 and 2: %q", p)
	}
	note(t0.Add(2*partProblemTTL), nil)
	if p := problem(); strings.Contains(p, "partition 0") || !strings.Contains(p, "partition 2: ") || !strings.Contains(p, "partition 3: ") {
		t.Fatalf("after the partitions' TTL: %q", p)
	}
	note(t0.Add(noticeTTL+time.Minute), nil)
	if p := problem(); strings.Contains(p, "partition 2") || !strings.Contains(p, "partition 3: ") {
		t.Fatalf("after the notice's TTL: %q", p)
	}
	delete(c.probs.parts, 3)

	seed := kgo.BrokerMetadata{NodeID: -2147483648, Host: "b", Port: 1}
	b0 := kgo.BrokerMetadata{NodeID: 0, Host: "b", Port: 1}
	b1 := kgo.BrokerMetadata{NodeID: 1, Host: "c", Port: 2}
	c.brokerResult(seed, errors.New("refused"), true)
	c.brokerResult(b1, errors.New("EOF"), false)
	if p := problem(); p != "seed broker b:1: refused" {
		t.Fatalf("a failed dial and a dropped connection: %q (want the dial's error only)", p)
	}
	c.brokerResult(b1, nil, true) // kgo redials: a connection is not an answer
	c.brokerResult(b1, errors.New("EOF"), false)
	if p := problem(); p != "seed broker b:1: refused; broker 1 (c:2): EOF" {
		t.Fatalf("broker problems: %q", p)
	}
	c.brokerResult(b0, nil, false) // a real broker answered: the seed's error goes
	if p := problem(); p != "broker 1 (c:2): EOF" {
		t.Fatalf("after broker 0 answered: %q", p)
	}
	c.brokerResult(b1, nil, false)
	if p := problem(); p != "" || c.probs.nbrokers.Load() != 0 {
		t.Fatalf("after broker 1 answered: %q", p)
	}
	c.brokerResult(b1, errors.New("EOF"), false) // a restarted broker dropped it: kgo redials
	c.brokerResult(b1, nil, false)
	if p := problem(); p != "" || c.probs.nbrokers.Load() != 0 {
		t.Fatalf("a connection dropped once and answered after: %q", p)
	}
	c.brokerResult(b1, errors.New("refused"), true)
	c.probs.brokers[1] = brokerProblem{err: errors.New("old"), at: time.Now().Add(-2 * brokerProblemTTL)}
	if p := problem(); p != "" {
		t.Fatalf("an old broker error: %q", p)
	}
}
