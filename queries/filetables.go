package queries

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink/file"
	"github.com/streamsql/streamsql/value"
)

// File side inputs (ENGINE=file with a PRIMARY KEY, docs/connectors.md):
// the engine reads the file at CREATE TABLE and (unless it is "bounded":
// read once, its queries' reader ends at the log's end) again whenever it changes
// (polled: size and modification time, then a SHA-256 of the content),
// and logs each version in the table's ingest log as an HTTP table's
// rows would be: a version is the upserts of the rows that changed and
// the deletes of the keys that went. Queries read the log like an HTTP
// PRIMARY KEY table's, so a replay after a restart joins the versions it
// joined before, whatever the file holds by then.
//
// Crash safety: a new version is first recorded pending in the catalog
// (fileside/<id>/pending: its time, hash and rows), then appended to the
// log with the idempotency key of its hash, then made current
// (fileside/<id>). A start that finds a pending version appends it again
// (the log drops the repeated append by its key) and makes it current, so
// the log never holds half a version nor one twice.
//
// The event-time column of a side input (event_time), when the file does
// not give it, is the time of the version: 0001-01-01T00:00:00.000Z for
// the first (valid since always, so AS OF joins find it for any stream
// row), the wall clock at the reload for the later ones.

// DefaultFilePollInterval is how often side input files are looked at.
const DefaultFilePollInterval = time.Second

// maxSideFileBytes bounds a side input file: each version is held in
// memory and in the catalog.
const maxSideFileBytes = 64 << 20

const sideVersionPrefix = "fileside/"

// sideVersion is one version of a side input: its rows as read (the
// event-time column filled in), when it was read, and the file's hash.
type sideVersion struct {
	at   int64
	hash [32]byte
	rows []plan.Row
}

// sideSeen is what the poller last saw of a file (not persisted).
type sideSeen struct {
	size    int64
	mtime   time.Time
	hash    [32]byte
	errHash [32]byte // the content whose error was logged last
}

// sideFileError is a side input file that cannot be read as the table's
// rows: where (file:line[:column]) and why.
type sideFileError struct {
	path         string
	line, column int
	col          string
	msg          string
}

func (e *sideFileError) Error() string {
	where := e.path
	if e.line > 0 {
		where += ":" + strconv.Itoa(e.line)
		if e.column > 0 {
			where += ":" + strconv.Itoa(e.column)
		}
	}
	if e.col != "" {
		return fmt.Sprintf("%s: column %s: %s", where, e.col, e.msg)
	}
	return where + ": " + e.msg
}

// sidePath is where side input def's file is.
func (e *Engine) sidePath(def *plan.TableDef) (string, error) {
	return file.Resolve(def.Attrs["path"], FilesDir(e.cfg.DataDir))
}

// readSideFile reads def's file as a version at time at.
func (e *Engine) readSideFile(def *plan.TableDef, at int64) (*sideVersion, error) {
	path, err := e.sidePath(def)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("side input %s: %w", def.Name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSideFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("side input %s: %w", def.Name, err)
	}
	if len(b) > maxSideFileBytes {
		return nil, &sideFileError{path: path, msg: fmt.Sprintf("over the %d MiB limit of a side input file", maxSideFileBytes>>20)}
	}
	return parseSideFile(def, path, b, at)
}

// parseSideFile parses the content b of def's file (at path).
func parseSideFile(def *plan.TableDef, path string, b []byte, at int64) (*sideVersion, error) {
	v := &sideVersion{at: at, hash: sha256.Sum256(b)}
	var err error
	if def.Attrs["format"] == "csv" {
		v.rows, err = parseSideCSV(def, path, b)
	} else {
		v.rows, err = parseSideNDJSON(def, path, b)
	}
	if err != nil {
		return nil, err
	}
	return v, checkSideRows(def, path, v)
}

// parseSideCSV: a header line naming columns (any order, case-insensitive;
// a column it lacks is NULL), then a row per line; an empty field is NULL.
func parseSideCSV(def *plan.TableDef, path string, b []byte) ([]plan.Row, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, csvError(path, err)
	}
	idx := make([]int, len(head))
	seen := map[int]bool{}
	for i, h := range head {
		c := def.Columns.Index(strings.TrimSpace(h))
		line, column := r.FieldPos(i)
		if c < 0 {
			return nil, &sideFileError{path: path, line: line, column: column, msg: fmt.Sprintf("header names %q, not a column of %s (%s)", h, def.Name, columnNames(def.Columns))}
		}
		if seen[c] {
			return nil, &sideFileError{path: path, line: line, column: column, msg: fmt.Sprintf("header names column %s twice", def.Columns[c].Name)}
		}
		seen[c] = true
		idx[i] = c
	}
	var rows []plan.Row
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, csvError(path, err)
		}
		line, _ := r.FieldPos(0)
		row := make(plan.Row, len(def.Columns))
		for i, s := range rec {
			c := idx[i]
			if s == "" {
				continue
			}
			v, msg := parseSideValue(def.Columns[c].Type, s)
			if msg != "" {
				_, col := r.FieldPos(i)
				return nil, &sideFileError{path: path, line: line, column: col, col: def.Columns[c].Name, msg: msg}
			}
			row[c] = v
		}
		rows = append(rows, row)
	}
}

