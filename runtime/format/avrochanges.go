package format

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// The Avro change formats (docs/connectors.md, "Upsert and Debezium
// sources"): upsert_avro and debezium_avro, keys and values in the
// Confluent wire format, their schemas from the registry (the key's under
// <topic>-key, the value's under <topic>-value or "subject"). A change
// format is <envelope>_<payload> (value.ChangeFormat): the envelope rules
// are value/cdc.go's for JSON, mirrored here; a Protobuf payload would be
// a protobufchanges.go beside this file with the same shape (a plan per
// key and value schema id, NewChangeDecoder choosing it by payload).

// ChangeDecoder decodes the records of a PRIMARY KEY Kafka source into
// its table's log rows: the columns, then the delete flag (a BOOLEAN). A
// nil row with a nil error is a record that changes nothing.
type ChangeDecoder interface {
	Decode(key, val []byte, ts int64) (plan.Row, error)
}

// UsesChanges reports whether table attributes attrs name a change format
// this package decodes (upsert_avro, debezium_avro).
func UsesChanges(attrs map[string]string) bool {
	_, payload, ok := value.ChangeFormat(attrs["format"])
	return ok && payload == "avro"
}

// KeySubject is the registry subject of a change source's record keys:
// <topic>-key (the topic name strategy).
func (t Table) KeySubject() string { return t.Attrs["topic"] + "-key" }

// avroChanges reads the records of an upsert_avro or debezium_avro source.
type avroChanges struct {
	t        Table
	debezium bool
	// vt is t as a value (after, or an upsert's value) is read: the
	// envelope's columns not read, the key and (when the key or the
	// envelope holds it) event-time columns not required of it. loose is
	// t with every column nullable, no event time: keys and before.
	vt, loose     Table
	key           []int  // the PRIMARY KEY's columns
	notRead       []bool // vt.isOwn, per column (not looked up per record)
	tsCol, srcCol int    // _ts_ms, _source_ts_ms (-1: not declared)
	reg           *Registry
	r             *avro.Reader
	keys          map[int]*readPlan // by key schema id
	values        map[int]*readPlan // upsert_avro, by value schema id
	envs          map[int]*envPlan  // debezium_avro, by value schema id
	keyRow        plan.Row          // scratch: a key's columns
	before        plan.Row          // scratch: before's key and event time
}

// NewChangeDecoder is the decoder of t, a PRIMARY KEY source of format
// upsert_avro or debezium_avro (no I/O).
func NewChangeDecoder(t Table) (ChangeDecoder, error) {
	c, err := newAvroChanges(t)
	if err != nil {
		return nil, err
	}
	if c.reg, err = NewRegistry(t.Attrs["schema_registry"]); err != nil {
		return nil, err
	}
	return c, nil
}

func newAvroChanges(t Table) (*avroChanges, error) {
	env, payload, ok := value.ChangeFormat(t.Attrs["format"])
	if !ok || payload != "avro" {
		return nil, fmt.Errorf("table %s: format %q is not upsert_avro or debezium_avro", t.Name, t.Attrs["format"])
	}
	if len(t.Key) == 0 {
		return nil, fmt.Errorf("table %s: a %s source needs a PRIMARY KEY", t.Name, t.Attrs["format"])
	}
	c := &avroChanges{t: t, debezium: env == value.EnvelopeDebezium, tsCol: -1, srcCol: -1, r: avro.NewReader(nil, 0),
		keys: map[int]*readPlan{}, values: map[int]*readPlan{}, envs: map[int]*envPlan{}}
	for _, k := range t.Key {
		i := t.Columns.Index(k)
		if i < 0 {
			return nil, fmt.Errorf("PRIMARY KEY column %s is not a column of %s", k, t.Name)
		}
		c.key = append(c.key, i)
	}
	c.vt, c.loose = t, t
	c.vt.Columns, c.loose.Columns = slices.Clone(t.Columns), slices.Clone(t.Columns)
	c.vt.own = make([]bool, len(t.Columns))
	c.loose.EventTime = -1
	for i, col := range t.Columns {
		c.loose.Columns[i].NotNull = false
		if _, ok := value.DebeziumMetaColumns[strings.ToLower(col.Name)]; ok && c.debezium {
			c.vt.own[i] = true
			if strings.ToLower(col.Name) == "_ts_ms" {
				c.tsCol = i
			} else {
				c.srcCol = i
			}
		}
		if c.isKey(i) {
			c.vt.Columns[i].NotNull = false // the record key has it
		}
	}
	c.loose.own = c.vt.own
	if et := t.EventTime; et >= 0 && (c.vt.isOwn(et) || c.isKey(et)) {
		c.vt.EventTime = -1
	}
	c.keyRow, c.before = make(plan.Row, len(t.Columns)), make(plan.Row, len(t.Columns))
	c.notRead = make([]bool, len(t.Columns))
	for i := range t.Columns {
		c.notRead[i] = c.vt.isOwn(i)
	}
	return c, nil
}

