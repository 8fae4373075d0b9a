package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/window"
)

// Query states (SPEC section 3).
const (
	StateStarting  = "starting"
	StateRestoring = "restoring"
	StateRunning   = "running"
	StateStopped   = "stopped"
	StateFailed    = "failed"
)

// Deps are what a job needs from the server.
type Deps struct {
	Store state.Versioned
	// Log opens an HTTP-ingest table's log by table id.
	Log    func(tableID uint64) (*state.Log, error)
	Logger *slog.Logger
	// openReader, when set, replaces the engine readers (tests).
	openReader func(src *plan.Source, from int64) (reader, error)
}

// StartOptions say which query this is and where its sources start.
type StartOptions struct {
	QueryID uint64
	Name    string
	// StartOffsets: per source table name, the first offset to read (a
	// start=latest table's end when the query was created).
	StartOffsets map[string]int64
	// Results receives a view's results (nil for a discard sink).
	Results *Results
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
	sinks   []*sinkTerminal
	acks    chan ack
	force   chan chan checkpointResult
	ntasks  int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rowsIn, rowsOut, lateRows atomic.Int64
	lastCheckpoint            atomic.Uint64
	restoring                 atomic.Bool

	mu       sync.Mutex
	state    string
	err      error
	lateKeep []LateRow
}

// MaxLateSamples is how many recent late rows a job keeps for inspection.
const MaxLateSamples = 20

type checkpointResult struct {
	id  uint64
	err error
}

// Start builds the job's tasks from its graph and starts them. The query's
// committed results are loaded and anything an unfinished checkpoint left
// above the last marker is repaired first.
func Start(g *plan.Graph, deps Deps, o StartOptions) (*Job, error) {
	j := &Job{ID: o.QueryID, Name: o.Name, Graph: g, store: deps.Store, logger: deps.Logger, results: o.Results,
		acks: make(chan ack, 64), force: make(chan chan checkpointResult, 16), state: StateStarting}
	if j.logger == nil {
		j.logger = slog.Default()
	}
	committed, err := j.recover()
	if err != nil {
		return nil, err
	}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	if err := j.build(deps, o, committed); err != nil {
		j.cancel()
		return nil, err
	}
	if j.restoring.Load() {
		j.setState(StateRestoring, nil)
	} else {
		j.setState(StateRunning, nil)
	}
	for _, s := range j.sources {
		j.run(s.name, s.run)
	}
	for _, t := range j.tasks {
		j.run(t.name, t.run)
	}
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		j.coordinate()
	}()
	return j, nil
}

// recover repairs the store above the last completed checkpoint and loads
// the committed results. It returns that checkpoint's id (0: none).
func (j *Job) recover() (uint64, error) {
	id, val, ok, err := j.store.LastMarker(markerKey(j.ID))
	if err != nil {
		return 0, fmt.Errorf("query %s: read marker: %w", j.Name, err)
	}
	if !ok {
		id = 0
	}
	// Versions above the marker come from an unfinished checkpoint: they
	// stay visible to every later read unless rewritten (SPEC 5).
	rid, err := j.store.Repair(QueryPrefix(j.ID), id)
	if err != nil {
		return 0, fmt.Errorf("query %s: repair above checkpoint %d: %w", j.Name, id, err)
	}
	if rid != 0 {
		if err := j.store.CommitMarker(markerKey(j.ID), rid, val); err != nil {
			return 0, fmt.Errorf("query %s: marker after repair: %w", j.Name, err)
		}
		id = rid
	}
	if j.results != nil {
		if err := j.results.Load(id); err != nil {
			return 0, err
		}
	}
	j.lastCheckpoint.Store(id)
	return id, nil
}

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
	j.logger.Error("query failed", "query", j.Name, "err", err)
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

