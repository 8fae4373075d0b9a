package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/sink"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/window"
)

// Query states (docs/http-api.md, GET /v1/queries).
const (
	StateStarting  = "starting"
	StateRestoring = "restoring"
	StateRunning   = "running"
	StateRetrying  = "retrying"
	StateStopped   = "stopped"
	StateFailed    = "failed"
)

// Deps are what a job needs from the server.
type Deps struct {
	Store  state.Versioned
	Logger *slog.Logger
	// Reader opens the reader of a source at the position given (the
	// checkpointed one, or the start offset), picking it by the source's
	// ENGINE (queries: http, nexmark, kafka); used, when not nil, is the
	// columns the query reads.
	Reader func(src *plan.Source, at SourcePosition, used []bool) (Reader, error)
	// Publisher makes the publisher of an external sink (INSERT INTO a
	// table with ENGINE=postgres or a Kafka table with a delivery).
	Publisher func(spec sink.Spec) (sink.Publisher, error)
	// Meta is the durable store outside checkpoints where at_least_once
	// sinks log the keys they write (extsink.go).
	Meta MetaKV
}

// StartOptions say which query this is and where its sources start.
type StartOptions struct {
	QueryID uint64
	Name    string
	// StartOffsets: per source table name, the first offset to read when
	// the query has no checkpoint yet (a start=latest table's end when the
	// query was created).
	StartOffsets map[string]int64
	// Results receives a view's results (nil for a discard sink).
	Results *Results
	// SinkID names an external sink's progress records: unique to this
	// query (and data directory), never reused.
	SinkID string
	// StallTimeout: a task that works on one message for longer, without
	// waiting for input or output, fails the query as not answering
	// (0: DefaultStallTimeout; negative: never).
	StallTimeout time.Duration
	// SinkLimits bound an external sink's pending journal and the waits
	// between its attempts (zero fields: defaults).
	SinkLimits SinkLimits
}

// Job is one running continuous query: its tasks, its coordinator and its
// counters. Build and Start it with Start; every method is safe for
// concurrent use.
type Job struct {
	ID    uint64
	Name  string
	Graph *plan.Graph

	store   state.Versioned
	logger  *slog.Logger
	results *Results
	sources []*sourceTask
	tasks   []*task
	sinks   []*sinkEnd
	// stages are the tasks of each vertex, in graph order (metrics.go).
	stages []*stageTasks
	// committer writes the external sink, if the query has one.
	committer *committer
	// cuts are the source positions at each barrier, noted only for an
	// at_most_once sink (nil otherwise); amo records what that sink
	// writes.
	cuts *cutTable
	amo  *amoLog
	// restored is the checkpoint whose state the job started from (0:
	// none; restoredCheckpoint); began is when Start was called (the
	// restore time is logged from it).
	restored uint64
	began    time.Time
	acks     chan ack
	force    chan chan checkpointResult
	ntasks   int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// stopped is closed once every goroutine in wg has returned.
	stopped chan struct{}
	// stallTimeout: a task working on one message for longer fails the
	// job (liveness.go); 0: never.
	stallTimeout time.Duration

	rowsIn, rowsOut, lateRows, badRecords atomic.Int64
	// outOfRange counts arithmetic results beyond their type's range
	// (Env.OutOfRange), NULL in the rows.
	outOfRange     atomic.Int64
	lastCheckpoint atomic.Uint64
	toRestore      atomic.Int64 // tasks still restoring state

	mu       sync.Mutex
	state    string
	err      error
	lateKeep []op.LateRow
	badKeep  []BadRecord
	history  []CheckpointStat
	ckpt     checkpointTotals
	// diskErr: the last checkpoint failed for lack of disk space (the
	// query reports retrying until one completes).
	diskErr error
	// marker is the last completed checkpoint's marker.
	marker markerValue
}

// MaxHistory is how many checkpoints a job remembers for the API.
const MaxHistory = 50

type checkpointResult struct {
	id  uint64
	err error
}

// CheckpointStat is one checkpoint in a query's history.
type CheckpointStat struct {
	ID       uint64    `json:"id"`
	Status   string    `json:"status"` // in_progress, completed, failed
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
	Duration int64     `json:"duration_ms"`
	// Alignment is how long the slowest task held the checkpoint's barrier
	// up, in milliseconds (to the microsecond): aligning it across its
	// inputs, or, at an external sink, waiting for room (backpressure).
	Alignment float64          `json:"alignment_ms"`
	Bytes     int64            `json:"bytes"`
	Offsets   map[string]int64 `json:"offsets"`
}

