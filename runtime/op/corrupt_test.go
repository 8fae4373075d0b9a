package op

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// wantErr fails unless err is an error containing every one of parts.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one containing %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not contain %q", what, err, p)
		}
	}
}

// restoreAgg restores spec's aggregation from records.
func restoreAgg(t *testing.T, spec *plan.Aggregate, recs [][2][]byte) (*hashAgg, error) {
	t.Helper()
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := blockReader(stateBlock(recs))
	if err != nil {
		t.Fatal(err)
	}
	return a, a.Restore(r)
}

// oldGroupRecord encodes a group record as state written before chunk
// records held it: flags (1: emitted), then per accumulator n, i, f, v and
// its set inline (count, then length-prefixed members; sets[i] for
// accumulator i).
func oldGroupRecord(naccs int, sets map[int][]string) []byte {
	b := []byte{0}
	for i := range naccs {
		b = binary.AppendVarint(b, 0)
		b = binary.AppendVarint(b, 0)
		b = binary.BigEndian.AppendUint64(b, 0)
		b = value.AppendValue(b, plan.Null)
		b = binary.AppendUvarint(b, uint64(len(sets[i])))
		for _, m := range sets[i] {
			b = binary.AppendUvarint(b, uint64(len(m)))
			b = append(b, m...)
		}
	}
	return b
}

// TestCorruptAggState: aggregation state the operator cannot run with
// fails the restore, naming the record: a COUNT(DISTINCT) set size that
// would have sized a huge allocation, bytes after the accumulators, a
// group key that is not its key columns (emitting the group decoded it and
// panicked), a window a running aggregate cannot have; a set whose chunk
// records are missing, hold other members than its group counts, or
// belong to no group.
func TestCorruptAggState(t *testing.T) {
	specs := fuzzAggSpecs()
	hop, running := specs[0], specs[2]
	key := string(value.AppendValue(nil, plan.Str("k")))
	wk := encodeWinKey(nil, winKey{start: 0, end: 30, key: key})
	val := oldGroupRecord(len(hop.Aggs), map[int][]string{1: {"x"}})
	if a, err := restoreAgg(t, hop, [][2][]byte{{wk, val}}); err != nil {
		t.Fatalf("a good group: %v", err)
	} else if g := a.keys[key].groups[0]; g.accs[1].set.len() != 1 {
		t.Fatalf("a group of the older format restores a set of %d members, want 1", g.accs[1].set.len())
	}

	// The set count of accumulator 1 (COUNT(DISTINCT)): after the flags,
	// accumulator 0 (count, sum, double, NULL value, empty set) and the
	// count, sum, double and NULL value of accumulator 1.
	huge := append([]byte(nil), val[:1+(1+1+8+1+1)+(1+1+8+1)]...)
	huge = binary.AppendUvarint(huge, 1<<26)
	_, err := restoreAgg(t, hop, [][2][]byte{{wk, huge}})
	wantErr(t, "set size", err, "aggregation state of", "set of 67108864 members")

	_, err = restoreAgg(t, hop, [][2][]byte{{wk, append(append([]byte(nil), val...), 1)}})
	wantErr(t, "trailing bytes", err, "1 bytes after the last accumulator")
	_, err = restoreAgg(t, hop, [][2][]byte{{wk, oldGroupRecord(len(hop.Aggs), map[int][]string{2: {"x"}})}})
	wantErr(t, "a set for SUM", err, "accumulator 2: a set of 1 members")

	badKey := encodeWinKey(nil, winKey{start: 0, end: 30, key: "\x09"})
	_, err = restoreAgg(t, hop, [][2][]byte{{badKey, val}})
	wantErr(t, "group key", err, "aggregation state key", "group key column 0")
	longKey := encodeWinKey(nil, winKey{start: 0, end: 30, key: key + key})
	_, err = restoreAgg(t, hop, [][2][]byte{{longKey, val}})
	wantErr(t, "group key", err, "bytes after its 1 columns")
	_, err = restoreAgg(t, hop, [][2][]byte{{encodeWinKey(nil, winKey{start: 30, end: 30, key: key}), val}})
	wantErr(t, "empty window", err, "empty window [30, 30)")

	rkey := string(value.AppendValue(value.AppendValue(nil, plan.Str("k")), plan.Int(1)))
	rval := oldGroupRecord(len(running.Aggs), nil)
	_, err = restoreAgg(t, running, [][2][]byte{{encodeWinKey(nil, winKey{start: 1, end: 2, key: rkey}), rval}})
	wantErr(t, "running window", err, "window [1, 2) of a running aggregate")
	if _, err := restoreAgg(t, running, [][2][]byte{{encodeWinKey(nil, winKey{key: rkey}), rval}}); err != nil {
		t.Fatalf("a good running group: %v", err)
	}

	// Sets in chunk records: a group of the older format snapshots to a
	// record and one chunk (set 1, chunk 0) that restore.
	a, _ := restoreAgg(t, hop, [][2][]byte{{wk, oldGroupRecord(len(hop.Aggs), map[int][]string{1: {"x", "y"}})}})
	_, recs := snapshotBlock(t, a)
	chunk := string(chunkKey(nil, key, 1, 0))
	if len(recs) != 2 || recs[chunk] == "" {
		t.Fatalf("snapshot of one group with a set: %q, want its record and chunk %q", recs, chunk)
	}
	if _, err := restoreAgg(t, hop, [][2][]byte{{wk, []byte(recs[string(wk)])}, {[]byte(chunk), []byte(recs[chunk])}}); err != nil {
		t.Fatalf("a group with its chunk: %v", err)
	}
	_, err = restoreAgg(t, hop, [][2][]byte{{wk, []byte(recs[string(wk)])}})
	wantErr(t, "no chunk", err, "aggregation state of group", "set 1 has 1 chunks, only 0 chunk records are left")
	_, err = restoreAgg(t, hop, [][2][]byte{{wk, []byte(recs[string(wk)])}, {chunkKey(nil, key, 1, 1), []byte(recs[chunk])}})
	wantErr(t, "missing chunk", err, "aggregation state of group", "chunk 0 of set 1 is missing")
	_, err = restoreAgg(t, hop, [][2][]byte{{wk, []byte(recs[string(wk)])}, {[]byte(chunk), []byte(recs[chunk][:2])}})
	wantErr(t, "short chunk", err, "aggregation state of group", "set 1 has 1 members in its chunks, its group says 2")
	other := chunkKey(nil, key, 7, 0)
	_, err = restoreAgg(t, hop, [][2][]byte{{wk, []byte(recs[string(wk)])}, {[]byte(chunk), []byte(recs[chunk])}, {other, []byte(recs[chunk])}})
	wantErr(t, "orphan chunk", err, "aggregation state of group", "chunk 0 of set 7 belongs to no group")
	_, err = restoreAgg(t, hop, [][2][]byte{{[]byte{chunkRecord, 0, 0}, []byte(recs[chunk])}})
	wantErr(t, "set 0", err, "aggregation state key", "bad set id")
}

