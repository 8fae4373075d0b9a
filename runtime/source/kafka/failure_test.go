package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// waitProblem polls c until cond holds for its Problem. Records handed
// out meanwhile go to keep; with keep nil, they fail the test.
func waitProblem(t testing.TB, c *Consumer, what string, keep *[]Record, cond func(error) bool) error {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		c.Poll(3, func(r *Record) {
			if keep == nil {
				t.Fatalf("%s: record %+v handed out", what, *r)
			}
			*keep = append(*keep, *r)
		})
		if err := c.Problem(); cond(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: gave up after %s; Problem %v, Position %v", what, waitFor, c.Problem(), c.Position())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refetched waits until the problem of partition p was reported by n
// more fetches: kgo had n chances to move the partition elsewhere.
func refetched(t testing.TB, c *Consumer, p int32, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		c.mu.Lock()
		prev := c.probs.parts[p].seen
		c.mu.Unlock()
		waitProblem(t, c, "the problem reported again", nil, func(error) bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			pp, ok := c.probs.parts[p]
			return ok && pp.seen.After(prev)
		})
	}
}

func TestOffsetBelowLogStart(t *testing.T) {
	for _, unknown := range []bool{false, true} {
		t.Run(fmt.Sprintf("bounds unknown %v", unknown), func(t *testing.T) {
			cl, addr := newCluster(t, kfake.SeedTopics(2, "t"))
			p := newProducer(t, addr)
			var recs []*kgo.Record
			for i := 0; i < 10; i++ {
				recs = append(recs, mk("t", 0, "k", fmt.Sprint(i), 0))
			}
			produce(t, p, recs...)
			if err := cl.DeleteRecords("t", 0, 5); err != nil {
				t.Fatal(err)
			}
			c := newConsumer(t, addr, "t")
			// Real brokers send no log bounds with OFFSET_OUT_OF_RANGE
			// (kfake does): the consumer looks them up.
			c.boundsUnknown = unknown
			start(t, c, map[int32]int64{0: 2, 1: 0})
			want := "Kafka topic t (brokers " + addr + "): partition 0: offset 2 is below the log start 5 (deleted by retention)"
			err := waitProblem(t, c, "the out-of-range offset", nil, func(err error) bool { return err != nil && err.Error() == want })
			var oe *OffsetOutOfRangeError
			if !errors.As(err, &oe) || !errors.Is(err, kerr.OffsetOutOfRange) || *oe != (OffsetOutOfRangeError{Partition: 0, Offset: 2, LogStart: 5, LogEnd: 10}) {
				t.Fatalf("Problem %v (%#v)", err, oe)
			}
			// kgo retries the fetch at the same offset; it never jumps.
			refetched(t, c, 0, 3)
			if pos := c.Position(); !equalOffsets(pos, map[int32]int64{0: 2, 1: 0}) {
				t.Fatalf("Position %v moved", pos)
			}
			// The other partition goes on.
			other := produce(t, p, mk("t", 1, "o", "1", 0))
			checkRecords(t, pollUntil(t, c, 0, "partition 1", func(g []Record) bool { return len(g) == 1 }), other)
			if err := c.Problem(); err == nil || err.Error() != want {
				t.Fatalf("Problem after partition 1's record: %v", err)
			}
		})
	}
}

func TestOffsetPastLogEnd(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	p := newProducer(t, addr)
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, mk("t", 0, "k", fmt.Sprint(i), 0))
	}
	produce(t, p, recs[:10]...)
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 15})
	want := "partition 0: offset 15 is past the log end 10"
	waitProblem(t, c, "the offset past the end", nil, func(err error) bool { return err != nil && strings.Contains(err.Error(), want) })
	refetched(t, c, 0, 2)
	// The log grows past the position: fetching resumes there.
	produce(t, p, recs[10:]...)
	checkRecords(t, readTo(t, c, 0, map[int32]int64{0: 20}), recs[15:])
	if err := c.Problem(); err != nil {
		t.Fatalf("Problem after reading again: %v", err)
	}
}

func TestUnreachableBrokers(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c := newConsumer(t, addr, "t")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.Partitions(ctx)
	if err == nil || !strings.Contains(err.Error(), "brokers "+addr) || !strings.Contains(err.Error(), "cannot reach the brokers") {
		t.Fatalf("Partitions with no broker: %v", err)
	}
	t.Logf("Partitions with no broker: %v", err)
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := c.EndOffsets(ctx); err == nil || !strings.Contains(err.Error(), "cannot reach the brokers") {
		t.Fatalf("EndOffsets with no broker: %v", err)
	}
	start(t, c, map[int32]int64{0: 0})
	err = waitProblem(t, c, "no broker", nil, func(err error) bool { return err != nil })
	if !strings.Contains(err.Error(), "seed broker "+addr) {
		t.Fatalf("Problem with no broker: %v", err)
	}
}

// TestBrokerRestart stops the broker (kfake with a data directory) under
// a consumer and starts it again on the same port: Problem says so while
// it is down and clears after; nothing is lost or read twice.
func TestBrokerRestart(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	run := func() *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir), kfake.SeedTopics(2, "t"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	k1 := run()
	addr := k1.ListenAddrs()[0]
	var all []*kgo.Record
	for i := 0; i < 40; i++ {
		all = append(all, mk("t", int32(i%2), fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), 1_700_000_000_000+int64(i)))
	}
	p := newProducer(t, addr)
	produce(t, p, all[:20]...)
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 0, 1: 0})
	got := pollUntil(t, c, 3, "some records", func(g []Record) bool { return len(g) >= 7 })

	k1.Close()
	err := waitProblem(t, c, "the broker down", &got, func(err error) bool { return err != nil })
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("Problem while the broker is down: %v", err)
	}
	t.Logf("Problem while the broker is down: %v", err)
	// What kgo had buffered may still come out: take it.
	c.Poll(0, func(r *Record) { got = append(got, *r) })
	// kgo tries again and fails again: the problem stays.
	since := time.Now()
	for i := 0; ; i++ {
		c.Poll(0, func(r *Record) { got = append(got, *r) })
		if c.Problem() == nil {
			t.Fatal("Problem nil while the broker is down")
		}
		c.mu.Lock()
		again := false
		for _, bp := range c.probs.brokers {
			again = again || bp.at.After(since)
		}
		c.mu.Unlock()
		if again {
			break
		}
		if time.Since(since) > waitFor {
			t.Fatal("no new connection error while the broker is down")
		}
		time.Sleep(20 * time.Millisecond)
	}

	run()
	p2 := newProducer(t, addr)
	produce(t, p2, all[20:]...)
	got = append(got, readTo(t, c, 5, map[int32]int64{0: 20, 1: 20})...)
	checkRecords(t, got, all)
	waitProblem(t, c, "the broker back", nil, func(err error) bool { return err == nil })
}

// TestTopicDeleted: Problem names the unknown topic.
func TestTopicDeleted(t *testing.T) {
	k, addr := newCluster(t, kfake.SeedTopics(1, "t"))
	p := newProducer(t, addr)
	want := produce(t, p, mk("t", 0, "a", "1", 0))
	c := newConsumer(t, addr, "t")
	start(t, c, map[int32]int64{0: 0})
	checkRecords(t, pollUntil(t, c, 0, "the record", func(g []Record) bool { return len(g) == 1 }), want)
	if err := k.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	err := waitProblem(t, c, "the deleted topic", nil, func(err error) bool { return err != nil })
	if !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Problem after deleting the topic: %v", err)
	}
	t.Logf("Problem after deleting the topic: %v", err)
}