// durationMs is d in milliseconds, to the microsecond.
func durationMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// markerValue is the JSON of a checkpoint marker: the counters and source
// offsets as of the checkpoint.
type markerValue struct {
	ID      uint64 `json:"id"`
	Time    int64  `json:"time_ms"`
	RowsIn  int64  `json:"rows_in"`
	RowsOut int64  `json:"rows_out"`
	Late    int64  `json:"late_rows"`
	Bad     int64  `json:"bad_records,omitempty"`
	// OutOfRange: arithmetic results beyond their type's range (NULL).
	OutOfRange int64            `json:"out_of_range,omitempty"`
	Offsets    map[string]int64 `json:"offsets,omitempty"`
	// RecentLate and RecentBad are the last late rows and undecodable
	// records (at most MaxLateSamples, MaxBadSamples) counted up to the
	// checkpoint, so a restart shows the samples of the counts it restores.
	RecentLate []op.LateRow `json:"recent_late,omitempty"`
	RecentBad  []BadRecord  `json:"recent_bad,omitempty"`
}

// Start builds the job's tasks from its graph and starts it. Only the
// last checkpoint's marker and source positions are read before it
// returns (committed results are readable at once); the rest of recovery —
// repairing what an unfinished checkpoint left above the marker, loading
// the latest results, every task restoring its operators' state — runs in
// the background in state "restoring", and then the sources resume from
// the offsets recorded at the checkpoint.
func Start(g *plan.Graph, deps Deps, o StartOptions) (*Job, error) {
	j := &Job{ID: o.QueryID, Name: o.Name, Graph: g, store: deps.Store, logger: deps.Logger, results: o.Results,
		force: make(chan chan checkpointResult, 16), state: StateStarting,
		stopped: make(chan struct{}), stallTimeout: o.StallTimeout, began: time.Now()}
	if j.stallTimeout == 0 {
		j.stallTimeout = DefaultStallTimeout
	}
	if j.logger == nil {
		j.logger = slog.Default()
	}
	committed, val, err := j.lastMarker()
	if err != nil {
		return nil, err
	}
	j.restored = restoredCheckpoint(committed, j.marker)
	j.ctx, j.cancel = context.WithCancel(context.Background())
	if err := j.build(deps, o, committed); err != nil {
		j.cancel()
		return nil, err
	}
	// Room for one barrier's acks: the coordinator reads acks even while
	// it waits to inject the next barrier, so a full queue only makes a
	// task wait for it a moment (a queue of 1,024 was 90 KiB per query).
	j.acks = make(chan ack, j.ntasks)
	if committed > 0 {
		j.setState(StateRestoring, nil)
	}
	j.toRestore.Store(int64(len(j.sources) + len(j.tasks)))
	j.wg.Add(1)
	go func() {
		j.wg.Wait()
		close(j.stopped)
	}()
	go func() {
		defer j.wg.Done()
		if committed > 0 {
			if err := j.recoverRetrying(committed, val); err != nil {
				j.fail(err)
				return
			}
		}
		if j.ctx.Err() != nil {
			return
		}
		if j.committer != nil {
			j.committer.noteMarker(j.lastCheckpoint.Load(), time.Now())
			j.committer.marker.Store(j.lastCheckpoint.Load())
			j.run(j.Name+"/sink", j.committer.run)
		}
		for _, s := range j.sources {
			j.run(s.name, s.run)
		}
		for _, t := range j.tasks {
			j.run(t.name, t.run)
		}
		j.coordinate()
	}()
	return j, nil
}

// taskRestored is called by each task once its state is loaded.
func (j *Job) taskRestored() {
	if j.toRestore.Add(-1) == 0 {
		j.setState(StateRunning, nil)
		if j.restored > 0 {
			j.logger.Info("query recovered", "query", j.Name, "id", j.ID, "checkpoint", j.restored,
				"restore_ms", durationMs(time.Since(j.began)))
		}
	}
}

