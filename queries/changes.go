package queries

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/value"
)

// ChangesOptions say where a /changes stream starts.
type ChangesOptions struct {
	// From is the first seq to send (0: from now).
	From uint64
	// Snapshot sends the current rows first.
	Snapshot bool
	// Committed sends only what completed checkpoints made visible (the
	// snapshot is then the rows as of the first checkpoint it sees).
	Committed bool
}

// ChangeRecord is one record of a /changes stream, as JSON, with its seq
// (0 for records that are not in the change log: schema, snapshot rows).
type ChangeRecord struct {
	Seq  uint64
	Type string
	JSON []byte
}

// ChangeStream is an open /changes stream of one query.
type ChangeStream struct {
	g        *plan.Graph
	res      *runtime.Results
	sub      *runtime.Subscription
	pending  []ChangeRecord
	awaitCkp bool  // committed snapshot: taken at the first checkpoint record
	lateness int64 // of the query's windows (closed_before)
	keyNames []string
	// snap are the snapshot rows not yet encoded (from snapPos on): a
	// large snapshot goes out snapshotChunk records per Next, so that
	// the stream's first bytes leave at once; snapSeq is the cursor its
	// snapshot_end names.
	snap    []runtime.KeyedRow
	snapPos int
	snapSeq uint64
}

// snapshotChunk is how many snapshot records one Next encodes.
const snapshotChunk = 1024

// Changes opens the change stream of view name: the schema record first,
// then (snapshot) the current rows, then changes as they are published.
func (e *Engine) Changes(name string, o ChangesOptions) (*ChangeStream, error) {
	e.mu.RLock()
	v, ok := e.views[name]
	e.mu.RUnlock()
	if !ok {
		return nil, notFound("query", name)
	}
	if v.Record.Sink != "" {
		return nil, &Error{Status: 409, Title: statusTitle(409), Statement: -1,
			Detail: fmt.Sprintf("query %s writes sink table %s: its changes go there, not to a stream", name, v.Record.Sink)}
	}
	if v.Job == nil || v.Results == nil {
		return nil, &Error{Status: 409, Title: statusTitle(409), Statement: -1, Detail: fmt.Sprintf("query %s is not running", name)}
	}
	sub, rows, err := v.Results.Subscribe(o.From, o.Committed, o.Snapshot)
	if errors.Is(err, runtime.ErrGone) {
		return nil, &Error{Status: 410, Title: "gone", Statement: -1,
			Detail: fmt.Sprintf("seq %d is not in query %s's change log (too old, or from another run of the server); reconnect with snapshot=true", o.From, name)}
	}
	if err != nil {
		return nil, err
	}
	c := &ChangeStream{g: v.Graph, res: v.Results, sub: sub, awaitCkp: o.Snapshot && o.Committed}
	for _, vx := range v.Graph.Vertices {
		for _, op := range vx.Ops {
			if a, ok := op.(*plan.Aggregate); ok && a.Windowed {
				c.lateness = a.AllowedLateness
			}
		}
	}
	c.keyNames = c.keyColumns()
	cols := make([]map[string]string, len(v.Graph.Out))
	for i, col := range v.Graph.Out {
		cols[i] = map[string]string{"name": col.Name, "type": col.Type.String()}
	}
	c.add(0, "schema", map[string]any{"type": "schema", "query": name, "columns": cols, "key_columns": c.keyNames,
		"key_kind": v.Graph.Key.String(), "emit_mode": v.Graph.Options.EmitMode.String(), "seq": sub.Cursor()})
	if o.Snapshot && !o.Committed {
		c.snap, c.snapSeq = rows, sub.Cursor()
		if len(rows) == 0 {
			c.encodeSnapshot(0)
		}
	}
	return c, nil
}

// keyColumns names the values of the query's upsert key.
func (c *ChangeStream) keyColumns() []string {
	if c.g.Key == plan.KeyRowID {
		return []string{"_row_id"}
	}
	names := make([]string, len(c.g.KeyOut))
	for k, o := range c.g.KeyOut {
		if o >= 0 {
			names[k] = c.g.Out[o].Name
		} else {
			names[k] = c.g.KeyNames[k]
		}
	}
	return names
}

func (c *ChangeStream) add(seq uint64, typ string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "error", "detail": err.Error()})
	}
	c.pending = append(c.pending, ChangeRecord{Seq: seq, Type: typ, JSON: b})
}

