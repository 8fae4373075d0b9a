package queries

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// runPull evaluates a pull query over a view's rows: filtered, then
// aggregated (q.Group, by the aggregation operator views run), then sorted,
// cut (OFFSET, LIMIT) and projected.
func runPull(q *plan.PullQuery, rows []plan.Row) ([]plan.Row, error) {
	env := &op.Env{}
	var filter op.Eval
	if q.Filter != nil {
		f, err := op.Compile(q.Filter, env)
		if err != nil {
			return nil, err
		}
		filter = f
	}
	proj, err := op.CompileAll(q.Project, env)
	if err != nil {
		return nil, err
	}
	keys := make([]op.Eval, len(q.Order))
	for i, k := range q.Order {
		if keys[i], err = op.Compile(k.Expr, env); err != nil {
			return nil, err
		}
	}
	var kept []plan.Row
	for _, r := range rows {
		if filter == nil || filter(r).True() {
			kept = append(kept, r)
		}
	}
	if g := q.Group; g != nil {
		input, err := op.CompileAll(g.Input, env)
		if err != nil {
			return nil, err
		}
		// The aggregation's input rows, carved from one allocation.
		vals := make([]plan.Value, len(kept)*len(input))
		in := make([]plan.Row, len(kept))
		for i, r := range kept {
			row := plan.Row(vals[i*len(input) : (i+1)*len(input) : (i+1)*len(input)])
			for j, x := range input {
				row[j] = x(r)
			}
			in[i] = row
		}
		if kept, err = op.AggregateRows(g.Agg, in); err != nil {
			return nil, err
		}
	}
	if len(keys) > 0 {
		sort.SliceStable(kept, func(a, b int) bool {
			for i, k := range keys {
				c := value.CompareNullsFirst(k(kept[a]), k(kept[b]))
				if q.Order[i].Desc {
					c = -c
				}
				if c != 0 {
					return c < 0
				}
			}
			return false
		})
	}
	if q.Offset > 0 {
		if q.Offset >= int64(len(kept)) {
			kept = nil
		} else {
			kept = kept[q.Offset:]
		}
	}
	if q.Limit >= 0 && q.Limit < int64(len(kept)) {
		kept = kept[:q.Limit]
	}
	out := make([]plan.Row, len(kept))
	for i, r := range kept {
		row := make(plan.Row, len(proj))
		for j, p := range proj {
			row[j] = p(r)
		}
		out[i] = row
	}
	return out, nil
}

// ErrNotFound is wrapped by lookups of unknown names.
var ErrNotFound = errors.New("not found")

func notFound(what, name string) error {
	return &Error{Status: 404, Title: statusTitle(404), Detail: fmt.Sprintf("unknown %s %s", what, name), Statement: -1}
}

// Ingest validates and appends rows to an HTTP table; it returns once they
// are durable. The body is a string so that decoded VARCHAR values can be
// substrings of it (value.EncodeRows).
func (e *Engine) Ingest(ctx context.Context, table, body, idemKey string) (state.AppendResult, error) {
	e.mu.RLock()
	def, ok := e.tables[table]
	e.mu.RUnlock()
	if !ok {
		return state.AppendResult{}, notFound("table", table)
	}
	if def.Engine != "http" {
		return state.AppendResult{}, &Error{Status: 409, Title: statusTitle(409), Statement: -1,
			Detail: fmt.Sprintf("table %s has ENGINE=%s; rows can only be posted to ENGINE=http tables", table, def.Engine)}
	}
	enc, err := value.EncodeRows(def, body, e.cfg.Limits)
	if err != nil {
		status := 400
		if re, ok := err.(*value.RowError); ok && re.Status != 0 {
			status = re.Status
		}
		return state.AppendResult{}, &Error{Status: status, Title: statusTitle(status), Detail: err.Error(), Statement: -1}
	}
	l, err := e.meta.Log(def.ID)
	if err != nil {
		return state.AppendResult{}, err
	}
	res, err := l.Append(ctx, enc, idemKey)
	if state.IsDiskFull(err) {
		return res, diskFull(err, "table %s: none of the %d rows was appended", table, len(enc))
	}
	var conflict *state.IdempotencyConflictError
	if errors.As(err, &conflict) {
		return state.AppendResult{}, &Error{Status: 422, Title: "idempotency key reused with other rows", Statement: -1,
			Detail: fmt.Sprintf("table %s: %s", table, conflict.Error()), Err: err}
	}
	return res, err
}