// lastMarker reads the last completed checkpoint: its id (0: none) and
// marker, whose counters the job continues from. Committed results are
// readable at that id right away: a read at the marker sees exactly the
// checkpoint, whatever an unfinished one left above it.
func (j *Job) lastMarker() (uint64, []byte, error) {
	id, val, ok, err := j.store.LastMarker(markerKey(j.ID))
	if err != nil {
		return 0, nil, fmt.Errorf("query %s: read marker: %w", j.Name, err)
	}
	if !ok {
		return 0, nil, nil
	}
	if err := json.Unmarshal(val, &j.marker); err != nil {
		return 0, nil, fmt.Errorf("query %s: marker of checkpoint %d: %w", j.Name, id, err)
	}
	j.rowsIn.Store(j.marker.RowsIn)
	j.rowsOut.Store(j.marker.RowsOut)
	j.lateRows.Store(j.marker.Late)
	j.badRecords.Store(j.marker.Bad)
	j.outOfRange.Store(j.marker.OutOfRange)
	j.lateKeep = slices.Clone(j.marker.RecentLate)
	j.badKeep = slices.Clone(j.marker.RecentBad)
	if j.results != nil {
		j.results.restoring(id)
	}
	j.lastCheckpoint.Store(id)
	return id, val, nil
}

// restoredCheckpoint is the checkpoint whose state a run that found marker
// m at id starts from: id, unless the marker was rewritten at id by a
// repair (recover), which commits the repaired checkpoint's marker value
// again at a newer id: then the checkpoint it names (m.ID). The
// at_least_once key log compares with this, not with id: batches a run
// applied after a repaired start are tagged with it, and the next run
// must undo them even though the marker it finds is newer.
func restoredCheckpoint(id uint64, m markerValue) uint64 {
	if m.ID != 0 && m.ID < id {
		return m.ID
	}
	return id
}

// recover repairs the store above checkpoint id — versions an unfinished
// checkpoint wrote there stay visible to every later read unless rewritten
// (DESIGN.md's invariants) — and loads the latest results as of the checkpoint.
func (j *Job) recover(id uint64, val []byte) error {
	rid, err := j.store.Repair(QueryPrefix(j.ID), id)
	if err != nil {
		return fmt.Errorf("query %s: repair above checkpoint %d: %w", j.Name, id, err)
	}
	if rid != 0 {
		if err := j.store.CommitMarker(markerKey(j.ID), rid, val); err != nil {
			return fmt.Errorf("query %s: marker after repair: %w", j.Name, err)
		}
		id = rid
		j.lastCheckpoint.Store(id)
	}
	if j.results != nil {
		if err := j.results.Load(id); err != nil {
			return err
		}
	}
	return nil
}

// recoverRetrying is recover, tried again while the disk is full (the
// repair writes): the query reports retrying with the error meanwhile.
func (j *Job) recoverRetrying(id uint64, val []byte) error {
	backoff := recoverBackoffMin
	for {
		err := j.recover(id, val)
		if err == nil || !state.IsDiskFull(err) {
			return err
		}
		j.logger.Warn("query recovery: disk full, retrying", "query", j.Name, "err", err)
		j.setState(StateRetrying, err)
		select {
		case <-j.ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, recoverBackoffMax)
		j.setState(StateRestoring, nil)
	}
}

// Bounds of the wait between recovery attempts on a full disk.
const (
	recoverBackoffMin = 250 * time.Millisecond
	recoverBackoffMax = 5 * time.Second
)

func (j *Job) run(name string, fn func(context.Context) error) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer func() {
			// A broken invariant in one query fails that query, not the server.
			if r := recover(); r != nil {
				j.fail(fmt.Errorf("%s: internal error: %v\n%s", name, r, debug.Stack()))
			}
		}()
		if err := fn(j.ctx); err != nil && j.ctx.Err() == nil {
			j.fail(err)
		}
	}()
}

func (j *Job) fail(err error) {
	j.logger.Error("query failed", "query", j.Name, "id", j.ID, "reason", err)
	j.setState(StateFailed, err)
	j.cancel()
}

func (j *Job) setState(s string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == StateFailed || (j.state == StateStopped && s != StateFailed) {
		return
	}
	j.state, j.err = s, err
}

func (j *Job) addLate(n int64, rows []op.LateRow) {
	j.lateRows.Add(n)
	j.mu.Lock()
	j.lateKeep = keepLast(j.lateKeep, rows, op.MaxLateSamples)
	j.mu.Unlock()
}

// addBad counts n undecodable source records and keeps the last few.
func (j *Job) addBad(n int64, recs []BadRecord) {
	j.badRecords.Add(n)
	j.mu.Lock()
	j.badKeep = keepLast(j.badKeep, recs, MaxBadSamples)
	j.mu.Unlock()
}