func (c *avroChanges) isKey(i int) bool { return slices.Contains(c.key, i) }

func (c *avroChanges) keyNames() string { return strings.Join(c.t.Key, ", ") }

// keyPlan reads a record key of schema ks (named where) into the PRIMARY
// KEY's columns: a record whose fields are the key's columns (each a
// PRIMARY KEY column; every key column there), or, for a one-column key,
// the value itself (a long, a string...).
func (c *avroChanges) keyPlan(ks avro.Schema, where string) *readPlan {
	rec, ok := ks.(*avro.RecordSchema)
	if !ok {
		if len(c.key) != 1 {
			return &readPlan{err: fmt.Errorf("%s: the key schema is %s, not a record of the PRIMARY KEY columns (%s)", where, avroType(ks), c.keyNames())}
		}
		// One value: a record of one field, as a plan reads it.
		col := c.t.Columns[c.key[0]]
		p := &readPlan{}
		st, err := fieldStep(ks, col.Type, c.key[0])
		if err != nil {
			return &readPlan{err: fmt.Errorf("%s: the key is Avro %s, which does not fit PRIMARY KEY column %s %s%s", where, avroType(ks), col.Name, col.Type, err)}
		}
		p.steps = append(p.steps, st)
		return p
	}
	p := &readPlan{}
	has := map[int]bool{}
	for _, f := range rec.Fields() {
		i := c.t.Columns.Index(f.Name())
		if i < 0 || !c.isKey(i) || has[i] {
			return &readPlan{err: fmt.Errorf("%s: key field %s is not a PRIMARY KEY column (%s)", where, f.Name(), c.keyNames())}
		}
		col := c.t.Columns[i]
		st, err := fieldStep(f.Type(), col.Type, i)
		if err != nil {
			return &readPlan{err: fmt.Errorf("%s: key field %s is Avro %s, which does not fit column %s %s%s", where, f.Name(), avroType(f.Type()), col.Name, col.Type, err)}
		}
		has[i] = true
		p.steps = append(p.steps, st)
	}
	for _, i := range c.key {
		if !has[i] {
			return &readPlan{err: fmt.Errorf("%s: the key has no field for PRIMARY KEY column %s (fields: %s)", where, c.t.Columns[i].Name, fieldList(rec))}
		}
	}
	return p
}

// fieldStep is the step reading a value of schema s into column col of
// type t; the error completes a message with what does not fit.
func fieldStep(s avro.Schema, t plan.Type, col int) (step, error) {
	st := step{col: col, sch: s}
	if u, ok := s.(*avro.UnionSchema); ok {
		if !u.Nullable() || len(u.Types()) != 2 {
			return st, fmt.Errorf(": unions must be [\"null\", T]")
		}
		ni, vi := u.Indices()
		st.union, st.nullIdx, s = true, int64(ni), u.Types()[vi]
	}
	k, syms, fits := mapType(s, t)
	if !fits {
		return st, fmt.Errorf(" (it takes %s)", wantFor(t))
	}
	st.kind, st.symbols = k, syms
	return st, nil
}

