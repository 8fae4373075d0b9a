package state

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// BenchmarkVersionedCheckpoint writes 1000 changed keys and commits a marker
// per iteration: one operator's checkpoint.
func BenchmarkVersionedCheckpoint(b *testing.B) {
	for _, impl := range []struct {
		name string
		open func(b *testing.B) Versioned
	}{
		{"badger", func(b *testing.B) Versioned {
			v, err := OpenVersioned(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return v
		}},
		{"mem", func(*testing.B) Versioned { return NewMemVersioned() }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			v := impl.open(b)
			defer v.Close()
			kvs := make([]KV, 1000)
			for i := range kvs {
				kvs[i] = KV{Key: fmt.Appendf(nil, "q/op/%06d", i), Value: make([]byte, 100)}
			}
			b.SetBytes(int64(len(kvs) * 110))
			for b.Loop() {
				id := v.NextID()
				if err := v.Write(id, kvs); err != nil {
					b.Fatal(err)
				}
				if err := v.CommitMarker([]byte("m/q"), id, nil); err != nil {
					b.Fatal(err)
				}
				v.SetDiscardTs(id)
			}
		})
	}
}

// BenchmarkLogAppend measures concurrent small appends (10 rows of 100
// bytes) to one table's log: group commit at work.
func BenchmarkLogAppend(b *testing.B) {
	m, err := OpenMeta(b.TempDir(), MetaOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	l, err := m.Log(1)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([][]byte, 10)
	for i := range rows {
		rows[i] = make([]byte, 100)
	}
	b.SetBytes(int64(len(rows) * 100))
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Append(context.Background(), rows, ""); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRowsDigest: the digest an Idempotency-Key stores, over a
// request of 1,000 rows of 120 bytes (about what a Nexmark bid encodes
// to).
func BenchmarkRowsDigest(b *testing.B) {
	rows := make([][]byte, 1000)
	for i := range rows {
		rows[i] = bytes.Repeat([]byte{byte(i)}, 120)
	}
	b.SetBytes(120 * 1000)
	for b.Loop() {
		rowsDigest(rows)
	}
}