func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &sideFileError{path: path, line: pe.Line, column: pe.Column, msg: pe.Err.Error()}
	}
	return &sideFileError{path: path, msg: err.Error()}
}

// parseSideValue reads CSV text s as a value of type t ("": ok, else why not).
func parseSideValue(t plan.Type, s string) (plan.Value, string) {
	switch t {
	case plan.TypeVarchar:
		return plan.Str(s), ""
	case plan.TypeBigint:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return plan.Int(n), ""
		}
	case plan.TypeDouble:
		switch s {
		case plan.JSONNaN:
			return plan.Float(math.NaN()), ""
		case plan.JSONInf:
			return plan.Float(math.Inf(1)), ""
		case plan.JSONNegInf:
			return plan.Float(math.Inf(-1)), ""
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return plan.Float(f), ""
		}
	case plan.TypeTimestamp:
		if ms, ok := value.ParseTime(s); ok {
			return plan.Time(ms), ""
		}
	case plan.TypeBoolean:
		switch strings.ToLower(s) {
		case "true", "1":
			return plan.Bool(true), ""
		case "false", "0":
			return plan.Bool(false), ""
		}
	}
	return plan.Null, fmt.Sprintf("%q is not a %s", s, t)
}

// parseSideNDJSON: one JSON object per line, as HTTP ingest takes them
// (value.DecodeRows); the event-time column may be absent.
func parseSideNDJSON(def *plan.TableDef, path string, b []byte) ([]plan.Row, error) {
	d := *def
	d.EventTime = -1 // filled in with the version's time when absent
	var lines []int  // the line number of each object
	n := 1
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		end := len(b)
		if j >= 0 {
			end = i + j
		}
		if len(bytes.TrimSpace(b[i:end])) > 0 {
			lines = append(lines, n)
		}
		n++
		i = end + 1
	}
	rows, err := value.DecodeRows(&d, string(b))
	var re *value.RowError
	if errors.As(err, &re) {
		fe := &sideFileError{path: path, col: re.Column, msg: re.Msg}
		if re.Row >= 0 && re.Row < len(lines) {
			fe.line = lines[re.Row]
		}
		return nil, fe
	}
	if err != nil {
		return nil, &sideFileError{path: path, msg: err.Error()}
	}
	for i, r := range rows {
		if r[len(r)-1].True() {
			return nil, &sideFileError{path: path, line: lines[i], col: "_op", msg: "a side input file holds the table's rows; _op is not allowed"}
		}
		rows[i] = r[:len(def.Columns)]
	}
	return rows, nil
}

// checkSideRows fills in the event-time column and checks the rows: keys
// present and distinct, NOT NULL columns set.
func checkSideRows(def *plan.TableDef, path string, v *sideVersion) error {
	key := sideKeyColumns(def)
	lineOf := func(i int) int { return i + 1 + boolInt(def.Attrs["format"] == "csv") } // CSV: after the header
	seen := make(map[string]int, len(v.rows))
	var buf []byte
	for i, r := range v.rows {
		if def.EventTime >= 0 && r[def.EventTime].IsNull() {
			r[def.EventTime] = plan.Time(v.at)
		}
		for c, col := range def.Columns {
			if r[c].IsNull() && (col.NotNull || contains(key, c)) {
				return &sideFileError{path: path, line: lineOf(i), col: col.Name, msg: "missing value for a key or NOT NULL column"}
			}
		}
		buf = buf[:0]
		for _, c := range key {
			buf = value.AppendValue(buf, r[c])
		}
		if j, dup := seen[string(buf)]; dup {
			return &sideFileError{path: path, line: lineOf(i), msg: fmt.Sprintf("the key of line %d again (PRIMARY KEY %s)", lineOf(j), strings.Join(def.PrimaryKey, ", "))}
		}
		seen[string(buf)] = i
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func sideKeyColumns(def *plan.TableDef) []int {
	var key []int
	for _, k := range def.PrimaryKey {
		key = append(key, def.Columns.Index(k))
	}
	return key
}

func columnNames(s plan.Schema) string {
	ns := make([]string, len(s))
	for i, c := range s {
		ns[i] = c.Name
	}
	return strings.Join(ns, ", ")
}

// encodeVersion is a version as the catalog keeps it: its time, its hash,
// then each row (AppendRow) after its length.
func encodeVersion(v *sideVersion) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(v.at))
	b = append(b, v.hash[:]...)
	var row []byte
	for _, r := range v.rows {
		row = value.AppendRow(row[:0], r)
		b = binary.AppendUvarint(b, uint64(len(row)))
		b = append(b, row...)
	}
	return b
}