// readKey decodes record key key into c.keyRow's key columns.
func (c *avroChanges) readKey(key []byte) error {
	id, payload, err := SplitHeader(key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	p, err := planByID(c.reg, c.keys, id, func(ks avro.Schema) *readPlan {
		return c.keyPlan(ks, fmt.Sprintf("key schema id %d", id))
	}, errPlan)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	if p.err != nil {
		return fmt.Errorf("record key: %w", p.err)
	}
	clear(c.keyRow)
	r := c.r.Reset(payload)
	r.Error = nil
	budget := maxSkipItems
	if err := readFields(r, p, c.loose, c.keyRow, &budget); err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	if err := readEnd(r); err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	for _, i := range c.key {
		if c.keyRow[i].IsNull() {
			return fmt.Errorf("record key has no value for PRIMARY KEY column %s", c.t.Columns[i].Name)
		}
	}
	return nil
}

// putKey puts the key read (c.keyRow) into row; check: row holds a
// value's columns, whose key columns must equal the key's (a NULL takes
// the key's).
func (c *avroChanges) putKey(row plan.Row, check bool) error {
	for _, i := range c.key {
		if check && !row[i].IsNull() && row[i] != c.keyRow[i] {
			return fmt.Errorf("column %s: the record key has %s, the value %s (they must be equal)", c.t.Columns[i].Name, c.keyRow[i], row[i])
		}
		row[i] = c.keyRow[i]
	}
	return nil
}

func (c *avroChanges) newRow() plan.Row {
	return make(plan.Row, len(c.t.Columns), len(c.t.Columns)+1)
}

func (c *avroChanges) Decode(key, val []byte, ts int64) (plan.Row, error) {
	if c.debezium {
		return c.debeziumRecord(key, val)
	}
	return c.upsert(key, val, ts)
}

// upsert decodes a record of an upsert topic: the key its PRIMARY KEY,
// the value the row, a tombstone a delete.
func (c *avroChanges) upsert(key, val []byte, ts int64) (plan.Row, error) {
	if key == nil {
		return nil, fmt.Errorf("a record without a key: an upsert_avro record's key is its PRIMARY KEY (%s)", c.keyNames())
	}
	if err := c.readKey(key); err != nil {
		return nil, err
	}
	row := c.newRow()
	if val == nil {
		c.putKey(row, false)
		if et := c.t.EventTime; et >= 0 && row[et].IsNull() {
			// A delete's time, for the AS OF versions: the record's.
			if err := plan.CheckTime(ts); err != nil {
				return nil, fmt.Errorf("column %s, the tombstone's timestamp: %w", c.t.Columns[et].Name, err)
			}
			row[et] = plan.Time(ts)
		}
		return append(row, plan.Bool(true)), nil
	}
	id, payload, err := SplitHeader(val)
	if err != nil {
		return nil, err
	}
	p, err := planByID(c.reg, c.values, id, func(ws avro.Schema) *readPlan {
		return newPlan(c.vt, ws, fmt.Sprintf("schema id %d", id))
	}, errPlan)
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	r := c.r.Reset(payload)
	r.Error = nil
	budget := maxSkipItems
	if err := readFields(r, p, c.vt, row, &budget); err != nil {
		return nil, err
	}
	if err := readEnd(r); err != nil {
		return nil, err
	}
	if err := c.putKey(row, true); err != nil {
		return nil, err
	}
	if err := c.required(row); err != nil {
		return nil, err
	}
	return append(row, plan.Bool(false)), nil
}

// required checks the NOT NULL and event-time columns of an upsert.
func (c *avroChanges) required(row plan.Row) error {
	for i, col := range c.t.Columns {
		if c.notRead[i] || !row[i].IsNull() {
			continue
		}
		switch {
		case c.isKey(i):
			return fmt.Errorf("column %s: missing value for a PRIMARY KEY column", col.Name)
		case i == c.t.EventTime:
			return fmt.Errorf("column %s: missing value for the event-time column", col.Name)
		case col.NotNull:
			return fmt.Errorf("column %s: missing value for NOT NULL column", col.Name)
		}
	}
	return nil
}

// What an envelope field is.
const (
	eSkip = iota
	eBefore
	eAfter
	eSource
	eOp
	eTsMs
	eSrcTsMs // source.ts_ms
)

// envField reads one field of a Debezium envelope (or of its source).
type envField struct {
	what    uint8
	sch     avro.Schema // for skipping
	union   bool        // ["null", T]
	nullIdx int64
	source  []envField // eSource: its fields
}

// envPlan reads the Debezium envelopes of one value schema.
type envPlan struct {
	fields []envField
	// after reads after's Value record into the table (vt); before only
	// its key and event-time columns (loose), for a delete.
	after, before *readPlan
	err           error
}

// nullable is s without a ["null", T] union around it.
func nullable(s avro.Schema) (avro.Schema, bool, int64, bool) {
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		return s, false, 0, true
	}
	if !u.Nullable() || len(u.Types()) != 2 {
		return s, false, 0, false
	}
	ni, vi := u.Indices()
	return u.Types()[vi], true, int64(ni), true
}

