package op

import (
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// FuzzOverState feeds the OVER aggregation's state decoder (Restore) with
// real snapshots, which must round-trip, and with mutations of them,
// which must fail with an error naming the state: never a panic or an
// allocation sized by a corrupt length. A restored state must then take
// rows, the watermark and barriers.
func FuzzOverState(f *testing.F) {
	for i, b := range overSeeds(f) {
		f.Add(uint8(i), b)
	}
	f.Fuzz(checkOverState)
}

// overSpecs are the operators the fuzzer restores: every frame, over
// append-only and updating inputs.
func overSpecs() []*plan.Over {
	var out []*plan.Over
	for _, fr := range overFrames {
		out = append(out, overSpec(fr, false, 0), overSpec(fr, true, 0))
	}
	return out
}

// overSeeds are full snapshots of each of overSpecs after some input.
func overSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for i, spec := range overSpecs() {
		op, err := newOver(spec, &Env{}, &Counters{})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		b := &Batch{}
		for n := range 12 {
			r := plan.Row{plan.Int(rng.Int64N(2)), plan.Int(rng.Int64N(9)), plan.Float(rng.Float64()), plan.Time(rng.Int64N(6000))}
			m := RowMeta{Offset: int64(n), Key: string(value.EncodeKey(nil, r, []int{0})), Op: Insert}
			if spec.Updating {
				m.ID, m.Op = string(value.AppendValue(nil, plan.Int(int64(n)))), Upsert
			}
			b.Append(r, m)
		}
		discard := emitFunc(func(*Batch) error { return nil })
		if err := op.Process(b, discard); err != nil {
			t.Fatal(err)
		}
		if _, err := op.Watermark(3000, discard); err != nil {
			t.Fatal(err)
		}
		if err := op.Barrier(Barrier{}, discard); err != nil {
			t.Fatal(err)
		}
		block, _ := snapshotBlock(t, op)
		seeds = append(seeds, block)
	}
	return seeds
}

func checkOverState(t *testing.T, which uint8, block []byte) {
	r, err := blockReader(block)
	if err != nil {
		return
	}
	specs := overSpecs()
	spec := specs[int(which)%len(specs)]
	op, err := newOver(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Restore(r); err != nil {
		if !errors.Is(err, errOverState) {
			t.Fatalf("error does not name the state: %v", err)
		}
		return
	}
	b1, recs1 := snapshotBlock(t, op)
	r1, _ := blockReader(b1)
	op2, _ := newOver(spec, &Env{}, &Counters{})
	if err := op2.Restore(r1); err != nil {
		t.Fatalf("restoring its own snapshot: %v", err)
	}
	if _, recs2 := snapshotBlock(t, op2); !maps.Equal(recs1, recs2) {
		t.Fatalf("snapshot of the restored snapshot differs:\n%q\n%q", recs1, recs2)
	}
	out := &countEmitter{width: len(spec.Out)}
	b := &Batch{}
	for _, k := range r.keys {
		row := plan.Row{plan.Int(0), plan.Int(1), plan.Float(1), plan.Time(1 << 40)}
		m := RowMeta{Key: k[1:], Op: Insert}
		if spec.Updating {
			m.ID, m.Op = "fuzz", Upsert
		}
		b.Append(row, m)
		break
	}
	if err := op.Process(b, out); err != nil && !errors.Is(err, errOverflow) {
		t.Fatal(err)
	}
	if _, err := op.Watermark(math.MaxInt64, out); err != nil && !errors.Is(err, errOverflow) {
		t.Fatal(err)
	}
	if err := op.Barrier(Barrier{}, out); err != nil && !errors.Is(err, errOverflow) {
		t.Fatal(err)
	}
	if err := op.Snapshot(&LogWriter{}); err != nil {
		t.Fatal(err)
	}
	if out.bad != "" {
		t.Fatal(out.bad)
	}
}