// encodeSnapshot adds up to n of the snapshot rows not yet sent (all of
// them for n = 0) to pending, and snapshot_end after the last.
func (c *ChangeStream) encodeSnapshot(n int) {
	end := len(c.snap)
	if n > 0 && c.snapPos+n < end {
		end = c.snapPos + n
	}
	for _, r := range c.snap[c.snapPos:end] {
		c.add(0, "snapshot", map[string]any{"type": "snapshot", "key": c.key(r.Key), "row": Objects(c.g.Out, []plan.Row{r.Row})[0]})
	}
	c.snapPos = end
	if end == len(c.snap) {
		c.add(0, "snapshot_end", map[string]any{"type": "snapshot_end", "rows": len(c.snap), "seq": c.snapSeq})
		c.snap, c.snapPos = nil, 0
	}
}

// key renders an encoded upsert key (or row id) as a JSON object.
func (c *ChangeStream) key(k string) Object {
	if c.g.Key == plan.KeyRowID {
		return Object{Cols: c.keyNames, Vals: []any{hex.EncodeToString([]byte(k))}}
	}
	vals := make([]any, 0, len(c.keyNames))
	b := []byte(k)
	for len(b) > 0 && len(vals) < len(c.keyNames) {
		v, rest, err := value.DecodeValue(b)
		if err != nil {
			break
		}
		vals, b = append(vals, v.JSON()), rest
	}
	for len(vals) < len(c.keyNames) {
		vals = append(vals, nil)
	}
	return Object{Cols: c.keyNames, Vals: vals}
}

// Next returns the next records: what is pending, else what the change
// log has (waiting up to wait; nothing when the wait passed: time for a
// heartbeat). A reader that fell behind the log gets a "lagged" record and
// runtime.ErrLagged.
func (c *ChangeStream) Next(ctx context.Context, wait time.Duration) ([]ChangeRecord, error) {
	if c.snap != nil && len(c.pending) < snapshotChunk {
		c.encodeSnapshot(snapshotChunk)
	}
	if len(c.pending) > 0 {
		out := c.pending
		c.pending = nil
		return out, nil
	}
	recs, err := c.sub.Next(ctx, 1024, wait)
	if errors.Is(err, runtime.ErrLagged) {
		c.add(0, "lagged", map[string]any{"type": "lagged", "seq": c.sub.Cursor(),
			"detail": "this reader fell behind the change log and is closed; reconnect with snapshot=true"})
		out := c.pending
		c.pending = nil
		return out, err
	}
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if c.awaitCkp {
			// A committed snapshot is the rows of the first checkpoint
			// seen; the changes before it are in it.
			if r.Kind != runtime.ChangeCheckpoint {
				continue
			}
			rows, err := c.res.Snapshot(r.Ckpt)
			if err != nil {
				return nil, err
			}
			c.awaitCkp = false
			// At once, in order: the changes after this record follow it.
			c.snap, c.snapSeq = rows, c.sub.Cursor()
			c.encodeSnapshot(0)
		}
		switch r.Kind {
		case runtime.ChangeUpsert:
			row, err := value.DecodeRow(r.Row)
			if err != nil {
				return nil, err
			}
			c.add(r.Seq, "change", map[string]any{"type": "change", "seq": r.Seq, "op": "upsert", "key": c.key(r.Key), "row": Objects(c.g.Out, []plan.Row{row})[0]})
		case runtime.ChangeDelete:
			c.add(r.Seq, "change", map[string]any{"type": "change", "seq": r.Seq, "op": "delete", "key": c.key(r.Key)})
		case runtime.ChangeWatermark:
			rec := map[string]any{"type": "watermark", "seq": r.Seq, "watermark": plan.FormatTime(r.WM)}
			if c.g.Key == plan.KeyWindowGroup {
				// Windows ending at or before this are final (closed).
				rec["closed_before"] = plan.FormatTime(r.WM - c.lateness)
			}
			c.add(r.Seq, "watermark", rec)
		case runtime.ChangeCheckpoint:
			c.add(r.Seq, "checkpoint", map[string]any{"type": "checkpoint", "seq": r.Seq, "id": r.Ckpt})
		}
	}
	out := c.pending
	c.pending = nil
	return out, nil
}