// keepLast appends add to kept and keeps the last n (a new array when it
// drops some: kept may be shared with a copy handed out).
func keepLast[T any](kept, add []T, n int) []T {
	kept = append(kept, add...)
	if over := len(kept) - n; over > 0 {
		kept = append(kept[:0:0], kept[over:]...)
	}
	return kept
}

// opPrefix is where operator op of vertex v keeps its state (shared by the
// vertex's tasks: state is keyed by group, so parallelism may change).
func opPrefix(qid uint64, v, op int) []byte {
	return fmt.Appendf(QueryPrefix(qid), "/o/%d/%d/", v, op)
}

// build creates every task from the graph: the one place where plan specs
// become operators.
func (j *Job) build(deps Deps, o StartOptions, committed uint64) error {
	g := j.Graph
	// Mailboxes of non-source vertices: one input per producer subtask.
	boxes := map[int][]*mailbox{}
	inputBase := map[[2]int]int{} // (consumer vertex, edge index) -> first input
	for _, v := range g.Vertices {
		if len(v.Inputs) == 0 {
			continue
		}
		n := 0
		for ei, e := range v.Inputs {
			inputBase[[2]int{v.ID, ei}] = n
			n += g.Vertices[e.From].Parallelism
		}
		for i := 0; i < v.Parallelism; i++ {
			boxes[v.ID] = append(boxes[v.ID], newMailbox(n))
		}
	}
	j.stages = make([]*stageTasks, len(g.Vertices))
	emit := time.Duration(g.Options.EmitInterval) * time.Millisecond
	tick := min(max(emit/4, 10*time.Millisecond), 100*time.Millisecond)
	for vi, v := range g.Vertices {
		stage := &stageTasks{vertex: v}
		j.stages[vi] = stage
		for i := 0; i < v.Parallelism; i++ {
			env := &op.Env{}
			counters := &op.Counters{}
			name := fmt.Sprintf("%s/stage%d/%d", j.Name, v.ID, i)
			ops := v.Ops
			var src *plan.Source
			if s, ok := ops[0].(*plan.Source); ok {
				src, ops = s, ops[1:]
			}
			live := &liveness{}
			var term terminal
			if s, ok := lastSink(ops); ok {
				ops = ops[:len(ops)-1]
				st := &sinkEnd{ended: make(chan struct{})}
				st.wm.Store(window.NoWatermark)
				switch s.Kind {
				case plan.SinkResults:
					if j.results == nil {
						return fmt.Errorf("query %s: a results sink needs a results table", j.Name)
					}
					j.results.setWidth(len(g.Out))
					var gate *resultsGate
					if s.AtMostOnce {
						amo, err := j.atMostOnce(deps)
						if err != nil {
							return fmt.Errorf("query %s: results: %w", j.Name, err)
						}
						gate = &resultsGate{g: amo.gate()}
						if i == 0 && amo.replaying() {
							j.logger.Info("results: at_most_once: skipping the replay up to the source positions the last run had begun publishing", "query", j.Name, "positions", amo.last)
						}
					}
					if s.Key == plan.KeyRowID {
						j.results.setAppendOnly()
						rs := newAppendResults(j.results, j.store, j.ID, i, v.Parallelism, counters)
						rs.gate = gate
						st.sinkWriter = rs
					} else {
						if i == 0 {
							j.results.shard(v.Parallelism, s.Key)
						}
						rs := newUpsertResults(j.results, j.store, j.ID, s.Key, i, v.Parallelism, counters)
						rs.consolidate = s.Consolidate
						rs.retention = g.Options.ResultsRetention
						rs.gate = gate
						st.sinkWriter = rs
					}
				case plan.SinkExternal:
					if j.committer == nil {
						if err := j.newCommitter(s.External, deps, o); err != nil {
							return err
						}
					}
					st.sinkWriter = &journalWriter{c: j.committer, ext: s.External, store: j.store, ctx: j.ctx, task: i, counters: counters, prev: j.restored, w: newStateWriter(false)}
				default:
					st.sinkWriter = &discardResults{counters: counters}
				}
				j.sinks = append(j.sinks, st)
				term = st
			} else {
				out, err := j.output(v.ID, i, boxes, inputBase, live)
				if err != nil {
					return err
				}
				term = out
			}
			built := make([]op.Operator, 0, len(ops))
			prefixes := make([][]byte, 0, len(ops))
			for k, spec := range ops {
				o, err := op.Build(spec, env, counters)
				if err != nil {
					return fmt.Errorf("query %s: %s: %w", j.Name, spec.OpName(), err)
				}
				built = append(built, o)
				prefixes = append(prefixes, opPrefix(j.ID, v.ID, k))
			}
			base := taskBase{job: j, name: name, chain: newChain(built, term), counters: counters, env: env,
				opPrefix: prefixes, subtask: i, parallel: v.Parallelism, stateRows: new(atomic.Int64), stateBytes: make([]atomic.Int64, len(built)), live: live}
			j.ntasks++
			if src != nil {
				st, err := j.sourceTask(base, src, v.ID, i, deps, o, committed, tick)
				if err != nil {
					return err
				}
				j.sources = append(j.sources, st)
				stage.tasks = append(stage.tasks, &st.taskBase)
				continue
			}
			mb := boxes[v.ID][i]
			t := &task{taskBase: base, mb: mb, align: newAligner(len(mb.queues)), inWM: make([]int64, len(mb.queues)),
				ended: make([]bool, len(mb.queues)), wm: window.NoWatermark, restoreAt: committed,
				sides: make([]int, len(mb.queues)), sideWM: [2]int64{window.NoWatermark, window.NoWatermark}}
			for k := range t.inWM {
				t.inWM[k] = window.NoWatermark
			}
			if len(v.Inputs) == 2 {
				two, ok := built[0].(op.TwoInput)
				if !ok {
					return fmt.Errorf("query %s: stage %d has two inputs but %s takes one", j.Name, v.ID, ops[0].OpName())
				}
				t.two = two
				for ei, e := range v.Inputs {
					b := inputBase[[2]int{v.ID, ei}]
					for k := b; k < b+g.Vertices[e.From].Parallelism; k++ {
						t.sides[k] = ei
					}
				}
			} else if len(v.Inputs) > 2 {
				return fmt.Errorf("query %s: stage %d has %d inputs", j.Name, v.ID, len(v.Inputs))
			}
			j.tasks = append(j.tasks, t)
			stage.tasks = append(stage.tasks, &t.taskBase)
			stage.boxes = append(stage.boxes, mb)
		}
	}
	return nil
}

