package op

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// TestOpScripts runs the operator scripts in testdata/scripts/ with
// github.com/cockroachdb/datadriven: operators built from SQL by the
// planner and op.Build, driven synchronously on the test's goroutine (no
// task, no clock), each command printing what the chain emitted.
// go test ./runtime/op -run TestOpScripts -rewrite rewrites the outputs.
// Commands:
//
//	plan [vertex=N]
//	    CREATE TABLE statements and one SELECT, separated by ";": the
//	    SELECT is planned (parallelism 1) and vertex N's operators
//	    (default: the last vertex) built by Build into a chain, the Sink
//	    left out. An input edge from a source vertex brings that vertex's
//	    operators too (its Calc), before the exchange (which encodes the
//	    edge's key columns into RowMeta.Key); rows are then given in the
//	    table's columns, else in the producer's output. Prints the
//	    operators (Explain).
//	rows [side=0|1] [wm=T]
//	    One row a line, values separated by commas: NULL, TRUE, FALSE,
//	    numbers, 'text', times ("12s", "1500ms", "2026-01-01 00:00:01");
//	    each is cast to its column's type. A line "del: ..." is a Delete
//	    (of a PRIMARY KEY table); "before: ..." the old row of an update;
//	    other rows of a PRIMARY KEY table are Upserts, others Inserts. A
//	    line "@id ..." gives the row that RowMeta.ID (an updating input's
//	    row identity). Every row carries the side's last
//	    watermark (RowMeta.WM; wm: this one instead) and the side's next
//	    offset. The rows go in one batch.
//	watermark t=T [side=N]
//	    The side's watermark advances to T.
//	idle side=N [off]
//	    The side goes idle (or active again).
//	barrier [id=N] [full]
//	    A barrier, a checkpoint when id > 0 (an id may not be used twice,
//	    restores included): the rows it emits, then the records each
//	    stateful operator's Snapshot wrote to its own log (a chain's first
//	    checkpoint, and one marked full, is a base, the others deltas),
//	    sorted by key: keys as the values they encode (or in hex), values
//	    in hex.
//	restore id=N
//	    A new chain of the same plan, restored from the records written up
//	    to checkpoint N (the last base at or before N and the deltas after
//	    it, replayed through LogRecords); what was written after N is
//	    dropped; the sides' watermarks and offsets are theirs at N, as a
//	    restored source's are.
//	state
//	    Each stateful operator's StateRows.
//
// Output rows are "insert|upsert|delete: v, v, ..."; times are printed
// as offsets from the epoch ("12s") within ten days of it, else as
// RFC 3339; a forwarded watermark is "wm -> T" when it moved.
func TestOpScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			d := &scriptDriver{}
			datadriven.RunTest(t, f, func(t *testing.T, td *datadriven.TestData) string {
				d.t = t
				out, err := d.run(td)
				if err != nil {
					t.Fatalf("%s: %v", td.Pos, err)
				}
				if out == "" {
					return "ok\n"
				}
				return out
			})
		})
	}
}

// scriptCatalog is the tables a script's plan command creates.
type scriptCatalog map[string]*plan.TableDef

func (c scriptCatalog) Table(n string) (*plan.TableDef, bool)    { t, ok := c[n]; return t, ok }
func (c scriptCatalog) View(string) (*plan.ViewDef, bool)        { return nil, false }
func (c scriptCatalog) ViewSelect(string) (*parser.Select, bool) { return nil, false }

// scriptOp is one operator of a script's chain.
type scriptOp struct {
	name string
	spec plan.Op
	op   Operator
	side int // pre-exchange operators: their side; else -1
}

// scriptLogEntry is one checkpoint's records of one operator.
type scriptLogEntry struct {
	ckpt   uint64
	base   bool
	blocks [][]byte
}

// scriptChain is the operators of one plan, as a task would run them.
type scriptChain struct {
	pre  [2][]*scriptOp // per side: a source vertex's operators
	ops  []*scriptOp    // the vertex's
	all  []*scriptOp    // pre then ops: the order of barriers and logs
	two  TwoInput       // ops[0], when the vertex has two inputs
	c    Counters
	env  Env
	logs [][]scriptLogEntry // per operator of all
	// based: the chain's first checkpoint, a base, was taken.
	based bool
}