func decodeVersion(b []byte) (*sideVersion, error) {
	if len(b) < 40 {
		return nil, errors.New("side input version: too short")
	}
	v := &sideVersion{at: int64(binary.BigEndian.Uint64(b))}
	copy(v.hash[:], b[8:40])
	for b = b[40:]; len(b) > 0; {
		n, m := binary.Uvarint(b)
		if m <= 0 || uint64(len(b)-m) < n {
			return nil, errors.New("side input version: bad row length")
		}
		r, err := value.DecodeRow(b[m : m+int(n)])
		if err != nil {
			return nil, fmt.Errorf("side input version: %w", err)
		}
		v.rows = append(v.rows, r)
		b = b[m+int(n):]
	}
	return v, nil
}

// changes are the log rows that take def from version old (nil: empty)
// to v: upserts of the rows that are new or changed (the filled-in event
// time aside), in file order, then deletes of the keys v lacks (with
// v's time), each row with the operation as one more value as HTTP
// ingest logs a PRIMARY KEY table's rows.
func changes(def *plan.TableDef, old, v *sideVersion) [][]byte {
	key := sideKeyColumns(def)
	enc := func(r plan.Row, k bool) string {
		var b []byte
		for i, x := range r {
			if k && !contains(key, i) {
				continue
			}
			if !k && i == def.EventTime {
				x = plan.Null // compared without its time
			}
			b = value.AppendValue(b, x)
		}
		return string(b)
	}
	prev := map[string]string{}
	if old != nil {
		for _, r := range old.rows {
			prev[enc(r, true)] = enc(r, false)
		}
	}
	var out [][]byte
	now := map[string]bool{}
	for _, r := range v.rows {
		k := enc(r, true)
		now[k] = true
		if p, ok := prev[k]; ok && p == enc(r, false) {
			continue
		}
		out = append(out, value.AppendRow(nil, append(append(plan.Row{}, r...), plan.Bool(false))))
	}
	if old != nil {
		for _, r := range old.rows {
			if now[enc(r, true)] {
				continue
			}
			del := make(plan.Row, len(r)+1)
			for _, c := range key {
				del[c] = r[c]
			}
			if def.EventTime >= 0 {
				del[def.EventTime] = plan.Time(v.at)
			}
			del[len(r)] = plan.Bool(true)
			out = append(out, value.AppendRow(nil, del))
		}
	}
	return out
}

// sideVersionAt reads a catalog version of table id (nil: none).
func (e *Engine) sideVersionAt(key string) (*sideVersion, error) {
	kvs, err := e.meta.ListCatalog(key)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return decodeVersion(kv.Value)
		}
	}
	return nil, nil
}

func sideKey(id uint64) string        { return fmt.Sprintf("%s%d", sideVersionPrefix, id) }
func sidePendingKey(id uint64) string { return sideKey(id) + "/pending" }

// applySideVersion logs version v of side input def (pending, appended,
// current).
func (e *Engine) applySideVersion(ctx context.Context, def *plan.TableDef, v *sideVersion) error {
	if err := e.meta.PutCatalog(sidePendingKey(def.ID), encodeVersion(v)); err != nil {
		return err
	}
	return e.finishSideVersion(ctx, def, v)
}

// finishSideVersion appends the pending version v and makes it current.
func (e *Engine) finishSideVersion(ctx context.Context, def *plan.TableDef, v *sideVersion) error {
	old, err := e.sideVersionAt(sideKey(def.ID))
	if err != nil {
		return err
	}
	if rows := changes(def, old, v); len(rows) > 0 {
		l, err := e.meta.Log(def.ID)
		if err != nil {
			return err
		}
		if _, err := l.Append(ctx, rows, "fileside-"+hex.EncodeToString(v.hash[:])+"-"+strconv.FormatInt(v.at, 10)); err != nil {
			return fmt.Errorf("side input %s: logging its new version: %w", def.Name, err)
		}
	}
	if err := e.meta.PutCatalog(sideKey(def.ID), encodeVersion(v)); err != nil {
		return err
	}
	return e.meta.DeleteCatalog(sidePendingKey(def.ID))
}

