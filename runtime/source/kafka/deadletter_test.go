package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeadLetterCreatesTopic: on a broker that does not create topics on
// first use, the dead letters of a missing topic reach it once
// EnsureTopic made it (twice is harmless), with the reason and origin in
// headers.
func TestDeadLetterCreatesTopic(t *testing.T) {
	_, addr := newCluster(t) // no kfake.AllowAutoTopicCreation
	d, err := NewDeadLetter([]string{addr}, "src", "src.dlq")
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for range 2 {
		if err := d.EnsureTopic(ctx); err != nil {
			t.Fatal(err)
		}
	}
	d.Send(&Record{Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte{0, 1}}, "bad value")
	d.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("src.dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 && pctx.Err() == nil {
		got = append(got, cl.PollFetches(pctx).Records()...)
	}
	if len(got) != 1 || string(got[0].Key) != "k" || string(got[0].Value) != "\x00\x01" {
		t.Fatalf("dead-letter topic holds %v, want the one record sent", got)
	}
	h := map[string]string{}
	for _, x := range got[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if h["streamsql-error"] != "bad value" || h["streamsql-topic"] != "src" || h["streamsql-partition"] != "2" || h["streamsql-offset"] != "7" {
		t.Fatalf("headers %v", h)
	}
}

// TestDeadLetterFlush: Flush puts the records sent so far in the topic
// even while the producer would linger (here a minute): what a
// checkpoint waits for before it records offsets past them. Without the
// Flush, none are there.
func TestDeadLetterFlush(t *testing.T) {
	_, addr := newCluster(t)
	d, err := newDeadLetter([]string{addr}, "src", "src.dlq", kgo.ProducerLinger(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := testCtx(t)
	if err := d.EnsureTopic(ctx); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		adm := kadm.NewClient(d.cl)
		ends, err := adm.ListEndOffsets(ctx, "src.dlq")
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return int(n)
	}
	for i := range 5 {
		d.Send(&Record{Partition: 0, Offset: int64(i), Value: []byte("x")}, "bad")
	}
	if n := count(); n != 0 {
		t.Fatalf("%d dead letters in the topic before Flush with a minute's linger: the test shows nothing", n)
	}
	fctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	if err := d.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 5 {
		t.Fatalf("%d dead letters in the topic after Flush, want 5", n)
	}
}