// envelopePlan resolves a Debezium value schema ws (named where) against
// the table: after (and before) through a plan of its Value record.
func (c *avroChanges) envelopePlan(ws avro.Schema, where string) *envPlan {
	p := &envPlan{}
	rec, ok := ws.(*avro.RecordSchema)
	if !ok {
		p.err = fmt.Errorf("%s: the schema is %s, not a Debezium envelope (a record of before, after, source, op, ts_ms)", where, avroType(ws))
		return p
	}
	valueRecord := func(f *avro.Field) (*avro.RecordSchema, envField, error) {
		s, u, ni, ok := nullable(f.Type())
		if r, isRef := s.(*avro.RefSchema); isRef {
			s = r.Schema()
		}
		vr, isRec := s.(*avro.RecordSchema)
		if !ok || !isRec {
			return nil, envField{}, fmt.Errorf("%s: envelope field %s is Avro %s, not a record of the row's fields (or [\"null\", record])", where, f.Name(), avroType(f.Type()))
		}
		return vr, envField{sch: f.Type(), union: u, nullIdx: ni}, nil
	}
	var hasOp bool
	for _, f := range rec.Fields() {
		ef := envField{what: eSkip, sch: f.Type()}
		switch f.Name() {
		case "after", "before":
			vr, vf, err := valueRecord(f)
			if err != nil {
				p.err = err
				return p
			}
			ef = vf
			if f.Name() == "after" {
				ef.what = eAfter
				if p.after = newPlan(c.vt, vr, where+", after"); p.after.err != nil {
					p.err = p.after.err
					return p
				}
			} else {
				ef.what = eBefore
				bp := newPlan(c.loose, vr, where+", before")
				if bp.err == nil {
					for k := range bp.steps {
						if st := &bp.steps[k]; st.col >= 0 && !c.isKey(st.col) && st.col != c.t.EventTime {
							st.col = -1 // only the key and the event time
						}
					}
					p.before = bp
				} else {
					ef.what = eSkip // never needed: a delete's key is the record's
				}
			}
		case "op":
			s, u, ni, ok := nullable(f.Type())
			if !ok || s.Type() != avro.String {
				p.err = fmt.Errorf("%s: envelope field op is Avro %s, not a string", where, avroType(f.Type()))
				return p
			}
			ef, hasOp = envField{what: eOp, sch: f.Type(), union: u, nullIdx: ni}, true
		case "ts_ms":
			if s, u, ni, ok := nullable(f.Type()); ok && s.Type() == avro.Long {
				ef = envField{what: eTsMs, sch: f.Type(), union: u, nullIdx: ni}
			}
		case "source":
			s, u, ni, ok := nullable(f.Type())
			if r, isRef := s.(*avro.RefSchema); isRef {
				s = r.Schema()
			}
			if sr, isRec := s.(*avro.RecordSchema); ok && isRec {
				ef = envField{what: eSource, sch: f.Type(), union: u, nullIdx: ni}
				for _, g := range sr.Fields() {
					gf := envField{what: eSkip, sch: g.Type()}
					if s, u, ni, ok := nullable(g.Type()); g.Name() == "ts_ms" && ok && s.Type() == avro.Long {
						gf = envField{what: eSrcTsMs, sch: g.Type(), union: u, nullIdx: ni}
					}
					ef.source = append(ef.source, gf)
				}
			}
		}
		p.fields = append(p.fields, ef)
	}
	switch {
	case p.after == nil:
		p.err = fmt.Errorf("%s: not a Debezium envelope: no field after (fields: %s)", where, fieldList(rec))
	case !hasOp:
		p.err = fmt.Errorf("%s: not a Debezium envelope: no field op (fields: %s)", where, fieldList(rec))
	}
	return p
}