// sourceTask builds a source task at the position recorded by checkpoint
// committed, or at its start offset when there is none.
func (j *Job) sourceTask(base taskBase, src *plan.Source, v, i int, deps Deps, o StartOptions, committed uint64, tick time.Duration) (*sourceTask, error) {
	pos := sourcePos{Offset: o.StartOffsets[src.Table], MaxEventTime: window.NoWatermark, Floor: window.NoWatermark}
	if committed > 0 {
		raw, err := j.store.Get(sourceKey(j.ID, v, i), committed)
		if err != nil {
			return nil, fmt.Errorf("query %s: source %s position at checkpoint %d: %w", j.Name, src.Table, committed, err)
		}
		if pos, err = decodeSourcePos(raw, pos); err != nil {
			return nil, fmt.Errorf("query %s: source %s position at checkpoint %d: %w", j.Name, src.Table, committed, err)
		}
	}
	if deps.Reader == nil {
		return nil, fmt.Errorf("query %s: source %s: no reader for ENGINE=%s", j.Name, src.Table, src.Engine)
	}
	rd, err := deps.Reader(src, SourcePosition{Offset: pos.Offset, partitions: pos.Partitions}, sourceColumns(j.Graph.Vertices[v].Ops, src))
	if err != nil {
		return nil, fmt.Errorf("query %s: source %s: %w", j.Name, src.Table, err)
	}
	st := &sourceTask{taskBase: base, spec: src, vertex: v, subtask: i, reader: rd, inject: make(chan op.Barrier, 1),
		tracker: window.NewTracker(src.WatermarkDelay), floor: pos.Floor, wm: window.NoWatermark, tick: tick, restoreAt: committed}
	if pos.MaxEventTime != window.NoWatermark {
		st.tracker.Observe(pos.MaxEventTime)
	}
	st.offset.Store(rd.Offset())
	st.published.Store(max(st.tracker.Watermark(), st.floor))
	return st, nil
}

