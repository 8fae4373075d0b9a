package runtime

import (
	"fmt"
	"maps"
	"testing"

	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
)

// logStep is one checkpoint of one subtask's operator: puts (value "" is a
// delete) and whether the snapshot is full.
type logStep struct {
	ckpt uint64
	full bool
	puts map[string]string
}

// writeLog writes steps through a stateLog as the task does, and returns
// the model: the state each subtask holds after each checkpoint.
func writeLog(t *testing.T, store state.Versioned, l *stateLog, steps []logStep, model map[string]string) {
	t.Helper()
	for _, s := range steps {
		w := op.NewLogWriter(s.full, nil)
		if s.full {
			clear(model)
		}
		for k, v := range s.puts {
			if v == "" {
				w.Delete([]byte(k))
				delete(model, k)
			} else {
				w.Put([]byte(k), []byte(v))
				model[k] = v
			}
		}
		if kvs := l.blocks(s.ckpt, &w); len(kvs) > 0 {
			if err := store.Write(s.ckpt, kvs); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func readLog(t *testing.T, store state.Versioned, prefix []byte, at uint64) (map[string]string, map[int][][]byte) {
	t.Helper()
	keys, vals, blocks, err := readStateLog(store, prefix, at)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, k := range keys {
		got[k] = string(vals[k])
	}
	return got, blocks
}

// TestStateLogReplay: reads at each checkpoint see the base and the deltas
// after it, whatever was compacted later; a restore at another
// parallelism reads every subtask's log, and its first base supersedes
// them all.
func TestStateLogReplay(t *testing.T) {
	store := state.NewMemVersioned()
	prefix := []byte("q/op/")
	var at []map[string]string // model per checkpoint, subtasks merged
	m0, m1 := map[string]string{}, map[string]string{}
	l0 := &stateLog{prefix: prefix, subtask: 0}
	l1 := &stateLog{prefix: prefix, subtask: 1}
	steps0 := []logStep{
		{1, true, map[string]string{"a": "1", "b": "1"}},
		{2, false, map[string]string{"a": "2", "c": "1"}},
		{3, false, map[string]string{"b": ""}},
		{4, true, map[string]string{"a": "2", "c": "4"}},
		{5, false, map[string]string{"d": "5", "a": ""}},
	}
	steps1 := []logStep{
		{1, true, map[string]string{"x": "1"}},
		{2, false, nil},
		{3, false, map[string]string{"y": "3"}},
		{4, false, map[string]string{"x": ""}},
		{5, true, map[string]string{"y": "5"}},
	}
	at = append(at, map[string]string{})
	for i := range steps0 {
		writeLog(t, store, l0, steps0[i:i+1], m0)
		writeLog(t, store, l1, steps1[i:i+1], m1)
		all := maps.Clone(m0)
		maps.Copy(all, m1)
		at = append(at, all)
	}
	for c := uint64(1); c <= 5; c++ {
		got, _ := readLog(t, store, prefix, c)
		if fmt.Sprint(got) != fmt.Sprint(at[c]) {
			t.Errorf("at %d: %v, want %v", c, got, at[c])
		}
	}

	// Restart at parallelism 1 from checkpoint 5: the task supersedes both
	// logs at its first base (checkpoint 6).
	got, blocks := readLog(t, store, prefix, 5)
	nl := &stateLog{prefix: prefix, subtask: 0}
	for s, keys := range blocks {
		if s%1 == 0 {
			nl.written = append(nl.written, keys...)
		}
	}
	if !nl.full() {
		t.Fatal("a task's first snapshot must be a base")
	}
	model := map[string]string{}
	writeLog(t, store, nl, []logStep{{6, true, got}, {7, false, map[string]string{"z": "7"}}}, model)
	after, blocks := readLog(t, store, prefix, 7)
	if fmt.Sprint(after) != fmt.Sprint(model) {
		t.Errorf("after restart: %v, want %v", after, model)
	}
	if len(blocks) != 1 || len(blocks[0]) != 2 {
		t.Errorf("after the base, blocks %v: want only the new base and delta of subtask 0", blocks)
	}
	// Older checkpoints still read as they were (until GC).
	if old, _ := readLog(t, store, prefix, 5); fmt.Sprint(old) != fmt.Sprint(at[5]) {
		t.Errorf("at 5 after the restart: %v, want %v", old, at[5])
	}
}

// TestStateLogBlocksAndCompaction: large snapshots split into blocks
// between records, and a log compacts once its deltas outgrow its base.
func TestStateLogBlocksAndCompaction(t *testing.T) {
	store := state.NewMemVersioned()
	prefix := []byte("q/op/")
	l := &stateLog{prefix: prefix}
	val := string(make([]byte, 1000))
	big := map[string]string{}
	for i := range 3000 { // ~3 MB: at least 3 blocks
		big[fmt.Sprintf("k%05d", i)] = val
	}
	model := map[string]string{}
	writeLog(t, store, l, []logStep{{1, true, big}}, model)
	if n := len(l.written); n < 3 {
		t.Fatalf("a 3 MB base wrote %d blocks, want at least 3", n)
	}
	got, _ := readLog(t, store, prefix, 1)
	if len(got) != len(big) {
		t.Fatalf("read %d records, want %d", len(got), len(big))
	}
	ckpt := uint64(2)
	for ; !l.full(); ckpt++ {
		writeLog(t, store, l, []logStep{{ckpt, false, big}}, model)
		if ckpt > 10 {
			t.Fatal("the log never asked for compaction")
		}
	}
	if l.deltaBytes <= compactMin {
		t.Fatalf("compaction asked at %d delta bytes, under %d", l.deltaBytes, compactMin)
	}
}