// envelope is what one Debezium event says besides its rows.
type envelope struct {
	op                  string
	hasAfter, hasBefore bool
	tsMs, srcTsMs       int64
	hasTsMs, hasSrcTsMs bool
}

// readOptLong reads a long, or a ["null", long]'s null (false).
func readOptLong(r *avro.Reader, f *envField) (int64, bool) {
	if f.union {
		b := r.ReadLong()
		if r.Error != nil || b == f.nullIdx {
			return 0, false
		}
	}
	n := r.ReadLong()
	return n, r.Error == nil
}

// branch reads a union's branch: false for its null.
func branch(r *avro.Reader, f *envField) bool {
	if !f.union {
		return true
	}
	b := r.ReadLong()
	if r.Error == nil && b != f.nullIdx && b != 1-f.nullIdx {
		r.ReportError("union", fmt.Sprintf("branch %d of a 2-branch union", b))
	}
	return r.Error == nil && b != f.nullIdx
}

// debeziumRecord decodes a Debezium change event in Avro.
func (c *avroChanges) debeziumRecord(key, val []byte) (plan.Row, error) {
	if val == nil {
		return nil, nil // the tombstone after a delete (for compaction)
	}
	hasKey := key != nil
	if hasKey {
		if err := c.readKey(key); err != nil {
			return nil, err
		}
	}
	id, payload, err := SplitHeader(val)
	if err != nil {
		return nil, err
	}
	p, err := planByID(c.reg, c.envs, id, func(ws avro.Schema) *envPlan {
		return c.envelopePlan(ws, fmt.Sprintf("schema id %d", id))
	}, func(err error) *envPlan { return &envPlan{err: err} })
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	row := c.newRow()
	var e envelope
	r := c.r.Reset(payload)
	r.Error = nil
	budget := maxSkipItems
	for k := range p.fields {
		f := &p.fields[k]
		switch f.what {
		case eSkip:
			skip(r, f.sch, 0, &budget)
		case eAfter:
			if e.hasAfter = branch(r, f); e.hasAfter {
				if err := readFields(r, p.after, c.vt, row, &budget); err != nil {
					return nil, fmt.Errorf("after: %w", err)
				}
			}
		case eBefore:
			clear(c.before)
			if e.hasBefore = branch(r, f); e.hasBefore {
				if err := readFields(r, p.before, c.loose, c.before, &budget); err != nil {
					return nil, fmt.Errorf("before: %w", err)
				}
			}
		case eOp:
			if branch(r, f) {
				e.op = r.ReadString()
			}
		case eTsMs:
			e.tsMs, e.hasTsMs = readOptLong(r, f)
		case eSource:
			if !branch(r, f) {
				break
			}
			for j := range f.source {
				g := &f.source[j]
				if g.what == eSrcTsMs {
					e.srcTsMs, e.hasSrcTsMs = readOptLong(r, g)
				} else {
					skip(r, g.sch, 0, &budget)
				}
				if r.Error != nil {
					break
				}
			}
		}
		if r.Error != nil {
			return nil, fmt.Errorf("not a valid Avro record of its schema: %v", readErr(r.Error))
		}
	}
	if err := readEnd(r); err != nil {
		return nil, err
	}
	if c.tsCol >= 0 && e.hasTsMs {
		row[c.tsCol] = plan.Time(e.tsMs)
	}
	if c.srcCol >= 0 && e.hasSrcTsMs {
		row[c.srcCol] = plan.Time(e.srcTsMs)
	}
	switch e.op {
	case "":
		return nil, fmt.Errorf("a Debezium envelope without op")
	case "c", "r", "u":
		if !e.hasAfter {
			return nil, fmt.Errorf("a Debezium event of op %q without after", e.op)
		}
		if hasKey {
			if err := c.putKey(row, true); err != nil {
				return nil, err
			}
		}
		if err := c.required(row); err != nil {
			return nil, fmt.Errorf("after: %w", err)
		}
		if err := c.checkTimes(row); err != nil {
			return nil, err
		}
		return append(row, plan.Bool(false)), nil
	case "d":
		clear(row[:len(c.t.Columns)])
		if c.tsCol >= 0 && e.hasTsMs {
			row[c.tsCol] = plan.Time(e.tsMs)
		}
		if c.srcCol >= 0 && e.hasSrcTsMs {
			row[c.srcCol] = plan.Time(e.srcTsMs)
		}
		switch {
		case hasKey:
			c.putKey(row, false)
		case e.hasBefore && p.before != nil:
			for _, i := range c.key {
				if c.before[i].IsNull() {
					return nil, fmt.Errorf("a delete without a key: before has no value for PRIMARY KEY column %s", c.t.Columns[i].Name)
				}
				row[i] = c.before[i]
			}
		default:
			return nil, fmt.Errorf("a delete without a key: no record key and no before")
		}
		et := c.t.EventTime
		if et >= 0 && row[et].IsNull() && !c.vt.isOwn(et) && e.hasBefore {
			row[et] = c.before[et]
		}
		if et >= 0 && row[et].IsNull() {
			// before lacks it (PostgreSQL without REPLICA IDENTITY FULL):
			// the change's time in the source, else the connector's.
			switch {
			case e.hasSrcTsMs:
				row[et] = plan.Time(e.srcTsMs)
			case e.hasTsMs:
				row[et] = plan.Time(e.tsMs)
			default:
				return nil, fmt.Errorf("column %s: a delete without an event time (no %s in before, no source.ts_ms or ts_ms)", c.t.Columns[et].Name, c.t.Columns[et].Name)
			}
		}
		if err := c.checkTimes(row); err != nil {
			return nil, err
		}
		return append(row, plan.Bool(true)), nil
	}
	return nil, fmt.Errorf("a Debezium event of unknown op %q (c, r, u or d)", e.op)
}