func (j *Job) addLate(n int64, rows []LateRow) {
	j.lateRows.Add(n)
	j.mu.Lock()
	j.lateKeep = append(j.lateKeep, rows...)
	if over := len(j.lateKeep) - MaxLateSamples; over > 0 {
		j.lateKeep = append(j.lateKeep[:0:0], j.lateKeep[over:]...)
	}
	j.mu.Unlock()
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
	emit := time.Duration(g.Options.EmitInterval) * time.Millisecond
	tick := min(max(emit/4, 10*time.Millisecond), 100*time.Millisecond)
	for _, v := range g.Vertices {
		for i := 0; i < v.Parallelism; i++ {
			env := &Env{}
			counters := &Counters{}
			name := fmt.Sprintf("%s/stage%d/%d", j.Name, v.ID, i)
			ops := v.Ops
			var src *plan.Source
			if s, ok := ops[0].(*plan.Source); ok {
				src, ops = s, ops[1:]
			}
			var term terminal
			if s, ok := ops[len(ops)-1].(*plan.Sink); ok {
				ops = ops[:len(ops)-1]
				st := &sinkTerminal{ended: make(chan struct{})}
				switch s.Kind {
				case plan.SinkResults:
					if j.results == nil {
						return fmt.Errorf("query %s: a results sink needs a results table", j.Name)
					}
					rs := newResultsSink(j.results, j.store, j.ID, s.Key, &j.rowsOut)
					rs.retention, rs.task, rs.tasks = g.Options.ResultsRetention, i, v.Parallelism
					if committed > 0 {
						// Recovery replays from the start (see resultsSink.stale).
						rs.stale = j.results.ownedKeys(s.Key, i, v.Parallelism)
					}
					st.sink = rs
				default:
					st.sink = &discardSink{rowsOut: &j.rowsOut}
				}
				j.sinks = append(j.sinks, st)
				term = st
			} else {
				out, err := j.output(v.ID, i, boxes, inputBase)
				if err != nil {
					return err
				}
				term = out
			}
			built := make([]Operator, 0, len(ops))
			for _, spec := range ops {
				op, err := buildOperator(spec, env, counters)
				if err != nil {
					return fmt.Errorf("query %s: %s: %w", j.Name, spec.OpName(), err)
				}
				built = append(built, op)
			}
			base := taskBase{job: j, name: name, chain: newChain(built, term), counters: counters, env: env}
			j.ntasks++
			if src != nil {
				rd, err := j.reader(src, deps, o)
				if err != nil {
					return fmt.Errorf("query %s: source %s: %w", j.Name, src.Table, err)
				}
				st := &sourceTask{taskBase: base, spec: src, vertex: v.ID, subtask: i, reader: rd, inject: make(chan Barrier, 1),
					tracker: window.NewTracker(src.WatermarkDelay), floor: window.NoWatermark, wm: window.NoWatermark, tick: tick}
				if committed > 0 {
					// Recovery replays the log from the start: until the
					// source is back where it was, the query is restoring.
					st.replayTo = rd.Available(time.Now().UnixMilli())
					if st.replayTo > rd.Offset() {
						j.restoring.Store(true)
					}
				}
				st.offset.Store(rd.Offset())
				st.published.Store(window.NoWatermark)
				j.sources = append(j.sources, st)
				continue
			}
			mb := boxes[v.ID][i]
			t := &task{taskBase: base, mb: mb, align: newAligner(len(mb.queues)), inWM: make([]int64, len(mb.queues)),
				ended: make([]bool, len(mb.queues)), wm: window.NoWatermark}
			for k := range t.inWM {
				t.inWM[k] = window.NoWatermark
			}
			j.tasks = append(j.tasks, t)
		}
	}
	return nil
}

// buildOperator makes the operator of one spec.
func buildOperator(spec plan.Op, env *Env, c *Counters) (Operator, error) {
	switch s := spec.(type) {
	case *plan.Calc:
		return newCalc(s, env)
	case *plan.WindowAssign:
		return &windowAssign{spec: s.Window, lateness: s.AllowedLateness, counters: c}, nil
	case *plan.Aggregate:
		return newHashAgg(s, env, c)
	}
	return nil, fmt.Errorf("no operator for %s", spec.OpName())
}

func (j *Job) output(vid, subtask int, boxes map[int][]*mailbox, inputBase map[[2]int]int) (*output, error) {
	for _, v := range j.Graph.Vertices {
		for ei, e := range v.Inputs {
			if e.From != vid {
				continue
			}
			o := &output{ctx: j.ctx, partition: e.Partition, keyCols: e.KeyCols}
			base := inputBase[[2]int{v.ID, ei}]
			switch e.Partition {
			case plan.Hash:
				for _, mb := range boxes[v.ID] {
					o.targets = append(o.targets, mb.input(base+subtask))
				}
			default:
				o.targets = []inbox{boxes[v.ID][subtask].input(base + subtask)}
			}
			return o, nil
		}
	}
	return nil, fmt.Errorf("stage %d has no consumer", vid)
}

func (j *Job) reader(src *plan.Source, deps Deps, o StartOptions) (reader, error) {
	from := o.StartOffsets[src.Table]
	if deps.openReader != nil {
		return deps.openReader(src, from)
	}
	switch src.Engine {
	case "http":
		l, err := deps.Log(src.TableID)
		if err != nil {
			return nil, err
		}
		return &logReader{log: l, off: from}, nil
	case "nexmark":
		return newNexmarkReader(src, from, time.Now().UnixMilli())
	}
	return nil, fmt.Errorf("no reader for ENGINE=%s", src.Engine)
}

// markerValue is the JSON of a checkpoint marker.
type markerValue struct {
	ID      uint64 `json:"id"`
	Time    int64  `json:"time_ms"`
	RowsIn  int64  `json:"rows_in"`
	RowsOut int64  `json:"rows_out"`
	Late    int64  `json:"late_rows"`
}