// TestSessionMergeOverflow: two sessions whose BIGINT sums each fit but
// not together fail the query with the SUM overflow when a row merges
// them (it panicked: the merge's error was taken for a broken invariant).
func TestSessionMergeOverflow(t *testing.T) {
	spec := fuzzAggSpecs()[1] // SUM(v) over sessions of gap 10
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	k := plan.Str("k")
	key := string(value.AppendValue(nil, k))
	send := func(ts, v int64) error {
		b := &Batch{}
		b.Append(plan.Row{plan.Time(ts), k, plan.Int(v)}, RowMeta{Key: key, WM: window.NoWatermark})
		return a.Process(b, &countEmitter{width: len(spec.Out)})
	}
	if err := send(0, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if err := send(15, 1); err != nil {
		t.Fatal(err)
	}
	if err := send(8, 0); !errors.Is(err, errOverflow) {
		t.Fatalf("merging the sessions: %v, want %v", err, errOverflow)
	}
}

// TestCorruptJoinState: a held row of the wrong width (the join
// concatenates rows by position; downstream indexes panicked), or a delete
// version where the join keeps none, fails the restore.
func TestCorruptJoinState(t *testing.T) {
	row := jr(1, 100, 5)
	rec := func(side int, r plan.Row, deleted bool) [2][]byte {
		jrow := &joinRow{side: uint8(side), key: string(value.EncodeKey(nil, row, []int{0})), time: 100, seq: 1, row: r, deleted: deleted, id: "i"}
		return [2][]byte{rowRecordKey(nil, jrow), encodeJoinRow(jrow)}
	}
	for i, op := range fuzzJoins(t) {
		r, _ := blockReader(stateBlock([][2][]byte{rec(sideLeft, row, false), rec(sideRight, row, false)}))
		if err := op.Restore(r); err != nil {
			t.Fatalf("join %d: good rows: %v", i, err)
		}
	}
	for _, c := range []struct {
		op   int
		rec  [2][]byte
		want string
	}{
		{0, rec(sideLeft, row[:2], false), "a row of 2 columns on the left side, which has 3"},
		{0, rec(sideRight, append(row, plan.Null), false), "a row of 4 columns on the right side, which has 3"},
		{0, rec(sideRight, row, true), "a delete version on the right side"},
		{1, rec(sideLeft, row, true), "a delete version on the left side"},
		{1, rec(sideLeft, nil, false), "a row of 0 columns on the left side"},
	} {
		r, _ := blockReader(stateBlock([][2][]byte{c.rec}))
		wantErr(t, c.want, fuzzJoins(t)[c.op].Restore(r), "join state record", c.want)
	}
	r, _ := blockReader(stateBlock([][2][]byte{rec(sideRight, row, true)}))
	if err := fuzzJoins(t)[1].Restore(r); err != nil {
		t.Fatalf("a temporal join's delete version: %v", err)
	}
}
