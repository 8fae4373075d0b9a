package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/runtime/sink"
)

// CommitEpoch writes changes and the progress record (SinkID, epoch) in
// one Kafka transaction. An epoch not above the last committed one fails
// with sink.ErrCommitted before anything is produced (the first call
// after an error fences and reads the progress topic to know it). An
// error from ending the transaction leaves the outcome unknown; it is
// returned as such, and the caller reads Committed.
func (p *Publisher) CommitEpoch(ctx context.Context, epoch uint64, changes []sink.Change) error {
	if !p.spec.ExactlyOnce {
		return fmt.Errorf("%s: CommitEpoch on an at-least-once sink", p.where())
	}
	if epoch == 0 {
		return sink.Permanent("%s: epoch 0 out of range", p.where())
	}
	what := fmt.Sprintf("commit epoch %d", epoch)
	if err := p.openFormat(ctx); err != nil {
		return err
	}
	recs, err := p.records(changes)
	if err != nil {
		return err
	}
	if err := p.ensureOpen(ctx); err != nil {
		return err
	}
	if !p.known {
		if _, err := p.Committed(ctx); err != nil {
			return err
		}
	}
	if epoch <= p.last {
		return fmt.Errorf("%s: %s (progress records reach epoch %d): %w", p.where(), what, p.last, sink.ErrCommitted)
	}
	// A transaction open longer than its timeout is aborted by the
	// broker: give up then.
	ctx, cancel := context.WithTimeout(ctx, p.txTimeout)
	defer cancel()
	tx, err := p.txClient()
	if err != nil {
		return err
	}
	if err := tx.BeginTransaction(); err != nil {
		p.dropTx()
		return fmt.Errorf("%s: %s: begin the transaction: %w", p.where(), what, err)
	}
	// The progress record goes in the same flush as the rows: producing
	// it alone first made kfake answer OUT_OF_ORDER_SEQUENCE_NUMBER for
	// the rows now and then (TestTopicCreation, once in a few hundred
	// runs). The transaction hides the order from read_committed readers.
	if err := produceAll(ctx, tx, append([]*kgo.Record{p.progressRecord(epoch)}, recs...)); err != nil {
		p.abort(tx, err)
		return p.classify(fmt.Errorf("%s: %s: produce: %w", p.where(), what, err))
	}
	fault.PointIn("sink.after_progress", "kafka")
	fault.PointIn("sink.before_commit", "kafka")
	if p.beforeEnd != nil {
		p.beforeEnd()
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// No abort: one would re-initialise the producer id, fencing
		// whoever fenced this producer. The next call fences anew.
		p.dropTx()
		if errors.Is(err, kerr.OperationNotAttempted) {
			return fmt.Errorf("%s: %s: not committed (the producer failed): %w", p.where(), what, err)
		}
		return fmt.Errorf("%s: %s: commit outcome unknown (ending the transaction failed): %w", p.where(), what, err)
	}
	p.last = epoch
	fault.PointIn("sink.after_commit", "kafka")
	return nil
}

// abort ends a transaction whose records failed, best effort, so that
// read_committed readers of the topic need not wait for the next fence
// (or the transaction timeout, if the query fails); then it closes the
// producer: the next call makes a new one, which fences anyway. A fenced
// producer is only closed.
func (p *Publisher) abort(tx *kgo.Client, err error) {
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
		if tx.AbortBufferedRecords(ctx) == nil {
			tx.EndTransaction(ctx, kgo.TryAbort)
		}
		cancel()
	}
	p.dropTx()
}

// Apply produces changes with the idempotent producer and waits until
// every record is acknowledged.
func (p *Publisher) Apply(ctx context.Context, changes []sink.Change) error {
	if len(changes) == 0 {
		return nil
	}
	if err := p.openFormat(ctx); err != nil {
		return err
	}
	recs, err := p.records(changes)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	if err := p.ensureOpen(ctx); err != nil {
		return err
	}
	if err := produceAll(ctx, p.cl, recs); err != nil {
		// Records still buffered fail with the client: the next call
		// opens a new one.
		p.Close()
		return p.classify(fmt.Errorf("%s: apply changes: %w", p.where(), err))
	}
	return nil
}

// produceAll produces recs and waits for every acknowledgement; it
// returns the first record's error, if any.
func produceAll(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	var (
		mu    sync.Mutex
		first error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("record for %s (key %.200s): %w", r.Topic, r.Key, err)
			}
			mu.Unlock()
		}
	}
	for _, r := range recs {
		cl.Produce(ctx, r, promise)
	}
	ferr := cl.Flush(ctx)
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return first
	}
	return ferr
}