// coordinate is the checkpoint coordinator: it injects a barrier at every
// source each emit interval (a checkpoint when the checkpoint interval has
// come, or on request), waits for every task's ack, and completes the
// checkpoint by committing its marker. One barrier is in flight at a time.
func (j *Job) coordinate() {
	opts := j.Graph.Options
	emit := time.Duration(opts.EmitInterval) * time.Millisecond
	if emit <= 0 {
		emit = 200 * time.Millisecond
	}
	ticker := time.NewTicker(emit)
	defer ticker.Stop()
	var (
		epoch     uint64
		inFlight  bool
		cur       Barrier
		acked     int
		restoring bool
		failed    error
		waiting   []chan checkpointResult // asked before the barrier in flight
		queued    []chan checkpointResult // asked while it was in flight
		lastCkpt  = time.Now()
		ckptEvery = time.Duration(opts.CheckpointInterval) * time.Millisecond
	)
	inject := func(force bool) {
		epoch++
		cur = Barrier{Epoch: epoch, Flush: force}
		if ckptEvery > 0 && (force || time.Since(lastCkpt) >= ckptEvery) {
			cur.CheckpointID = j.store.NextID()
			lastCkpt = time.Now()
		}
		inFlight, acked, restoring, failed = true, 0, false, nil
		waiting, queued = queued, nil
		for _, s := range j.sources {
			select {
			case s.inject <- cur:
			case <-j.ctx.Done():
				return
			}
		}
	}
	complete := func() {
		inFlight = false
		res := checkpointResult{}
		switch {
		case failed != nil:
			res.err = failed
		case cur.CheckpointID == 0:
		case restoring:
			res.err = errors.New("checkpoint skipped: the query is still restoring")
		default:
			val, _ := json.Marshal(markerValue{ID: cur.CheckpointID, Time: time.Now().UnixMilli(),
				RowsIn: j.rowsIn.Load(), RowsOut: j.rowsOut.Load(), Late: j.lateRows.Load()})
			if err := j.store.CommitMarker(markerKey(j.ID), cur.CheckpointID, val); err != nil {
				res.err = fmt.Errorf("checkpoint %d: commit marker: %w", cur.CheckpointID, err)
				j.fail(res.err)
				break
			}
			if j.results != nil {
				j.results.setCommitted(cur.CheckpointID)
			}
			j.lastCheckpoint.Store(cur.CheckpointID)
			res.id = cur.CheckpointID
		}
		if !restoring && j.restoring.Load() {
			j.restoring.Store(false)
			j.setState(StateRunning, nil)
		}
		for _, w := range waiting {
			w <- res
		}
		waiting = nil
		if len(queued) > 0 {
			inject(true)
		}
	}
	for {
		select {
		case <-j.ctx.Done():
			for _, w := range append(waiting, queued...) {
				w <- checkpointResult{err: errors.New("query stopped")}
			}
			return
		case <-ticker.C:
			if !inFlight {
				inject(false)
			}
		case w := <-j.force:
			queued = append(queued, w)
			if !inFlight {
				inject(true)
			}
		case a := <-j.acks:
			if a.epoch != cur.Epoch {
				continue
			}
			acked++
			restoring = restoring || a.restoring
			if a.err != nil && failed == nil {
				failed = a.err
			}
			if acked == j.ntasks {
				complete()
			}
		}
	}
}

// Checkpoint takes a checkpoint now: every source first reads every row
// available (acknowledged) when the barrier reaches it. It returns the
// completed checkpoint's id (0 when checkpoints are off: the barrier still
// publishes the latest results).
func (j *Job) Checkpoint(ctx context.Context) (uint64, error) {
	w := make(chan checkpointResult, 1)
	select {
	case j.force <- w:
	case <-j.ctx.Done():
		return 0, j.stoppedErr()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case r := <-w:
		return r.id, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (j *Job) stoppedErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	return errors.New("query stopped")
}

// Stop stops every task and waits for them.
func (j *Job) Stop() {
	j.setState(StateStopped, nil)
	j.cancel()
	j.wg.Wait()
}

// Done is closed once every sink has seen the end of its input (bounded
// sources only).
func (j *Job) Done() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for _, s := range j.sinks {
			select {
			case <-s.ended:
			case <-j.ctx.Done():
			}
		}
		close(done)
	}()
	return done
}

// Status is a snapshot of a job for the API.
type Status struct {
	State          string
	Err            error
	RowsIn         int64
	RowsOut        int64
	LateRows       int64
	RecentLate     []LateRow
	LastCheckpoint uint64
	Watermark      int64
	Offsets        map[string]int64
}

// Status reports the job's state and counters.
func (j *Job) Status() Status {
	j.mu.Lock()
	s := Status{State: j.state, Err: j.err, RecentLate: append([]LateRow(nil), j.lateKeep...)}
	j.mu.Unlock()
	s.RowsIn, s.RowsOut, s.LateRows = j.rowsIn.Load(), j.rowsOut.Load(), j.lateRows.Load()
	s.LastCheckpoint = j.lastCheckpoint.Load()
	s.Watermark = window.NoWatermark
	s.Offsets = map[string]int64{}
	for _, src := range j.sources {
		s.Offsets[src.spec.Table] = src.offset.Load()
		if w := src.published.Load(); w > s.Watermark {
			s.Watermark = w
		}
	}
	return s
}