type scriptDriver struct {
	t      *testing.T
	g      *plan.Graph
	vertex int
	sides  int
	schema [2]plan.Schema // the columns of the rows a side is fed
	keys   [2][]int       // the exchange's key columns (nil: forward)
	ids    [2][]int       // an updating producer's key columns: its rows' RowMeta.ID
	upsert [2]bool
	ch     *scriptChain
	wm     [2]int64 // per side: the last watermark
	off    [2]int64 // per side: the next offset
	fw     int64    // the last watermark the chain forwarded
	late   int64
	out    []string // what the chain emitted during a command
	epoch  uint64
	// at: per checkpoint, the sides' watermarks and offsets and the
	// forwarded watermark then (where a restored source resumes).
	at map[uint64]scriptPos
	// showKeys (plan keys): emitted rows show their RowMeta.Key.
	showKeys bool
}

type scriptPos struct {
	wm, off [2]int64
	fw      int64
}

type emitFunc func(*Batch) error

func (f emitFunc) Emit(b *Batch) error { return f(b) }

func (d *scriptDriver) run(td *datadriven.TestData) (string, error) {
	d.out = d.out[:0]
	switch td.Cmd {
	case "plan":
		*d = scriptDriver{t: d.t, showKeys: td.HasArg("keys")} // a new plan starts afresh
		return d.plan(td)
	case "rows":
		side := d.side(td)
		lines := strings.Split(strings.TrimSpace(td.Input), "\n")
		wm := d.wm[side]
		if td.HasArg("wm") {
			var s string
			td.ScanArgs(d.t, "wm", &s)
			var err error
			if wm, err = parseScriptTime(s); err != nil {
				return "", err
			}
		}
		b := &Batch{}
		for _, line := range lines {
			op := Insert
			if d.upsert[side] {
				op = Upsert
			}
			var id string
			if rest, ok := strings.CutPrefix(line, "@"); ok {
				id, line, _ = strings.Cut(rest, " ")
			}
			if rest, ok := strings.CutPrefix(line, "del:"); ok {
				op, line = Delete, rest
			}
			if rest, ok := strings.CutPrefix(line, "before:"); ok {
				op, line = Before, rest
			}
			r, err := parseScriptRow(line, d.schema[side])
			if err != nil {
				return "", err
			}
			m := RowMeta{Offset: d.off[side], WM: wm, Op: op, ID: id}
			d.off[side]++
			b.Append(r, m)
		}
		if err := d.ch.process(d, side, b); err != nil {
			return "", err
		}
	case "watermark":
		side := d.side(td)
		var s string
		td.ScanArgs(d.t, "t", &s)
		wm, err := parseScriptTime(s)
		if err != nil {
			return "", err
		}
		d.wm[side] = wm
		fw, err := d.ch.watermark(d, side, wm)
		if err != nil {
			return "", err
		}
		d.forwarded(fw)
	case "idle":
		side := d.side(td)
		id, ok := d.ch.ops[0].op.(Idler)
		if !ok {
			return "", fmt.Errorf("%s is no Idler", d.ch.ops[0].name)
		}
		fw, err := id.SideIdle(side, !td.HasArg("off"), d.ch.link(d, 0))
		if err != nil {
			return "", err
		}
		if fw, err = d.ch.watermarkFrom(d, 1, fw); err != nil {
			return "", err
		}
		d.forwarded(fw)
	case "barrier":
		var id uint64
		if td.HasArg("id") {
			td.ScanArgs(d.t, "id", &id)
		}
		if _, ok := d.at[id]; ok && id != 0 {
			return "", fmt.Errorf("checkpoint id %d used again", id)
		}
		d.epoch++
		recs, err := d.ch.barrier(d, Barrier{Epoch: d.epoch, CheckpointID: id}, td.HasArg("full"))
		if err != nil {
			return "", err
		}
		d.out = append(d.out, recs...)
		if id != 0 {
			if d.at == nil {
				d.at = map[uint64]scriptPos{}
			}
			d.at[id] = scriptPos{wm: d.wm, off: d.off, fw: d.fw}
		}
	case "restore":
		var id uint64
		td.ScanArgs(d.t, "id", &id)
		ch, err := d.build()
		if err != nil {
			return "", err
		}
		if err := ch.restore(d.ch, id); err != nil {
			return "", err
		}
		d.ch, d.late = ch, 0
		pos, ok := d.at[id]
		if !ok {
			return "", fmt.Errorf("restore: no checkpoint %d", id)
		}
		d.wm, d.off, d.fw = pos.wm, pos.off, pos.fw
		d.out = append(d.out, fmt.Sprintf("restored at checkpoint %d", id))
	case "state":
		for _, o := range d.ch.all {
			if s, ok := o.op.(Stateful); ok {
				d.out = append(d.out, fmt.Sprintf("%s: %d rows", o.name, s.StateRows()))
			}
		}
	default:
		return "", fmt.Errorf("unknown command %q", td.Cmd)
	}
	if d.ch != nil && d.ch.c.LateRows != d.late {
		d.out = append(d.out, fmt.Sprintf("late rows: %d", d.ch.c.LateRows-d.late))
		d.late = d.ch.c.LateRows
	}
	if len(d.out) == 0 {
		return "", nil
	}
	return strings.Join(d.out, "\n") + "\n", nil
}

