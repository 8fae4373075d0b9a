package plan

import (
	"fmt"
	"strings"
)

// RankFn is the ranking function of a Top-N.
type RankFn uint8

const (
	// RowNumber numbers a partition's rows 1, 2, 3 ... in order (ties in
	// the ORDER BY broken by row id).
	RowNumber RankFn = iota
	// Rank gives tied rows the same rank and skips the ranks they take
	// (1, 1, 3).
	Rank
	// DenseRank gives tied rows the same rank without gaps (1, 1, 2).
	DenseRank
)

func (f RankFn) String() string { return [...]string{"ROW_NUMBER", "RANK", "DENSE_RANK"}[f] }

// TopNMode is how a Top-N emits.
type TopNMode uint8

const (
	// TopNUpdating keeps each partition's top rows and emits, at every
	// barrier, the changes of the partitions that changed since the last:
	// an updating stream keyed on (partition, rank) for ROW_NUMBER (the
	// partition alone for N = 1), on (partition, row id) for RANK and
	// DENSE_RANK (tied rows share a rank).
	TopNUpdating TopNMode = iota
	// TopNDedup is deduplication of an append-only stream: the first row
	// of each partition by event time (ROW_NUMBER, ORDER BY the event-time
	// column ASC, N = 1). A partition's candidate is held until the
	// watermark passes it, then emitted (append-only) before that
	// watermark is forwarded; later rows of the partition are dropped, its
	// key remembered for TTL past the row's time (0: for ever).
	TopNDedup
	// TopNWindow is the Top-N of each window of an append-only windowed
	// stream (PARTITION BY includes window_end, TimeCol): a partition's
	// rows are emitted once, append-only, when the watermark reaches its
	// window_end.
	TopNWindow
)

func (m TopNMode) String() string { return [...]string{"updating", "dedup", "window"}[m] }

// OrderCol is one ORDER BY column of a Top-N: an input column, descending
// or not. NULLs come first ascending and last descending, as in MySQL.
type OrderCol struct {
	Col  int
	Desc bool
}

// TopN is ROW_NUMBER, RANK or DENSE_RANK over a partition, filtered to the
// ranks up to Limit: the rows of the partition (its input columns
// Partition, encoded into RowMeta.Key by the hash exchange before it) in
// Order, ties broken by row id so that replays and every parallelism rank
// the same rows.
//
// Output rows are the input's columns Keep, with the rank (BIGINT) in
// column RankAt. Over an updating input (Retract) every row of a partition
// is kept, since a row taken back brings the next one up; over an
// append-only one only the rows within the limit.
type TopN struct {
	Fn        RankFn
	Partition []int
	Order     []OrderCol
	Limit     int64
	Mode      TopNMode
	Retract   bool
	// TimeCol: TopNDedup's event-time column (Order's), TopNWindow's
	// window_end column.
	TimeCol int
	// AllowedLateness (TopNDedup): rows more than this behind the
	// watermark are late; candidates are emitted, and the watermark
	// forwarded, this far behind it.
	AllowedLateness int64
	// TTL (TopNDedup): how long past its row's event time a partition's
	// key is remembered (state_ttl); 0: for ever.
	TTL    int64
	Keep   []int
	RankAt int
	Out    Schema
}

func (*TopN) OpName() string { return "TopN" }

// KeyByRank: ROW_NUMBER's updating output is keyed on (partition, rank)
// when more than one rank is kept; RANK and DENSE_RANK key on (partition,
// row id); N = 1 of ROW_NUMBER keys on the partition.
func (t *TopN) KeyByRank() bool { return t.Fn == RowNumber && t.Limit > 1 }

func (t *TopN) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "TopN %s partition=%v order=[", t.Fn, t.Partition)
	for i, k := range t.Order {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "#%d", k.Col)
		if k.Desc {
			b.WriteString(" DESC")
		}
	}
	fmt.Fprintf(&b, "] limit=%d mode=%s", t.Limit, t.Mode)
	switch t.Mode {
	case TopNDedup:
		fmt.Fprintf(&b, " time=#%d allowed_lateness=%s", t.TimeCol, ms(t.AllowedLateness))
		if t.TTL > 0 {
			fmt.Fprintf(&b, " ttl=%s", ms(t.TTL))
		}
	case TopNWindow:
		fmt.Fprintf(&b, " window_end=#%d", t.TimeCol)
	}
	if t.Retract {
		b.WriteString(" retract")
	}
	fmt.Fprintf(&b, " keep=%v rank=#%d", t.Keep, t.RankAt)
	return b.String()
}