// checkTimes checks the envelope's time columns are TIMESTAMPs in range
// (after's own are checked as they are read).
func (c *avroChanges) checkTimes(row plan.Row) error {
	for _, i := range []int{c.tsCol, c.srcCol, c.t.EventTime} {
		if i < 0 {
			continue
		}
		if row[i].IsNull() {
			if i == c.t.EventTime && !metaColumns[strings.ToLower(c.t.Columns[i].Name)] {
				return fmt.Errorf("column %s: missing value for the event-time column", c.t.Columns[i].Name)
			}
			continue // a Kafka metadata column: the reader fills it
		}
		if err := plan.CheckTime(row[i].I); err != nil {
			return fmt.Errorf("column %s: %w", c.t.Columns[i].Name, err)
		}
	}
	return nil
}

// checkChanges is Check of an upsert_avro or debezium_avro table: the
// latest value schema (its after record, for Debezium) and the latest key
// schema must fit the columns and the PRIMARY KEY.
func checkChanges(ctx context.Context, t Table) error {
	c, err := newAvroChanges(t)
	if err != nil {
		return err
	}
	reg, err := NewRegistry(t.Attrs["schema_registry"])
	if err != nil {
		return err
	}
	id, ws, err := reg.Latest(ctx, t.Subject())
	if err != nil {
		return err
	}
	where := fmt.Sprintf("subject %s (latest version, schema id %d)", t.Subject(), id)
	if c.debezium {
		if p := c.envelopePlan(ws, where); p.err != nil {
			return p.err
		}
	} else if p := newPlan(c.vt, ws, where); p.err != nil {
		return p.err
	}
	id, ks, err := reg.Latest(ctx, t.KeySubject())
	if err != nil {
		return err
	}
	if p := c.keyPlan(ks, fmt.Sprintf("key subject %s (latest version, schema id %d)", t.KeySubject(), id)); p.err != nil {
		return p.err
	}
	return nil
}