func (d *scriptDriver) side(td *datadriven.TestData) int {
	side := 0
	if td.HasArg("side") {
		td.ScanArgs(d.t, "side", &side)
	}
	if side < 0 || side >= d.sides {
		td.Fatalf(d.t, "side %d: the vertex has %d inputs", side, d.sides)
	}
	return side
}

func (d *scriptDriver) forwarded(fw int64) {
	if fw != d.fw {
		d.out = append(d.out, "wm -> "+fmtScriptTime(fw))
		d.fw = fw
	}
}

// plan plans the script's SELECT and builds the chain of its vertex.
func (d *scriptDriver) plan(td *datadriven.TestData) (string, error) {
	stmts, err := parser.Parse(td.Input)
	if err != nil {
		return "", err
	}
	cat := scriptCatalog{}
	var sel *parser.Select
	for _, st := range stmts {
		switch s := st.Stmt.(type) {
		case *parser.CreateTable:
			def, err := planner.Table(s, st.Text)
			if err != nil {
				return "", err
			}
			def.ID = uint64(len(cat) + 1)
			cat[def.Name] = def
		case *parser.Select:
			sel = s
		default:
			return "", fmt.Errorf("plan: a %T", s)
		}
	}
	if sel == nil {
		return "", fmt.Errorf("plan: no SELECT")
	}
	g, err := planner.Query(sel, cat, plan.Options{Parallelism: 1}, "q", plan.SinkResults)
	if err != nil {
		return "", err
	}
	d.g = g
	d.vertex = len(g.Vertices) - 1
	if td.HasArg("vertex") {
		td.ScanArgs(d.t, "vertex", &d.vertex)
	}
	v := g.Vertices[d.vertex]
	d.sides = len(v.Inputs)
	for i, e := range v.Inputs {
		from := g.Vertices[e.From]
		switch {
		case e.Partition == plan.Hash:
			d.keys[i] = e.KeyCols
		case e.Kind == plan.Upsert:
			d.keys[i] = e.UpsertKey // the key the producer set
		}
		d.schema[i] = opOut(from.Ops[len(from.Ops)-1])
		d.upsert[i] = e.Kind == plan.Upsert
		if _, src := from.Ops[0].(*plan.Source); e.Kind == plan.Upsert && !src {
			d.ids[i] = e.UpsertKey
		}
		if src, ok := from.Ops[0].(*plan.Source); ok {
			d.schema[i], d.upsert[i] = src.Schema, src.Upsert
		}
		d.wm[i] = window.NoWatermark
	}
	if src, ok := v.Ops[0].(*plan.Source); ok {
		// A source vertex: rows come in the table's columns.
		d.sides, d.schema[0], d.upsert[0], d.wm[0] = 1, src.Schema, src.Upsert, window.NoWatermark
	}
	d.fw = window.NoWatermark
	if d.ch, err = d.build(); err != nil {
		return "", err
	}
	var out strings.Builder
	for _, o := range d.ch.all {
		if o.side >= 0 && d.sides > 1 {
			fmt.Fprintf(&out, "side %d: ", o.side)
		}
		fmt.Fprintln(&out, o.spec.Explain())
	}
	return out.String(), nil
}

