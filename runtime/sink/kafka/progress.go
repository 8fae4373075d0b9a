package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/runtime/sink"
)

// Committed fences any older producer of this sink (exactly-once), then
// returns the largest epoch the progress topic records for the sink id
// (0: none, or no progress topic).
func (p *Publisher) Committed(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := p.ensureOpen(ctx); err != nil {
		return 0, err
	}
	if p.spec.ExactlyOnce {
		if err := p.fence(ctx); err != nil {
			return 0, err
		}
	}
	n, err := p.readProgress(ctx)
	if err != nil {
		p.known = false
		return 0, err
	}
	if p.spec.ExactlyOnce {
		p.last, p.known = n, true
	}
	return n, nil
}

// fence initialises a new transactional producer: the broker bumps the
// transactional id's epoch, aborting any transaction an older producer
// (of an earlier run, or of this publisher before an error) left open
// and refusing that producer from then on. Its abort markers are written
// before the broker answers.
func (p *Publisher) fence(ctx context.Context) error {
	p.dropTx()
	tx, err := p.txClient()
	if err != nil {
		return err
	}
	if _, _, err := tx.ProducerID(ctx); err != nil {
		p.dropTx()
		return p.classify(fmt.Errorf("%s: initialise the transactional producer %q (fencing older ones): %w", p.where(), p.txID, err))
	}
	return nil
}

// readProgress reads the progress topic to its end with a read_committed
// consumer and returns the largest epoch of this sink's records.
//
// Its end is the high watermark of each partition when the read starts
// (after fencing, so none of this sink's transactions is open any more).
// A read_committed fetch stops at the first transaction still open, and
// skips aborted records and transaction markers silently: the consumer
// keeps the markers (KeepControlRecords) so that it sees where it stands,
// and is done with a partition once it has seen the record before the
// high watermark (a committed record, or a marker: a transaction's
// aborted records come before its marker). Another sink's transaction
// open on a shared progress topic delays the read until it ends.
func (p *Publisher) readProgress(ctx context.Context) (uint64, error) {
	adm := kadm.NewClient(p.cl)
	ends, err := adm.ListEndOffsets(ctx, p.progress)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	if err != nil {
		return 0, p.classify(fmt.Errorf("%s: progress topic %s: list end offsets: %w", p.where(), p.progress, err))
	}
	starts, err := adm.ListStartOffsets(ctx, p.progress)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, p.classify(fmt.Errorf("%s: progress topic %s: list start offsets: %w", p.where(), p.progress, err))
	}
	want := map[int32]int64{} // partition -> the last offset to see
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		s, ok := starts.Lookup(p.progress, o.Partition)
		if o.Offset <= 0 || ok && s.Offset >= o.Offset {
			return // empty
		}
		want[o.Partition] = o.Offset - 1
		at := int64(0)
		if ok {
			at = s.Offset
		}
		from[o.Partition] = kgo.NewOffset().At(at)
	})
	if len(want) == 0 {
		return 0, nil
	}
	rd, err := kgo.NewClient(append(p.clientOpts(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{p.progress: from}),
		// Records below the log start (deleted meanwhile): go on from it.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return 0, &sink.PermanentError{Err: fmt.Errorf("%s: %w", p.where(), err)}
	}
	defer rd.Close()
	var last uint64
	for len(want) > 0 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("%s: read progress topic %s (%d partitions not read to their end; another producer's open transaction holds read_committed readers back until it ends): %w", p.where(), p.progress, len(want), err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return 0, p.classify(fmt.Errorf("%s: read progress topic %s: %w", p.where(), p.progress, ferr))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if w, ok := want[r.Partition]; ok && r.Offset >= w {
				delete(want, r.Partition)
			}
			if r.Attrs.IsControl() || string(r.Key) != p.spec.SinkID || r.Value == nil {
				return
			}
			var v progressValue
			if json.Unmarshal(r.Value, &v) == nil && v.SinkID == p.spec.SinkID && v.Epoch > last {
				last = v.Epoch
			}
		})
	}
	return last, nil
}