// newCommitter makes the committer of the query's external sink.
func (j *Job) newCommitter(ext *plan.ExternalSink, deps Deps, o StartOptions) error {
	if deps.Publisher == nil {
		return fmt.Errorf("query %s: no publisher for ENGINE=%s sinks", j.Name, ext.Engine)
	}
	if o.SinkID == "" {
		return fmt.Errorf("query %s: an external sink needs a sink id", j.Name)
	}
	pub, err := deps.Publisher(sink.Spec{Table: ext.Table, Engine: ext.Engine, Connection: ext.Connection, Attrs: ext.Attrs, Columns: ext.Columns,
		PrimaryKey: ext.PrimaryKey, SinkID: o.SinkID, ExactlyOnce: ext.ExactlyOnce, Partition: ext.Partition, PartitionNames: ext.PartitionNames})
	if err != nil {
		return fmt.Errorf("query %s: sink %s: %w", j.Name, ext.Table, err)
	}
	j.committer = newCommitter(pub, ext, o.SinkID, j.store, j.ID, j)
	j.committer.limits = o.SinkLimits
	if ext.AtMostOnce {
		amo, err := j.atMostOnce(deps)
		if err != nil {
			return fmt.Errorf("query %s: sink %s: %w", j.Name, ext.Table, err)
		}
		j.committer.amo = amo
	} else if !ext.ExactlyOnce && ext.RowID < 0 {
		if deps.Meta == nil {
			return fmt.Errorf("query %s: an at_least_once sink needs the meta store", j.Name)
		}
		j.committer.wal = &sinkWAL{kv: deps.Meta, prefix: SinkWALPrefix(j.ID)}
	}
	return nil
}

// atMostOnce is the query's record of what its at_most_once sink writes,
// made (and the last run's record read) on first use, before any task
// runs; its sources note their cuts from then on (j.cuts).
func (j *Job) atMostOnce(deps Deps) (*amoLog, error) {
	if j.amo != nil {
		return j.amo, nil
	}
	if deps.Meta == nil {
		return nil, errors.New("an at_most_once sink needs the meta store")
	}
	cuts := newCutTable()
	amo := &amoLog{kv: deps.Meta, key: AtMostOnceKey(j.ID), cuts: cuts}
	if err := amo.load(); err != nil {
		return nil, err
	}
	j.cuts, j.amo = cuts, amo
	return amo, nil
}

// lastSink returns the chain's sink, when it ends in one.
func lastSink(ops []plan.Op) (*plan.Sink, bool) {
	if len(ops) == 0 {
		return nil, false
	}
	s, ok := ops[len(ops)-1].(*plan.Sink)
	return s, ok
}

func (j *Job) output(vid, subtask int, boxes map[int][]*mailbox, inputBase map[[2]int]int, live *liveness) (*output, error) {
	for _, v := range j.Graph.Vertices {
		for ei, e := range v.Inputs {
			if e.From != vid {
				continue
			}
			o := &output{ctx: j.ctx, partition: e.Partition, keyCols: e.KeyCols, live: live}
			base := inputBase[[2]int{v.ID, ei}]
			switch e.Partition {
			case plan.Hash, plan.ByKey:
				for _, mb := range boxes[v.ID] {
					o.targets = append(o.targets, mb.input(base+subtask))
				}
			case plan.Gather:
				o.targets = []inbox{boxes[v.ID][0].input(base + subtask)}
			default:
				o.targets = []inbox{boxes[v.ID][subtask].input(base + subtask)}
			}
			return o, nil
		}
	}
	return nil, fmt.Errorf("stage %d has no consumer", vid)
}

// sourceColumns reports which of a source's columns its stage reads: when
// the operator after the source is a projecting Calc (which makes new rows
// of its own), the columns its expressions refer to and the event time;
// nil (all of them) otherwise.
func sourceColumns(ops []plan.Op, src *plan.Source) []bool {
	if len(ops) < 2 {
		return nil
	}
	c, ok := ops[1].(*plan.Calc)
	if !ok || c.Project == nil {
		return nil
	}
	used := make([]bool, len(src.Schema))
	if src.EventTime >= 0 {
		used[src.EventTime] = true
	}
	exprs := append([]plan.Expr{c.Filter}, c.Project...)
	for _, e := range exprs {
		if !markColumns(e, used) {
			return nil
		}
	}
	return used
}

// markColumns marks the columns e refers to; false when e has a node it
// does not know (then every column counts as read).
func markColumns(e plan.Expr, used []bool) bool {
	switch e := e.(type) {
	case nil:
		return true
	case *plan.ColRef:
		if e.Index < 0 || e.Index >= len(used) {
			return false
		}
		used[e.Index] = true
		return true
	case *plan.Const:
		return true
	case *plan.Call:
		for _, a := range e.Args {
			if !markColumns(a, used) {
				return false
			}
		}
		return true
	}
	return false
}
