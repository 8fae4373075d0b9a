package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// recStrings renders records for comparison.
func recStrings(recs []rec) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.String()
	}
	return out
}

func wantRecs(t testing.TB, what string, got []rec, want ...string) {
	t.Helper()
	g := recStrings(got)
	if len(g) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("%s:\ngot  %s\nwant %s", what, strings.Join(g, "\n     "), strings.Join(want, "\n     "))
	}
}

func tomb(id int64) string { return jsonKey(id) + " => <tombstone>" }
func kv(id int64, name string, price float64, ts int64, ok bool, qty int64) string {
	return jsonKey(id) + " => " + jsonRow(id, name, price, ts, ok, qty)
}

// progressRecs reads the progress topic and checks its records' form,
// returning the epochs, in order.
func progressRecs(t testing.TB, addr, topic, sinkID string) []uint64 {
	t.Helper()
	var epochs []uint64
	for _, r := range readTopic(t, addr, topic, true) {
		if r.key != sinkID || r.value == nil {
			t.Fatalf("progress record %s, want key %s", r, sinkID)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(*r.value), &v); err != nil {
			t.Fatal(err)
		}
		at, _ := v["committed_at"].(string)
		if _, err := time.Parse(time.RFC3339, at); err != nil || len(v) != 3 || v["sink_id"] != sinkID {
			t.Fatalf("progress record %s: want {sink_id, epoch, committed_at}", r)
		}
		epochs = append(epochs, uint64(v["epoch"].(float64)))
	}
	return epochs
}

