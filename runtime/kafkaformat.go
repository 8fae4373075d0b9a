package runtime

import (
	"context"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/op"
	kafkasrc "github.com/streamsql/streamsql/runtime/source/kafka"
	"github.com/streamsql/streamsql/value"
)

// A Kafka source's record values are JSON (value.RecordDecoder) or a
// format of runtime/format (Avro, through a Schema Registry or with an
// inline schema). Decoding a registry-framed value may need its schema
// fetched; when the registry cannot be asked (format.Unavailable) the
// record is neither a row nor a bad record: the reader holds it, and the
// records the consumer hands out after it, in order, stops polling the
// consumer, shows the error as its Problem (the query is retrying) and
// decodes the held records again at most once a second. Its position per
// partition is then the first held record's offset, so a checkpoint taken
// meanwhile resumes at the records not yet read, and a partition with
// held records is not idle, nor is the source task while any are held
// (Holding): its watermark does not move on with the clock past them.

// heldRetry is how long the reader waits before decoding a held record
// again.
const heldRetry = 1000 // ms

// recordDecoder is src's record value decoder, by its format.
func recordDecoder(src *plan.Source) (func([]byte) (plan.Row, error), error) {
	if !format.Uses(src.Attrs) {
		return value.RecordDecoder(src)
	}
	d, err := format.NewDecoder(format.SourceTable(src))
	if err != nil {
		return nil, err
	}
	return d.Decode, nil
}

// holding holds rec when records are held already, or when err (from
// decoding rec) says its schema cannot be fetched now; it reports whether
// rec is held.
func (r *kafkaReader) holding(now int64, rec *kafkasrc.Record, err error) bool {
	if err != nil {
		r.heldErr, r.heldNext = err, now+heldRetry
	} else if len(r.held) == 0 {
		return false
	}
	r.held = append(r.held, *rec)
	if kp := r.parts[rec.Partition]; kp != nil {
		kp.lastRow = now // a partition with records waiting is not idle
	}
	return true
}

// retryHeld decodes the held records again, in order, into b: the rows
// taken, and whether all held records are done with (false: the
// registry is still unavailable, or it is not time to try again).
func (r *kafkaReader) retryHeld(now int64, b *op.Batch) (int, bool) {
	n := 0
	for len(r.held) > 0 {
		if now < r.heldNext {
			return n, false
		}
		took, err := r.take(now, &r.held[0], b)
		if err != nil {
			r.heldErr, r.heldNext = err, now+heldRetry
			for i := range r.held {
				if kp := r.parts[r.held[i].Partition]; kp != nil {
					kp.lastRow = now // records waiting: not idle
				}
			}
			return n, false
		}
		if took {
			n++
		}
		r.held[0] = kafkasrc.Record{}
		r.held = r.held[1:]
	}
	r.held, r.heldErr = nil, nil
	return n, true
}

// Holding reports records held for the registry: the source is not idle
// while they wait (its watermark must not move on past them).
func (r *kafkaReader) Holding() bool { return len(r.held) > 0 }

// dlqFlushTimeout bounds a checkpoint's wait for the dead letters.
const dlqFlushTimeout = 5 * time.Second

// Sync waits (up to dlqFlushTimeout) until the dead letters sent so far
// are in their topic: a checkpoint's offsets then cover no record whose
// dead letter a crash could still lose. A topic that refuses them stays
// best effort: the records are counted and sampled.
func (r *kafkaReader) Sync() {
	if r.dlq == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dlqFlushTimeout)
	defer cancel()
	r.dlq.Flush(ctx)
}

// position is the consumer's position per partition, but a partition
// with held records at its first one.
func (r *kafkaReader) position() map[int32]int64 {
	pos := r.cons.Position()
	if len(r.held) == 0 {
		return pos
	}
	out := make(map[int32]int64, len(pos))
	for p, off := range pos {
		out[p] = off
	}
	for i := len(r.held) - 1; i >= 0; i-- {
		out[r.held[i].Partition] = r.held[i].Offset
	}
	return out
}