// opOut is the schema of what a plan operator emits.
func opOut(o plan.Op) plan.Schema {
	switch o := o.(type) {
	case *plan.Source:
		return o.Schema
	case *plan.Calc:
		return o.Out
	case *plan.Aggregate:
		return o.Out
	case *plan.Over:
		return o.Out
	}
	panic(fmt.Sprintf("the rows out of a %s: give the plan vertex=N of its vertex", o.OpName()))
}

// build makes a new chain of the planned vertex.
func (d *scriptDriver) build() (*scriptChain, error) {
	ch := &scriptChain{}
	add := func(side int, spec plan.Op) (*scriptOp, error) {
		o, err := Build(spec, &ch.env, &ch.c)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", spec.OpName(), err)
		}
		so := &scriptOp{name: spec.OpName(), op: o, side: side, spec: spec}
		ch.all = append(ch.all, so)
		return so, nil
	}
	v := d.g.Vertices[d.vertex]
	for i, e := range v.Inputs {
		from := d.g.Vertices[e.From]
		if _, ok := from.Ops[0].(*plan.Source); !ok {
			continue
		}
		for _, spec := range from.Ops[1:] {
			o, err := add(i, spec)
			if err != nil {
				return nil, err
			}
			ch.pre[i] = append(ch.pre[i], o)
		}
	}
	for _, spec := range v.Ops {
		switch spec.(type) {
		case *plan.Source, *plan.Sink:
			continue
		}
		o, err := add(-1, spec)
		if err != nil {
			return nil, err
		}
		ch.ops = append(ch.ops, o)
	}
	if d.sides > 1 {
		two, ok := ch.ops[0].op.(TwoInput)
		if !ok {
			return nil, fmt.Errorf("%s has two inputs and is no TwoInput", ch.ops[0].name)
		}
		ch.two = two
	}
	ch.logs = make([][]scriptLogEntry, len(ch.all))
	return ch, nil
}

// link is what operator i of the vertex emits to: the next operator, or
// the script's output.
func (ch *scriptChain) link(d *scriptDriver, i int) Emitter {
	if i+1 < len(ch.ops) {
		next := ch.ops[i+1].op
		return emitFunc(func(b *Batch) error { return next.Process(b, ch.link(d, i+1)) })
	}
	return emitFunc(func(b *Batch) error {
		for j, r := range b.Rows {
			line := fmtScriptRow(b.Meta[j].Op, b.Meta[j], r)
			if d.showKeys && r != nil {
				line += "  key " + fmtScriptBytes(KeyBytes(b.Meta[j].Key))
			}
			d.out = append(d.out, line)
		}
		return nil
	})
}

// preLink is what pre-exchange operator i of a side emits to: the next
// one, or the exchange (the group key encoded into RowMeta.Key) and the
// vertex.
func (ch *scriptChain) preLink(d *scriptDriver, side, i int) Emitter {
	if i+1 < len(ch.pre[side]) {
		next := ch.pre[side][i+1].op
		return emitFunc(func(b *Batch) error { return next.Process(b, ch.preLink(d, side, i+1)) })
	}
	return emitFunc(func(b *Batch) error {
		for j, r := range b.Rows {
			if ids := d.ids[side]; ids != nil {
				// An updating producer's rows are identified by their key.
				b.Meta[j].ID = string(value.EncodeKey(nil, r, ids))
			}
			if keys := d.keys[side]; keys != nil {
				b.Meta[j].Key = string(value.EncodeKey(nil, r, keys))
			}
		}
		if ch.two != nil {
			return ch.two.ProcessSide(side, b, ch.link(d, 0))
		}
		return ch.ops[0].op.Process(b, ch.link(d, 0))
	})
}

func (ch *scriptChain) process(d *scriptDriver, side int, b *Batch) error {
	if len(ch.pre[side]) > 0 {
		return ch.pre[side][0].op.Process(b, ch.preLink(d, side, 0))
	}
	return ch.preLink(d, side, -1).Emit(b)
}