// TestCommitEpochs commits epochs and reads them back as a read_committed
// consumer would: each epoch's records once, in order per key, keys and
// values as specified, a tombstone per delete, and the progress records.
func TestCommitEpochs(t *testing.T) {
	_, addr := newCluster(t)
	spec := testSpec(addr, "out", true)
	p := open(t, spec)
	if n := committed(t, p); n != 0 {
		t.Fatalf("Committed on a new topic = %d", n)
	}
	commit(t, p, 1,
		upsert(row(1, "a", 1.5, 1704067210000, true, 10)),
		upsert(row(2, `b "quoted" <tag>`, -0.25, 0, false, -3)),
		upsert(plan.Row{plan.Int(3), plan.Null, plan.Float(math.NaN()), plan.Null, plan.Null, plan.Null}),
	)
	// Epoch 2: an update, a delete, an insert, a delete of a key never
	// written.
	commit(t, p, 2,
		upsert(row(1, "a2", 2.5, 1704067211000, false, 11)),
		del(2),
		upsert(row(4, "d", math.Inf(1), 1704067212345, true, 0)),
		del(9),
	)
	commit(t, p, 3) // an empty epoch: only its progress record
	all := []string{
		kv(1, "a", 1.5, 1704067210000, true, 10),
		kv(2, `b "quoted" <tag>`, -0.25, 0, false, -3),
		jsonKey(3) + ` => {"id":3,"name":null,"price":"NaN","ts":null,"ok":null,"qty":null}`,
		kv(1, "a2", 2.5, 1704067211000, false, 11),
		tomb(2),
		kv(4, "d", math.Inf(1), 1704067212345, true, 0),
		tomb(9),
	}
	got := readTopic(t, addr, "out", true)
	// Across partitions the order is not defined: compare sorted, and
	// check per key order below.
	if g := recStrings(got); !sameSet(g, all) {
		t.Fatalf("records:\ngot  %s\nwant %s", strings.Join(g, "\n     "), strings.Join(all, "\n     "))
	}
	perKey := map[string][]string{}
	for _, r := range got {
		perKey[r.key] = append(perKey[r.key], r.String())
	}
	if k := perKey[jsonKey(1)]; len(k) != 2 || k[0] != all[0] || k[1] != all[3] {
		t.Fatalf("key 1's records out of order: %v", k)
	}
	if k := perKey[jsonKey(2)]; len(k) != 2 || k[1] != all[4] {
		t.Fatalf("key 2's records out of order: %v", k)
	}
	wantFinal := map[string]string{
		jsonKey(1): jsonRow(1, "a2", 2.5, 1704067211000, false, 11),
		jsonKey(3): `{"id":3,"name":null,"price":"NaN","ts":null,"ok":null,"qty":null}`,
		jsonKey(4): jsonRow(4, "d", math.Inf(1), 1704067212345, true, 0),
	}
	if l := latest(got); !reflect.DeepEqual(l, wantFinal) {
		t.Fatalf("latest rows per key:\ngot  %v\nwant %v", l, wantFinal)
	}
	if e := progressRecs(t, addr, "out.streamsql-progress", spec.SinkID); !reflect.DeepEqual(e, []uint64{1, 2, 3}) {
		t.Fatalf("progress epochs %v, want [1 2 3]", e)
	}
	if n := committed(t, p); n != 3 {
		t.Fatalf("Committed = %d, want 3", n)
	}

	// An epoch committed already: ErrCommitted, nothing produced.
	ends := endOffsets(t, addr, "out", "out.streamsql-progress")
	for _, e := range []uint64{3, 1} {
		if err := p.CommitEpoch(ctx(t), e, []sink.Change{upsert(row(7, "dup", 0, 0, true, 0))}); !errors.Is(err, sink.ErrCommitted) {
			t.Fatalf("CommitEpoch(%d) again: %v, want ErrCommitted", e, err)
		}
	}
	// A new publisher (a restart) knows it from the progress topic.
	p2 := open(t, spec)
	if n := committed(t, p2); n != 3 {
		t.Fatalf("a new publisher's Committed = %d, want 3", n)
	}
	if err := p2.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(7, "dup", 0, 0, true, 0))}); !errors.Is(err, sink.ErrCommitted) {
		t.Fatalf("CommitEpoch(2) on a new publisher: %v, want ErrCommitted", err)
	}
	if e := endOffsets(t, addr, "out", "out.streamsql-progress"); !reflect.DeepEqual(e, ends) {
		t.Fatalf("committing again produced records: end offsets %v, then %v", ends, e)
	}
	// The new publisher goes on with epoch 4; the old one was fenced.
	commit(t, p2, 4, upsert(row(5, "e", 5, 5, true, 5)))
	if err := p.CommitEpoch(ctx(t), 5, []sink.Change{upsert(row(6, "old", 0, 0, true, 0))}); err == nil || errors.Is(err, sink.ErrCommitted) || sink.IsPermanent(err) {
		t.Fatalf("the fenced publisher's CommitEpoch: %v, want a retryable error", err)
	}
	if l := latest(readTopic(t, addr, "out", true)); len(l) != 4 || l[jsonKey(5)] != jsonRow(5, "e", 5, 5, true, 5) || l[jsonKey(6)] != "" {
		t.Fatalf("after epoch 4: %v", l)
	}
	if n := committed(t, p2); n != 4 {
		t.Fatalf("Committed = %d, want 4", n)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// endOffsets lists the topics' high watermarks ("topic/partition" ->
// offset) and fails unless every partition's last stable offset equals
// its high watermark (no transaction open).
func endOffsets(t testing.TB, addr string, topics ...string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	hw, err := adm.ListEndOffsets(ctx(t), topics...)
	if err == nil {
		err = hw.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx(t), topics...)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	hw.Each(func(o kadm.ListedOffset) {
		out[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Offset
		if l, _ := lso.Lookup(o.Topic, o.Partition); l.Offset != o.Offset {
			t.Fatalf("%s/%d: last stable offset %d, high watermark %d: a transaction is open", o.Topic, o.Partition, l.Offset, o.Offset)
		}
	})
	return out
}

// TestFencedOpenTransaction: a second publisher of the same sink fences
// the first while the first has produced an epoch's records in an open
// transaction. The records were written (a read_uncommitted reader sees
// them) but never become visible to read_committed readers, the first
// publisher's commit fails, and the second's Committed is right.
func TestFencedOpenTransaction(t *testing.T) {
	_, addr := newCluster(t)
	spec := testSpec(addr, "out", true)
	p1 := open(t, spec)
	commit(t, p1, 1, upsert(row(1, "a", 1, 1, true, 1)))

	var p2 *Publisher
	var during []rec
	p1.beforeEnd = func() {
		p1.beforeEnd = nil
		// The open transaction holds read_committed readers back: the
		// last stable offset stays below the high watermark.
		if lso, hw := stableAndEnd(t, addr, "out"); lso >= hw {
			t.Errorf("with a transaction open: last stable offset %d, high watermark %d", lso, hw)
		}
		p2 = open(t, spec)
		if n := committed(t, p2); n != 1 { // fences p1, aborting its transaction
			t.Errorf("the second publisher's Committed = %d, want 1", n)
		}
		during = readTopic(t, addr, "out", true)
	}
	zombie := []sink.Change{upsert(row(1, "zombie", 2, 2, false, 2)), upsert(row(2, "zombie", 2, 2, false, 2))}
	err := p1.CommitEpoch(ctx(t), 2, zombie)
	// kfake now and then answers a produce of the transaction with
	// OUT_OF_ORDER_SEQUENCE_NUMBER (about once in a few thousand runs
	// under -race on a loaded machine), before the transaction is ended:
	// the epoch then failed retryably and the runtime would retry it, as
	// here. The fence is tested once a transaction reaches its end.
	retried := false
	for try := 1; err != nil && p1.beforeEnd != nil && !sink.IsPermanent(err) && try < 5; try++ {
		retried = true
		t.Logf("epoch 2 failed before its transaction was ended (try %d): %v; retrying", try, err)
		err = p1.CommitEpoch(ctx(t), 2, zombie)
	}
	if err == nil || errors.Is(err, sink.ErrCommitted) || sink.IsPermanent(err) || !strings.Contains(err.Error(), "commit outcome unknown") {
		t.Fatalf("the fenced publisher's CommitEpoch: %v, want a retryable 'outcome unknown' error", err)
	}
	// Kafka answers a fenced producer's EndTxn with PRODUCER_FENCED; kfake
	// (EndTxn v5, KIP-890), seeing the epoch just below its own and no
	// transaction open, takes it for a retry of an abort and answers
	// INVALID_TXN_STATE to a commit.
	if !strings.Contains(err.Error(), "PRODUCER_FENCED") && !strings.Contains(err.Error(), "INVALID_TXN_STATE") {
		t.Errorf("the fenced publisher's error does not say it was fenced: %v", err)
	}
	t.Logf("the fenced publisher's error: %v", err)
	wantRecs(t, "read_committed while fenced", during, kv(1, "a", 1, 1, true, 1))
	wantRecs(t, "read_committed after", readTopic(t, addr, "out", true), kv(1, "a", 1, 1, true, 1))
	// (A failed try may have appended some of its records too, aborted.)
	if u := readTopic(t, addr, "out", false); len(u) != 3 && !(retried && len(u) > 3) {
		t.Fatalf("read_uncommitted sees %d records, want 3 (epoch 2's were produced, then aborted): %v", len(u), recStrings(u))
	}
	if e := progressRecs(t, addr, "out.streamsql-progress", spec.SinkID); !reflect.DeepEqual(e, []uint64{1}) {
		t.Fatalf("progress epochs %v, want [1]", e)
	}
	endOffsets(t, addr, "out", "out.streamsql-progress") // nothing open
	if n := committed(t, p2); n != 1 {
		t.Fatalf("Committed = %d, want 1", n)
	}
	commit(t, p2, 2, upsert(row(2, "b", 2, 2, true, 2)))
	if l := latest(readTopic(t, addr, "out", true)); !reflect.DeepEqual(l, map[string]string{jsonKey(1): jsonRow(1, "a", 1, 1, true, 1), jsonKey(2): jsonRow(2, "b", 2, 2, true, 2)}) {
		t.Fatalf("latest: %v", l)
	}
}

// TestRecordRefusedAborts: a record the producer refuses (too large) is a
// permanent error; the transaction is aborted at once (no reader waits
// for its timeout) and the publisher goes on with the next epoch.
func TestRecordRefusedAborts(t *testing.T) {
	_, addr := newCluster(t)
	spec := testSpec(addr, "out", true)
	p := open(t, spec)
	commit(t, p, 1, upsert(row(1, "a", 1, 1, true, 1)))
	big := strings.Repeat("x", 2<<20)
	err := p.CommitEpoch(ctx(t), 2, []sink.Change{upsert(row(2, "b", 2, 2, true, 2)), upsert(row(3, big, 3, 3, true, 3))})
	if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") || !strings.Contains(err.Error(), `key {"id":3}`) {
		t.Fatalf("CommitEpoch with a 2 MiB record: %v, want a permanent MESSAGE_TOO_LARGE error naming the key", err)
	}
	// Aborted: the progress record was produced, and its transaction is
	// over (last stable offset = high watermark).
	endOffsets(t, addr, "out", "out.streamsql-progress")
	if u := readTopic(t, addr, "out.streamsql-progress", false); len(u) != 2 {
		t.Fatalf("read_uncommitted progress records: %v, want epoch 1's and epoch 2's aborted one", recStrings(u))
	}
	wantRecs(t, "read_committed", readTopic(t, addr, "out", true), kv(1, "a", 1, 1, true, 1))
	if n := committed(t, p); n != 1 {
		t.Fatalf("Committed = %d, want 1", n)
	}
	commit(t, p, 2, upsert(row(2, "b", 2, 2, true, 2)))
	if e := progressRecs(t, addr, "out.streamsql-progress", spec.SinkID); !reflect.DeepEqual(e, []uint64{1, 2}) {
		t.Fatalf("progress epochs %v, want [1 2]", e)
	}
}

// TestTopicCreation: missing topics are created (partitions from the
// sink, one for progress, both compacted); an existing topic is used as
// it is; the same key always lands in the same partition.
func TestTopicCreation(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(2, "existing"))
	p := open(t, testSpec(addr, "made", true, "partitions", "4", "progress_topic", "prog"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx(t), "made", "prog", "existing", "existing.streamsql-progress")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details["made"].Partitions); n != 4 {
		t.Fatalf("made: %d partitions, want 4", n)
	}
	if n := len(details["prog"].Partitions); n != 1 {
		t.Fatalf("prog: %d partitions, want 1", n)
	}
	if _, ok := details["existing.streamsql-progress"]; ok && details["existing.streamsql-progress"].Err == nil {
		t.Fatal("a progress topic nobody asked for exists")
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx(t), "made", "prog")
	if err == nil && len(cfgs) != 2 {
		err = fmt.Errorf("%d topics described, want 2", len(cfgs))
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range cfgs {
		policy := ""
		for _, cf := range rc.Configs {
			if cf.Key == "cleanup.policy" && cf.Value != nil {
				policy = *cf.Value
			}
		}
		if policy != "compact" {
			t.Fatalf("%s: cleanup.policy %q, want compact", rc.Name, policy)
		}
	}

	// Many keys, each updated in several epochs: one partition per key.
	for e := uint64(1); e <= 3; e++ {
		var chs []sink.Change
		for id := int64(0); id < 40; id++ {
			chs = append(chs, upsert(row(id, fmt.Sprint(e), 0, 0, true, int64(e))))
		}
		commit(t, p, e, chs...)
	}
	part := map[string]int32{}
	used := map[int32]bool{}
	recs := readTopic(t, addr, "made", true)
	if len(recs) != 120 {
		t.Fatalf("%d records, want 120", len(recs))
	}
	for _, r := range recs {
		if q, ok := part[r.key]; ok && q != r.part {
			t.Fatalf("key %s in partitions %d and %d", r.key, q, r.part)
		}
		part[r.key] = r.part
		used[r.part] = true
	}
	if len(used) < 2 {
		t.Fatalf("40 keys all in partitions %v: not partitioned by key", used)
	}

	// An existing topic keeps its partitions.
	p2 := open(t, testSpec(addr, "existing", true, "partitions", "8"))
	commit(t, p2, 1, upsert(row(1, "a", 1, 1, true, 1)))
	if n := len(c.PartitionInfos("existing")); n != 2 {
		t.Fatalf("existing: %d partitions, want 2", n)
	}
}

// TestAtLeastOnce: Apply writes records without a progress topic or a
// transaction; replaying the same changes converges to the same rows.
func TestAtLeastOnce(t *testing.T) {
	_, addr := newCluster(t)
	spec := testSpec(addr, "al", false)
	p := open(t, spec)
	if err := p.CommitEpoch(ctx(t), 1, nil); err == nil {
		t.Fatal("CommitEpoch on an at-least-once sink succeeded")
	}
	batch1 := []sink.Change{upsert(row(1, "a", 1, 1, true, 1)), upsert(row(2, "b", 2, 2, true, 2))}
	batch2 := []sink.Change{del(1), upsert(row(2, "b2", 2, 2, false, 3))}
	for _, b := range [][]sink.Change{batch1, batch2, batch1, batch2} { // a replay
		if err := p.Apply(ctx(t), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Apply(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	got := readTopic(t, addr, "al", true)
	if len(got) != 8 {
		t.Fatalf("%d records, want 8: %v", len(got), recStrings(got))
	}
	if l := latest(got); !reflect.DeepEqual(l, map[string]string{jsonKey(2): jsonRow(2, "b2", 2, 2, false, 3)}) {
		t.Fatalf("latest: %v", l)
	}
	if u := readTopic(t, addr, "al", false); len(u) != 8 {
		t.Fatalf("read_uncommitted: %d records, want 8 (no transaction markers)", len(u))
	}
	if n := committed(t, p); n != 0 {
		t.Fatalf("Committed = %d", n)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := details["al.streamsql-progress"]; ok {
		t.Fatal("an at-least-once sink created a progress topic")
	}
	big := strings.Repeat("x", 2<<20)
	if err := p.Apply(ctx(t), []sink.Change{upsert(row(3, big, 3, 3, true, 3))}); err == nil || !sink.IsPermanent(err) {
		t.Fatalf("Apply of a 2 MiB record: %v, want a permanent error", err)
	}
	if err := p.Apply(ctx(t), []sink.Change{upsert(row(3, "c", 3, 3, true, 3))}); err != nil {
		t.Fatalf("Apply after a refused record: %v", err)
	}
}

// stableAndEnd sums topic's last stable offsets and high watermarks over
// its partitions.
func stableAndEnd(t testing.TB, addr, topic string) (lso, hw int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	h, err := adm.ListEndOffsets(ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	l, err := adm.ListCommittedOffsets(ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	h.Each(func(o kadm.ListedOffset) { hw += o.Offset })
	l.Each(func(o kadm.ListedOffset) { lso += o.Offset })
	return lso, hw
}

// TestSharedProgressTopic: two sinks share a progress topic. While one
// has a transaction open, the other's progress record committed after
// that transaction began lies beyond the last stable offset: Committed
// must not answer without it (it waits for the transaction to end),
// and answers right once it has.
func TestSharedProgressTopic(t *testing.T) {
	_, addr := newCluster(t)
	specA := testSpec(addr, "a", true, "progress_topic", "shared")
	specB := testSpec(addr, "b", true, "progress_topic", "shared")
	a, b := open(t, specA), open(t, specB)
	if committed(t, a)+committed(t, b) != 0 {
		t.Fatal("Committed on new topics")
	}
	var during error
	a.beforeEnd = func() {
		a.beforeEnd = nil
		commit(t, b, 1, upsert(row(1, "b", 1, 1, true, 1)))
		b2 := open(t, specB)
		short, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
		defer cancel()
		var n uint64
		n, during = b2.Committed(short)
		if during == nil {
			t.Errorf("Committed while another sink's transaction is open on the progress topic = %d, want it to wait", n)
		}
	}
	commit(t, a, 1, upsert(row(1, "a", 1, 1, true, 1)))
	if during == nil || sink.IsPermanent(during) || !strings.Contains(during.Error(), "open transaction") {
		t.Fatalf("Committed held back by an open transaction: %v, want a retryable error saying so", during)
	}
	for _, spec := range []sink.Spec{specA, specB} {
		if n := committed(t, open(t, spec)); n != 1 {
			t.Fatalf("%s: Committed = %d, want 1", spec.SinkID, n)
		}
	}
	if got := readTopic(t, addr, "shared", true); len(got) != 2 {
		t.Fatalf("progress records: %v", recStrings(got))
	}
}