// TableInfo describes a table for the API.
type TableInfo struct {
	Name       string         `json:"name"`
	Engine     string         `json:"engine"`
	Columns    []ColumnInfo   `json:"columns"`
	PrimaryKey []string       `json:"primary_key,omitempty"`
	EventTime  string         `json:"event_time,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	EndOffset  *int64         `json:"end_offset,omitempty"`
	Watermarks map[string]any `json:"watermarks,omitempty"`
	SQL        string         `json:"sql"`
	// State is "ok", or "corrupt" when its ingest log lost acknowledged
	// rows (Lost says which offsets; the state stays until DROP TABLE).
	State string `json:"state"`
	// Lost are the ranges of offsets whose rows the ingest log lost.
	Lost []LostInfo `json:"lost,omitempty"`
	// LostRows is how many offsets the ranges of Lost cover.
	LostRows int64 `json:"lost_rows,omitempty"`
	// FileError: a side input's file cannot be read (file:line:column and
	// why); the table keeps its last version.
	FileError string `json:"file_error,omitempty"`
}

// Table states (TableInfo.State).
const (
	TableOK      = "ok"
	TableCorrupt = "corrupt"
)

// LostInfo is one range of ingest offsets whose rows were lost: From is
// the first, To the one after the last. Detected is when it was found,
// Cause how.
type LostInfo struct {
	Table    string    `json:"table,omitempty"`
	From     int64     `json:"from"`
	To       int64     `json:"to"`
	Rows     int64     `json:"rows"`
	Detected time.Time `json:"detected"`
	Cause    string    `json:"cause"`
}

func lostInfo(table string, rs []state.LostRange) []LostInfo {
	var out []LostInfo
	for _, r := range rs {
		out = append(out, LostInfo{Table: table, From: r.From, To: r.To, Rows: r.To - r.From, Detected: r.Detected, Cause: r.Cause})
	}
	return out
}

// queryLoss lists the lost ingest rows a query's results lack: of each
// lost range of the HTTP tables it reads, the part above how far it had
// read when the loss was found (noteLossReaders; a query created later
// had read up to its start offset) (caller holds mu).
func (e *Engine) queryLoss(v *View) []LostInfo {
	var out []LostInfo
	for name, def := range e.tables {
		if !def.HasLog() || !readsTable(v, name) {
			continue
		}
		l, err := e.meta.Log(def.ID)
		if err != nil {
			continue
		}
		lost := l.Lost()
		if len(lost) == 0 {
			continue
		}
		readers := e.lossReaders(def.ID)
		for _, r := range lost {
			read, ok := readers[lossReadKey(def.ID, r)][v.Record.ID]
			if !ok {
				read = v.Record.StartOffsets[name]
			}
			if r.From = max(r.From, read); r.From < r.To {
				out = append(out, lostInfo(name, []state.LostRange{r})...)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// ColumnInfo is one column for the API.
type ColumnInfo struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// Tables lists the tables.
func (e *Engine) Tables() []TableInfo {
	e.mu.RLock()
	names := make([]string, 0, len(e.tables))
	for n := range e.tables {
		names = append(names, n)
	}
	e.mu.RUnlock()
	sort.Strings(names)
	out := make([]TableInfo, 0, len(names))
	for _, n := range names {
		if t, err := e.Table(n); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// Table describes one table: schema, engine, log end offset and the
// watermark each query's source has reached on it.
func (e *Engine) Table(name string) (TableInfo, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	def, ok := e.tables[name]
	if !ok {
		return TableInfo{}, notFound("table", name)
	}
	ti := TableInfo{Name: def.Name, Engine: def.Engine, PrimaryKey: def.PrimaryKey, SQL: def.SQL, Attributes: map[string]any{}}
	for _, c := range def.Columns {
		ti.Columns = append(ti.Columns, ColumnInfo{Name: c.Name, Type: c.Type.String(), Nullable: !c.NotNull})
	}
	if def.EventTime >= 0 {
		ti.EventTime = def.Columns[def.EventTime].Name
		ti.Attributes["watermark_delay"] = window.FormatDuration(def.WatermarkDelay)
		ti.Attributes["allowed_lateness"] = window.FormatDuration(def.AllowedLateness)
	}
	for k, v := range def.Attrs {
		ti.Attributes[k] = v
	}
	ti.State = TableOK
	ti.FileError = e.sideErrText(def.ID)
	if def.HasLog() {
		if l, err := e.meta.Log(def.ID); err == nil {
			end := l.End()
			ti.EndOffset = &end
			if ti.Lost = lostInfo("", l.Lost()); len(ti.Lost) > 0 {
				ti.State, ti.LostRows = TableCorrupt, l.LostRows()
			}
		}
	}
	ti.Watermarks = map[string]any{}
	for vn, v := range e.views {
		if v.Job == nil {
			continue
		}
		st := v.Job.Status()
		if wm, reads := st.SourceWatermarks[name]; reads {
			ti.Watermarks[vn] = watermarkJSON(wm)
		}
	}
	return ti, nil
}

func watermarkJSON(wm int64) any {
	if wm == window.NoWatermark || wm == 1<<63-1 {
		return nil
	}
	return plan.FormatTime(wm)
}

// lateRowsJSON is recent_late_rows: each late row's offset and event time.
func lateRowsJSON(rows []op.LateRow) []any {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, map[string]any{"offset": r.Offset, "event_time": plan.FormatTime(r.EventTime)})
	}
	return out
}

// QueryInfo describes a continuous query for the API.
type QueryInfo struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
	// Dialect is how SQL reads when it is not streamsql's own:
	// "postgresql" for a query created over the PostgreSQL wire protocol
	// (standard strings, "quoted" identifiers).
	Dialect   string         `json:"dialect,omitempty"`
	State     string         `json:"state"`
	Error     string         `json:"error,omitempty"`
	Plan      string         `json:"plan,omitempty"`
	Options   map[string]any `json:"options,omitempty"`
	Watermark any            `json:"watermark"`
	// InputEnded: every source of the query ended (bounded generators):
	// its watermark is past every event time, and watermark is null.
	InputEnded     bool             `json:"input_ended,omitempty"`
	Offsets        map[string]int64 `json:"offsets"`
	LastCheckpoint uint64           `json:"last_checkpoint"`
	Counters       map[string]int64 `json:"counters"`
	RecentLateRows []any            `json:"recent_late_rows"`
	// StateSize is the operators' state size: {"rows": open groups and
	// held join rows, "bytes": an estimate of the heap they take}.
	StateSize map[string]int64 `json:"state_size,omitempty"`
	// RecentBadRecords are the last source records that could not be
	// decoded (Kafka); Lag is each Kafka partition's committed end minus
	// the query's position.
	RecentBadRecords []runtime.BadRecord `json:"recent_bad_records,omitempty"`
	Lag              map[string]int64    `json:"lag,omitempty"`
	Sinks            map[string]any      `json:"sinks"`
	Created          time.Time           `json:"created"`
	// Key names the output columns of the results' upsert key, when the
	// query selects all of it (none for append-only results).
	Key []string `json:"key,omitempty"`
	// Graph is the plan as data, with each operator's figures while the
	// query runs (the console's operator graph).
	Graph *GraphInfo `json:"graph,omitempty"`
	// Restore is, while the query is restoring, how many of its tasks
	// have loaded their state.
	Restore *RestoreInfo `json:"restore,omitempty"`
	// Checkpointing sums up the checkpoints of this run of the query
	// (while it runs; a restart starts over).
	Checkpointing *CheckpointingInfo `json:"checkpointing,omitempty"`
	// LostRows are the rows its tables' ingest logs lost that this query
	// had not read before the loss was found: its results lack them
	// (TableInfo.Lost has the whole ranges).
	LostRows []LostInfo `json:"lost_rows,omitempty"`
}

// CheckpointingInfo is a running query's checkpoints so far: how many
// completed and failed, and the last completed one's duration, alignment
// time (how long its slowest task held the barrier up: aligning inputs,
// or an external sink waiting for room) and size.
type CheckpointingInfo struct {
	Completed       uint64  `json:"completed"`
	Failed          uint64  `json:"failed"`
	LastDurationMs  float64 `json:"last_duration_ms"`
	LastAlignmentMs float64 `json:"last_alignment_ms"`
	LastBytes       int64   `json:"last_bytes"`
}

// GraphInfo is a query's physical plan: its stages in topological order.
type GraphInfo struct {
	Stages []StageInfo `json:"stages"`
}

// StageInfo is one stage: its operator chain and its inputs.
type StageInfo struct {
	ID          int            `json:"id"`
	Parallelism int            `json:"parallelism"`
	Inputs      []EdgeInfo     `json:"inputs"`
	Operators   []OperatorInfo `json:"operators"`
	// RowsOut is the rows sent to the next stages; QueueFill how full its
	// input queues are (0 to 1: near 1 it backpressures its producers).
	RowsOut   int64   `json:"rows_out"`
	QueueFill float64 `json:"queue_fill"`
}

// EdgeInfo is an input of a stage: the producing stage and how rows are
// routed (hash on the producer's output columns Key, or forward).
type EdgeInfo struct {
	From      int    `json:"from"`
	Partition string `json:"partition"`
	Key       []int  `json:"key,omitempty"`
	// Kind is what the edge carries: append-only, upsert (changes keyed on
	// the producer's columns UpsertKey) or retract.
	Kind      string `json:"kind"`
	UpsertKey []int  `json:"upsert_key,omitempty"`
}

// OperatorInfo is one operator of a stage's chain and the rows that
// reached it (a source: the rows it read); a stateful one's StateBytes is
// the estimated heap its state takes.
type OperatorInfo struct {
	Name       string `json:"name"`
	Explain    string `json:"explain"`
	Rows       int64  `json:"rows"`
	StateBytes *int64 `json:"state_bytes,omitempty"`
}

// RestoreInfo is a restoring query's progress.
type RestoreInfo struct {
	TasksRestored int `json:"tasks_restored"`
	Tasks         int `json:"tasks"`
}

// keyColumns names the output columns holding the upsert key, or nil when
// the query has none or does not select all of it.
func keyColumns(g *plan.Graph) []string {
	if g.Key == plan.KeyRowID || len(g.KeyOut) == 0 {
		return nil
	}
	names := make([]string, len(g.KeyOut))
	for i, c := range g.KeyOut {
		if c < 0 || c >= len(g.Out) {
			return nil
		}
		names[i] = g.Out[c].Name
	}
	return names
}

// graphInfo renders g, with the job's figures when it runs (the same
// counters /metrics exports).
func graphInfo(g *plan.Graph, job *runtime.Job) *GraphInfo {
	var stages []runtime.StageMetrics
	if job != nil {
		stages = job.Metrics().Stages
	}
	gi := &GraphInfo{Stages: make([]StageInfo, len(g.Vertices))}
	for i, v := range g.Vertices {
		si := StageInfo{ID: v.ID, Parallelism: v.Parallelism, Inputs: []EdgeInfo{}, Operators: make([]OperatorInfo, len(v.Ops))}
		for _, e := range v.Inputs {
			ei := EdgeInfo{From: e.From, Partition: e.Partition.String(), Kind: e.Kind.String(), UpsertKey: e.UpsertKey}
			if e.Partition == plan.Hash {
				ei.Partition, ei.Key = "hash", e.KeyCols
			}
			si.Inputs = append(si.Inputs, ei)
		}
		var ops []runtime.OperatorMetrics
		if i < len(stages) {
			ops = stages[i].Operators
			si.QueueFill = stages[i].QueueFill
		}
		for k, op := range v.Ops {
			si.Operators[k] = OperatorInfo{Name: op.OpName(), Explain: op.Explain()}
			if k < len(ops) {
				si.Operators[k].Rows = ops[k].RowsIn
				if ops[k].Stateful {
					si.Operators[k].StateBytes = &ops[k].StateBytes
				}
			}
		}
		if _, sink := v.Ops[len(v.Ops)-1].(*plan.Sink); !sink && len(ops) == len(v.Ops) {
			si.RowsOut = ops[len(ops)-1].RowsOut
		}
		gi.Stages[i] = si
	}
	return gi
}

// Queries lists the queries.
func (e *Engine) Queries() []QueryInfo {
	e.mu.RLock()
	names := make([]string, 0, len(e.views))
	for n := range e.views {
		names = append(names, n)
	}
	e.mu.RUnlock()
	sort.Strings(names)
	out := []QueryInfo{}
	for _, n := range names {
		if q, err := e.Query(n); err == nil {
			out = append(out, q)
		}
	}
	return out
}

// Query describes one query.
func (e *Engine) Query(name string) (QueryInfo, error) {
	e.mu.RLock()
	v, ok := e.views[name]
	var loss []LostInfo
	if ok {
		loss = e.queryLoss(v)
	}
	e.mu.RUnlock()
	if !ok {
		return QueryInfo{}, notFound("query", name)
	}
	qi := QueryInfo{Name: name, SQL: v.Record.SQL, Dialect: string(v.Record.Dialect), State: runtime.StateFailed, Created: v.Record.Created,
		Offsets: map[string]int64{}, Counters: map[string]int64{}, RecentLateRows: []any{}, Sinks: map[string]any{}, LostRows: loss}
	if v.Graph != nil {
		qi.Plan = v.Explain()
		o := v.Graph.Options
		qi.Options = map[string]any{"emit_mode": o.EmitMode.String(), "parallelism": o.Parallelism,
			"checkpoint_interval": window.FormatDuration(o.CheckpointInterval), "emit_interval": window.FormatDuration(o.EmitInterval)}
	}
	if v.Graph != nil {
		qi.Graph = graphInfo(v.Graph, v.Job)
		qi.Key = keyColumns(v.Graph)
	}
	if v.Job == nil {
		switch {
		case v.Record.Stopped:
			qi.State = runtime.StateStopped
		case v.StartErr != nil:
			qi.Error = v.StartErr.Error()
		default:
			qi.Error = "the query could not be started; see the server log"
		}
		if c, ok := runtime.LastCheckpointOf(e.store, v.Record.ID); ok {
			qi.LastCheckpoint = c.ID
			qi.Counters = map[string]int64{"rows_in": c.RowsIn, "rows_out": c.RowsOut, "late_rows": c.Late, "bad_records": c.Bad,
				"out_of_range": c.OutOfRange}
			qi.Offsets = c.Offsets
			qi.RecentLateRows = lateRowsJSON(c.RecentLate)
			qi.RecentBadRecords = c.RecentBad
		}
		return qi, nil
	}
	st := v.Job.Status()
	qi.State = st.State
	if st.State == runtime.StateRestoring {
		done, total := v.Job.RestoreProgress()
		qi.Restore = &RestoreInfo{TasksRestored: done, Tasks: total}
	}
	if st.Err != nil {
		qi.Error = st.Err.Error()
	}
	cm := v.Job.CheckpointMetrics()
	qi.Checkpointing = &CheckpointingInfo{Completed: cm.Completed, Failed: cm.Failed, LastBytes: cm.LastBytes,
		LastDurationMs: float64(cm.Last.Microseconds()) / 1000, LastAlignmentMs: float64(cm.LastAlignment.Microseconds()) / 1000}
	qi.Watermark = watermarkJSON(st.Watermark)
	qi.InputEnded = st.Watermark == 1<<63-1
	qi.Offsets = st.Offsets
	qi.LastCheckpoint = st.LastCheckpoint
	qi.Counters = map[string]int64{"rows_in": st.RowsIn, "rows_out": st.RowsOut, "late_rows": st.LateRows, "bad_records": st.BadRecords,
		"out_of_range": st.OutOfRange}
	qi.RecentBadRecords = st.RecentBad
	qi.Lag = st.Lag
	qi.StateSize = map[string]int64{"rows": st.StateRows, "bytes": st.StateBytes}
	qi.RecentLateRows = lateRowsJSON(st.RecentLate)
	if v.Results != nil {
		res := map[string]any{"committed_checkpoint": v.Results.Committed(), "delivery": resultsDelivery(v.Graph)}
		if res["delivery"] == plan.DeliveryAtMostOnce {
			res["skipped_changes"] = st.ResultsSkipped
		}
		qi.Sinks["results"] = res
	}
	for _, ss := range st.Sinks {
		qi.Sinks[ss.Table] = ss
	}
	return qi, nil
}

// Results returns a view's output schema and rows.
func (e *Engine) Results(name string, committed bool) (plan.Schema, []plan.Row, error) {
	e.mu.RLock()
	v, ok := e.views[name]
	e.mu.RUnlock()
	if !ok {
		return nil, nil, notFound("query", name)
	}
	if v.Record.Sink != "" {
		return nil, nil, &Error{Status: 409, Title: statusTitle(409), Statement: -1,
			Detail: fmt.Sprintf("query %s writes sink table %s (ENGINE=%s): its results are in the external system", name, v.Record.Sink, e.tableDef(v.Record.Sink).Engine)}
	}
	if v.Graph == nil || v.Results == nil {
		return nil, nil, &Error{Status: 409, Title: statusTitle(409), Detail: fmt.Sprintf("query %s is not running", name), Statement: -1}
	}
	rows, err := v.Results.Rows(committed)
	return v.Graph.Out, rows, err
}

// CheckpointInfo is one query's completed checkpoint.
type CheckpointInfo struct {
	Query string         `json:"query"`
	ID    uint64         `json:"id"`
	Error string         `json:"error,omitempty"`
	Sinks map[string]any `json:"sinks"`
}

// Checkpoint checkpoints every query (or the named one) and waits until
// each has completed, covering every row acknowledged before the call.
func (e *Engine) Checkpoint(ctx context.Context, only string) ([]CheckpointInfo, error) {
	e.mu.RLock()
	var views []*View
	for n, v := range e.views {
		if (only == "" && !v.Record.Stopped) || n == only {
			views = append(views, v)
		}
	}
	e.mu.RUnlock()
	if only != "" && len(views) == 0 {
		return nil, notFound("query", only)
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Record.Name < views[j].Record.Name })
	out := make([]CheckpointInfo, len(views))
	type res struct {
		id        uint64
		err       error
		sinks     []runtime.SinkStatus
		committed bool
	}
	results := make([]chan res, len(views))
	for i, v := range views {
		results[i] = make(chan res, 1)
		go func(v *View, ch chan res) {
			if v.Job == nil {
				ch <- res{err: errors.New("query is not running")}
				return
			}
			if v.Graph.Options.CheckpointInterval == 0 {
				// Checkpoints are off for this query: the flush barrier still
				// publishes every acknowledged row to the latest results.
				_, err := v.Job.Checkpoint(ctx)
				ch <- res{err: err}
				return
			}
			id, err := v.Job.Checkpoint(ctx)
			r := res{id: id, err: err}
			if err == nil {
				// Exactly-once sinks commit after the marker: wait for them
				// too (a sink still pending when ctx ends is reported).
				r.sinks, r.committed = v.Job.WaitSinks(ctx, id)
			}
			ch <- r
		}(v, results[i])
	}
	var failed []string
	var causes []error
	for i, v := range views {
		r := <-results[i]
		out[i] = CheckpointInfo{Query: v.Record.Name, ID: r.id, Sinks: map[string]any{}}
		if v.Results != nil {
			out[i].Sinks["results"] = map[string]any{"committed": r.err == nil}
		}
		for _, s := range r.sinks {
			out[i].Sinks[s.Table] = map[string]any{"committed": r.err == nil && r.committed, "committed_epoch": s.CommittedEpoch, "committed_checkpoint": s.CommittedCheckpoint, "pending_epochs": s.PendingEpochs, "error": s.Error}
		}
		if r.err != nil {
			out[i].Error = r.err.Error()
			failed = append(failed, v.Record.Name+": "+r.err.Error())
			causes = append(causes, r.err)
		}
	}
	if len(failed) > 0 {
		return out, &checkpointError{msg: "checkpoint failed for " + strings.Join(failed, "; "), causes: causes}
	}
	return out, nil
}

// checkpointError is Checkpoint's error: every failed query named, the
// causes kept for errors.Is (a disk that is full: IsDiskFull).
type checkpointError struct {
	msg    string
	causes []error
}

func (e *checkpointError) Error() string   { return e.msg }
func (e *checkpointError) Unwrap() []error { return e.causes }

// DropQuery stops a query and drops it with its state and results.
func (e *Engine) DropQuery(name string) error {
	e.wlock("DELETE /v1/queries/" + name)
	v, ok := e.views[name]
	if !ok {
		e.wunlock()
		return notFound("query", name)
	}
	if err := e.unregisterQuery(v); err != nil {
		e.wunlock()
		return err
	}
	e.wunlock()
	e.retire(v)
	return nil
}

// stopTimeout bounds a stop's final checkpoint.
const stopTimeout = runtime.CheckpointTimeout

// StopQuery takes a final checkpoint of a query and stops it; it stays
// stopped (across restarts too) until ResumeQuery. A query whose final
// checkpoint fails is not stopped.
func (e *Engine) StopQuery(ctx context.Context, name string) (QueryInfo, error) {
	e.mu.RLock()
	v, ok := e.views[name]
	e.mu.RUnlock()
	switch {
	case !ok:
		return QueryInfo{}, notFound("query", name)
	case v.Record.Stopped:
		return e.Query(name)
	case v.Job == nil:
		return QueryInfo{}, &Error{Status: 409, Title: statusTitle(409), Detail: fmt.Sprintf("query %s is not running", name), Statement: -1}
	}
	job := v.Job
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	// A final checkpoint or catalog write refused (a full disk: 507)
	// leaves the query running, as it was: it is stopped only once both
	// are written.
	var ckpt uint64
	if job.Graph.Options.CheckpointInterval > 0 {
		var err error
		if ckpt, err = job.Checkpoint(ctx); err != nil {
			return QueryInfo{}, fmt.Errorf("stop %s: final checkpoint: %w", name, err)
		}
	}
	e.wlock("POST /v1/queries/" + name + "/stop")
	if e.views[name] != v {
		e.wunlock()
		return e.Query(name) // stopped, dropped or replaced meanwhile
	}
	rec := v.Record
	rec.Stopped = true
	if err := e.putView(rec); err != nil {
		e.wunlock()
		return QueryInfo{}, fmt.Errorf("stop %s: %w", name, err)
	}
	e.views[name] = &View{Record: rec, Graph: v.Graph, Results: v.Results, stopping: job}
	e.wunlock()
	e.logQuery("query stopped", rec, "checkpoint", ckpt)
	if err := job.Stop(); err != nil {
		e.log.Warn("stopped query still stopping", "query", name, "err", err)
	}
	return e.Query(name)
}

// ResumeQuery starts a stopped query again from its last checkpoint.
func (e *Engine) ResumeQuery(name string) (QueryInfo, error) {
	e.wlock("POST /v1/queries/" + name + "/resume")
	v, ok := e.views[name]
	if !ok {
		e.wunlock()
		return QueryInfo{}, notFound("query", name)
	}
	if v.Job != nil {
		e.wunlock()
		return e.Query(name)
	}
	if v.stopping != nil {
		select {
		case <-v.stopping.Stopped():
		default:
			e.wunlock()
			return QueryInfo{}, &Error{Status: 409, Title: statusTitle(409), Statement: -1,
				Detail: fmt.Sprintf("query %s is still stopping (a task has not returned from the message it was working on); resume it once it has", name)}
		}
	}
	rec := v.Record
	rec.Stopped = false
	g := v.Graph
	var err error
	if g == nil {
		err = fmt.Errorf("query %s: %w", name, v.StartErr)
	}
	var nv *View
	if err == nil {
		nv, err = e.startView(rec, g)
	}
	if err == nil {
		if err = e.putView(rec); err != nil {
			// Not recorded as resumed (a full disk: 507): it stays
			// stopped, and no job of it runs unrecorded.
			nv.Job.Stop()
		}
	}
	if err == nil {
		e.views[name] = nv
	}
	e.wunlock()
	if err != nil {
		return QueryInfo{}, err
	}
	e.logQuery("query resumed", rec)
	return e.Query(name)
}

// Checkpoints returns a query's recent checkpoints, newest first.
func (e *Engine) Checkpoints(name string) ([]runtime.CheckpointStat, error) {
	e.mu.RLock()
	v, ok := e.views[name]
	e.mu.RUnlock()
	if !ok {
		return nil, notFound("query", name)
	}
	if v.Job == nil {
		return []runtime.CheckpointStat{}, nil
	}
	h := append([]runtime.CheckpointStat{}, v.Job.History()...) // [] rather than null before the first
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return h, nil
}

// resultsDelivery is the delivery of g's built-in results (the delivery
// option).
func resultsDelivery(g *plan.Graph) string {
	for _, v := range g.Vertices {
		for _, o := range v.Ops {
			if s, ok := o.(*plan.Sink); ok && s.Kind == plan.SinkResults {
				return s.Delivery()
			}
		}
	}
	return plan.DeliveryExactlyOnce
}