// watermark advances one side's watermark through the chain and returns
// what the chain forwards.
func (ch *scriptChain) watermark(d *scriptDriver, side int, wm int64) (int64, error) {
	var err error
	for i, o := range ch.pre[side] {
		if wm, err = o.op.Watermark(wm, ch.preLink(d, side, i)); err != nil {
			return 0, err
		}
	}
	if ch.two != nil {
		if wm, err = ch.two.WatermarkSide(side, wm, ch.link(d, 0)); err != nil {
			return 0, err
		}
	} else if wm, err = ch.ops[0].op.Watermark(wm, ch.link(d, 0)); err != nil {
		return 0, err
	}
	return ch.watermarkFrom(d, 1, wm)
}

func (ch *scriptChain) watermarkFrom(d *scriptDriver, from int, wm int64) (int64, error) {
	for i := from; i < len(ch.ops); i++ {
		var err error
		if wm, err = ch.ops[i].op.Watermark(wm, ch.link(d, i)); err != nil {
			return 0, err
		}
	}
	return wm, nil
}

// barrier runs a barrier through the chain and, at a checkpoint, logs
// and returns each operator's records.
func (ch *scriptChain) barrier(d *scriptDriver, b Barrier, full bool) ([]string, error) {
	for side := range ch.pre {
		for i, o := range ch.pre[side] {
			if err := o.op.Barrier(b, ch.preLink(d, side, i)); err != nil {
				return nil, err
			}
		}
	}
	for i, o := range ch.ops {
		if err := o.op.Barrier(b, ch.link(d, i)); err != nil {
			return nil, err
		}
	}
	if b.CheckpointID == 0 {
		return nil, nil
	}
	base := full || !ch.based
	ch.based = true
	var out []string
	for i, o := range ch.all {
		w := NewLogWriter(base, nil)
		if err := o.op.Snapshot(&w); err != nil {
			return nil, fmt.Errorf("%s: snapshot: %w", o.name, err)
		}
		if _, ok := o.op.(Stateful); w.Len() == 0 && (!base || !ok) {
			continue
		}
		blocks := w.Close()
		ch.logs[i] = append(ch.logs[i], scriptLogEntry{ckpt: b.CheckpointID, base: base, blocks: blocks})
		kind := "delta"
		if base {
			kind = "base"
		}
		type rec struct {
			put  bool
			k, v string
		}
		var recs []rec
		for _, blk := range blocks {
			err := LogRecords(blk, func(put bool, k, v []byte) error {
				recs = append(recs, rec{put, fmtScriptBytes(k), hex.EncodeToString(v)})
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		slices.SortStableFunc(recs, func(a, b rec) int { return strings.Compare(a.k, b.k) })
		out = append(out, fmt.Sprintf("%s %s: %d records", o.name, kind, len(recs)))
		for _, r := range recs {
			if r.put {
				out = append(out, fmt.Sprintf("  put %s = %s", r.k, r.v))
			} else {
				out = append(out, fmt.Sprintf("  delete %s", r.k))
			}
		}
	}
	return out, nil
}

// restore restores ch's operators from old's logs as of checkpoint at, the
// way a task reads its state log: the last base at or before at, then the
// deltas after it, in order.
func (ch *scriptChain) restore(old *scriptChain, at uint64) error {
	for i, o := range ch.all {
		var log []scriptLogEntry
		for _, e := range old.logs[i] {
			if e.ckpt <= at {
				log = append(log, e)
			}
		}
		from := -1
		for j, e := range log {
			if e.base {
				from = j
			}
		}
		kv := map[string][]byte{}
		if from >= 0 {
			for _, e := range log[from:] {
				for _, blk := range e.blocks {
					err := LogRecords(blk, func(put bool, k, v []byte) error {
						if put {
							kv[string(k)] = v
						} else {
							delete(kv, string(k))
						}
						return nil
					})
					if err != nil {
						return err
					}
				}
			}
			log = log[from:]
		}
		ch.logs[i] = log
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if err := o.op.Restore(scriptReader{keys: keys, kv: kv}); err != nil {
			return fmt.Errorf("%s: restore at %d: %w", o.name, at, err)
		}
	}
	return nil
}

// scriptReader reads a restored operator's records in key order; the
// chain owns every key (parallelism 1).
type scriptReader struct {
	keys []string
	kv   map[string][]byte
}

func (r scriptReader) Scan(fn func(k, v []byte) error) error {
	for _, k := range r.keys {
		if err := fn([]byte(k), r.kv[k]); err != nil {
			return err
		}
	}
	return nil
}

func (scriptReader) Owns(string) bool { return true }

// parseScriptRow parses a row literal in the columns of s.
func parseScriptRow(line string, s plan.Schema) (plan.Row, error) {
	var fields []string
	var cur strings.Builder
	quoted := false
	for _, c := range line {
		switch {
		case c == '\'':
			quoted = !quoted
			cur.WriteRune(c)
		case c == ',' && !quoted:
			fields = append(fields, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(c)
		}
	}
	fields = append(fields, cur.String())
	if len(fields) != len(s) {
		return nil, fmt.Errorf("row %q: %d values for %d columns", line, len(fields), len(s))
	}
	r := make(plan.Row, len(s))
	for i, f := range fields {
		f = strings.TrimSpace(f)
		switch {
		case strings.EqualFold(f, "null"):
			r[i] = plan.Null
			continue
		case s[i].Type == plan.TypeBoolean && (strings.EqualFold(f, "true") || strings.EqualFold(f, "false")):
			r[i] = plan.Bool(strings.EqualFold(f, "true"))
		case strings.HasPrefix(f, "'") && strings.HasSuffix(f, "'") && len(f) >= 2:
			r[i] = funcs.Cast(plan.Str(f[1:len(f)-1]), s[i].Type)
		case s[i].Type == plan.TypeTimestamp:
			ms, err := parseScriptTime(f)
			if err != nil {
				return nil, fmt.Errorf("row %q: %w", line, err)
			}
			r[i] = plan.Time(ms)
		default:
			r[i] = funcs.Cast(plan.Str(f), s[i].Type)
		}
		if r[i].IsNull() {
			return nil, fmt.Errorf("row %q: %q is no %s", line, f, s[i].Type)
		}
	}
	return r, nil
}

// parseScriptTime reads a time: milliseconds, an offset from the epoch
// ("12s"), or a timestamp.
func parseScriptTime(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d.Milliseconds(), nil
	}
	if ms, ok := value.ParseTime(s); ok {
		return ms, nil
	}
	return 0, fmt.Errorf("%q is no time", s)
}

func fmtScriptTime(ms int64) string {
	switch {
	case ms == window.NoWatermark:
		return "-inf"
	case ms > -10*86400000 && ms < 10*86400000:
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return plan.FormatTime(ms)
}

// fmtScriptBytes renders an encoded key (a state record's, a delete's):
// as the values it encodes (value.AppendValue) when it is nothing but
// encoded values, else in hex. Values are in hex (their encodings are the
// operators').
func fmtScriptBytes(b []byte) string {
	var vs []string
	for rest := b; len(rest) > 0; {
		v, next, err := value.DecodeValue(rest)
		if err != nil {
			return hex.EncodeToString(b)
		}
		vs = append(vs, fmtScriptValue(v))
		rest = next
	}
	return "(" + strings.Join(vs, ", ") + ")"
}

func fmtScriptValue(v plan.Value) string {
	switch v.K {
	case plan.TypeTimestamp:
		return fmtScriptTime(v.I)
	case plan.TypeVarchar:
		for _, c := range []byte(v.S) {
			if c < ' ' || c > '~' {
				return "x'" + hex.EncodeToString([]byte(v.S)) + "'" // an id: encoded values
			}
		}
		return "'" + v.S + "'"
	}
	return v.String()
}

// fmtScriptRow renders an emitted row; a delete without a row by its key.
func fmtScriptRow(op Op, m RowMeta, r plan.Row) string {
	var b strings.Builder
	b.WriteString([...]string{"insert", "upsert", "delete", "before"}[op])
	b.WriteString(":")
	if r == nil {
		b.WriteString(" key " + fmtScriptBytes(KeyBytes(m.Key)))
	}
	for i, v := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(fmtScriptValue(v))
	}
	return b.String()
}
