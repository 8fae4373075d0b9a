// Package kafka is the replayable consumer of ENGINE=kafka source tables
// (docs/connectors.md, "Kafka"): it reads one topic with franz-go (kgo,
// kadm) at explicit offsets, read_committed, and reports per partition
// the offset of the next record to read, which a checkpoint records and
// a restart resumes at exactly.
//
// Use. New checks the Config (no I/O). Partitions lists the topic's
// partitions; StartOffsets gives every partition's log start (earliest)
// or last stable offset (latest). Start begins consuming each given
// partition at its offset (from a checkpoint, or from StartOffsets).
// The source task then calls Poll, which hands out what kgo has
// buffered and never waits, and Position, the next offset per
// partition, at each barrier. Ready tells the task when to Poll again;
// EndOffsets gives the last stable offsets a flush reads up to (until
// Position reaches them); Problem says why fetching does not work now.
// Close ends it; a Consumer is not started twice nor reopened: resume
// with a new one, started at the old one's Position.
//
// Positions. No consumer group is involved: offsets are exact
// (kgo.NewOffset().At), nothing is committed to Kafka. kgo fetches
// read_committed, so records of open transactions stay unread (and so
// does everything after the first open transaction of a partition) and
// kgo drops the records of aborted transactions itself. The client keeps
// control records (kgo.KeepControlRecords): Poll hands out no
// transaction marker but moves Position past it, so after reading
// everything committed Position equals the last stable offset, also when
// a partition ends with an aborted transaction (its abort marker follows
// its records). Poll hands records out in offset order per partition;
// Position is the last record's (or marker's) offset plus one. Markers
// do not count against Poll's max, and a Poll that returns 0 has drained
// everything kgo had buffered, markers included.
//
// Out-of-range offsets. kgo's default, met with OFFSET_OUT_OF_RANGE on a
// partition's first fetch, is to move to the log start (with a log line
// only), for an offset below the log start and past the end alike. The
// client sets kgo.ConsumeResetOffset(kgo.NoResetOffset()): the fetch
// error comes back to Poll, the partition stays where it is and kgo
// fetches it again at the same offset each time Poll drained the error.
// Problem then holds an *OffsetOutOfRangeError naming the partition, the
// offset and the log's start and end ("partition 3: offset 120 is below
// the log start 500 (deleted by retention)"). A position past the end
// resumes by itself once the log grows to it; one below the log start
// never does (a user decides: restart from a new position). Kafka sends
// no log bounds with the error (kfake does): the consumer then looks
// them up (ListOffsets) in a goroutine of its own, at most one at a
// time, and the message names them once known. kgo can still move a
// partition after a leader change that truncated the log under what was
// read (unclean election): it reports that as a *kgo.ErrDataLoss, which
// Problem shows for noticeTTL even though records flow again; the
// offsets from there on are the log's (Position can go back).
//
// Problem. Two sources: fetch errors of partitions as Poll drains them
// (kgo.KeepRetryableFetchErrors: an unknown topic, a leader moving,
// an offset out of range, authorization...), and connection errors
// from kgo's broker hooks (dial, write, read). kgo retries all of them
// by itself; records are not lost across them (its fetch position only
// moves when records are drained). A partition's problem clears when the
// partition hands out something, or when no fetch repeated it for
// partProblemTTL (a lasting error comes back with each fetch, which kgo
// repeats after each Poll); a broker's clears when it answers anything,
// or when kgo has not met it again for brokerProblemTTL. A failed dial
// is a problem at once; a connection the broker dropped (EOF, reset, a
// read timeout) only when it fails again before answering, since a
// restarted broker drops every connection once and kgo redials. Messages name
// the topic and the brokers.
//
// Ready. A kgo.HookFetchRecordBuffered hook does a non-blocking send on
// a channel of one slot, on kgo's fetching goroutine: no goroutine of
// the package's own. A value may be stale (Poll then returns 0). Errors
// do not signal it: a fetch error is repeated at the pace of Polls, so
// signalling it would spin; the task's ticker polls them.
//
// It owns one kgo client, made on first use (Partitions, StartOffsets,
// EndOffsets or Start), with its connections and goroutines, until
// Close, and the bound look-ups (Close waits for them). kgo buffers at
// most one fetch response per broker (its default FetchMaxBytes, 50 MB;
// 1 MB per partition), until Poll drains it. It owns nothing in the
// cluster: no group, no commits, no topics.
//
// Threading. Start, Poll, Position and Close belong to one goroutine,
// the source task's. Problem, Ready, Partitions, StartOffsets and
// EndOffsets may be called from any goroutine; the last three block on
// the network, bounded by their context (a refused connection fails at
// once).
//
// Limits. The partitions are those given to Start: partitions added to
// the topic later are not read (compare Partitions), and kgo waits
// silently for a partition that does not exist (Start refuses one that
// the last Partitions call did not find). Position moves
// with the records and markers handed to Poll; offsets that hold
// neither (removed by compaction) are passed when the next record is.
// At the end of a compacted partition such a gap leaves Position below
// EndOffsets with nothing left to read (kgo's own fetch position, which
// does move past empty batches, is not exported): a flush waiting for
// EndOffsets must not wait for it forever.
package kafka