// recoverSideVersions finishes the versions a crash left pending (at
// Open, before any query starts).
func (e *Engine) recoverSideVersions() error {
	for _, def := range e.tables {
		if def.Engine != "file" || def.IsSink() {
			continue
		}
		v, err := e.sideVersionAt(sidePendingKey(def.ID))
		if err != nil {
			return fmt.Errorf("side input %s: %w", def.Name, err)
		}
		if v != nil {
			if err := e.finishSideVersion(context.Background(), def, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// pollSideFiles looks at every side input's file and logs a new version
// of those that changed. A file that cannot be read keeps the table at
// its last version; the error is logged (once per content) and shown in
// GET /v1/tables/{name} (file_error).
func (e *Engine) pollSideFiles(time.Time) {
	e.mu.RLock()
	defer e.mu.RUnlock() // a DROP TABLE waits for the poll
	for _, def := range e.tables {
		if def.Engine == "file" && !def.IsSink() && def.Attrs["bounded"] != "true" {
			e.pollSideFile(def) // a bounded one is read once, at CREATE TABLE
		}
	}
}

func (e *Engine) pollSideFile(def *plan.TableDef) {
	e.sideMu.Lock()
	seen := e.sideSeen[def.ID]
	e.sideMu.Unlock()
	setErr := func(err error) {
		e.sideMu.Lock()
		defer e.sideMu.Unlock()
		if err == nil {
			delete(e.sideErr, def.ID)
		} else {
			e.sideErr[def.ID] = err.Error()
		}
	}
	path, err := e.sidePath(def)
	if err != nil {
		setErr(err)
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		if e.sideErrText(def.ID) != err.Error() {
			e.log.Error("side input file unreadable; the table keeps its last version", "table", def.Name, "err", err)
		}
		setErr(err)
		return
	}
	if st.Size() == seen.size && st.ModTime().Equal(seen.mtime) {
		return
	}
	cur, err := e.sideVersionAt(sideKey(def.ID))
	if err != nil {
		setErr(err)
		return
	}
	at := time.Now().UnixMilli()
	if cur == nil {
		at = plan.MinTime // the first version (its CREATE TABLE could not log it)
	}
	v, err := e.readSideFile(def, at)
	hash := [32]byte{}
	var fe *sideFileError
	if v != nil {
		hash = v.hash
	} else if errors.As(err, &fe) {
		b, _ := os.ReadFile(path)
		hash = sha256.Sum256(b)
	}
	remember := func() {
		e.sideMu.Lock()
		defer e.sideMu.Unlock()
		s := e.sideSeen[def.ID]
		s.size, s.mtime, s.hash = st.Size(), st.ModTime(), hash
		e.sideSeen[def.ID] = s
	}
	switch {
	case err != nil:
		if seen.errHash != hash || e.sideErrText(def.ID) == "" {
			e.log.Error("side input file has a bad row; the table keeps its last version", "table", def.Name, "err", err)
		}
		setErr(err)
		remember()
		e.sideMu.Lock()
		s := e.sideSeen[def.ID]
		s.errHash = hash
		e.sideSeen[def.ID] = s
		e.sideMu.Unlock()
		return
	case cur != nil && cur.hash == v.hash:
		setErr(nil)
		remember()
		return
	}
	if err := e.applySideVersion(context.Background(), def, v); err != nil {
		e.log.Error("side input: logging a new version failed; retrying at the next poll", "table", def.Name, "err", err)
		setErr(err)
		return
	}
	e.log.Info("side input reloaded", "table", def.Name, "rows", len(v.rows))
	setErr(nil)
	remember()
}

func (e *Engine) sideErrText(id uint64) string {
	e.sideMu.Lock()
	defer e.sideMu.Unlock()
	return e.sideErr[id]
}

// startSidePolls polls side input files until Close (every
// Config.FilePollInterval; negative: never, tests call pollSideFiles).
func (e *Engine) startSidePolls() {
	iv := e.cfg.FilePollInterval
	if iv == 0 {
		iv = DefaultFilePollInterval
	}
	if iv < 0 {
		return
	}
	e.stopSide = every(iv, e.pollSideFiles)
}

// dropSideVersions deletes a dropped side input's versions.
func (e *Engine) dropSideVersions(def *plan.TableDef) {
	if def.Engine == "file" && !def.IsSink() {
		e.meta.DeleteCatalogKeys([]string{sideKey(def.ID), sidePendingKey(def.ID)})
		e.sideMu.Lock()
		delete(e.sideSeen, def.ID)
		delete(e.sideErr, def.ID)
		e.sideMu.Unlock()
	}
}
