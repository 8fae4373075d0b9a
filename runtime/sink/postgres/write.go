package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// stageThreshold: a call with at least this many changes COPYs them into
// a temporary table and upserts and deletes from there; a smaller one
// binds them as arrays, in one pipeline with the progress row.
// BenchmarkWritePath (loopback, 6 columns, half updates): arrays win below
// about 2,000 rows (10 rows: 0.3 ms against 0.9 ms, the COPY's extra
// round trips), COPY above (20,000 rows: 240k rows/s against 200k).
// Arrays also put a whole call in one message, which must stay far below
// the server's 1 GB limit.
const stageThreshold = 2000

// stage is the temporary table of large writes: made by a session's
// first, ON COMMIT DELETE ROWS, and kept for the session (made for each
// transaction, ON COMMIT DROP, it cost about 1 ms more a call).
const stage = "streamsql_stage"

// statements are the SQL texts of a publisher's writes (built at Open,
// from the PostgreSQL names of the columns).
type statements struct {
	progress, committed      string
	upsertArrays, delArrays  string
	createStage              string
	upsertStage, deleteStage string
	stageCols                []string
}

func buildStatements(qTable, qProgress string, cols []column, primaryKey []int) statements {
	var s statements
	s.progress = "INSERT INTO " + qProgress + " (sink_id, epoch) VALUES ($1, $2)"
	s.committed = "SELECT max(epoch) FROM " + qProgress + " WHERE sink_id = $1"

	var names, updates, keys, arrays, arrayCols, keyArrays, keyCols, keyMatch, stageMatch, stageDefs, stageSel []string
	s.stageCols = []string{"streamsql_del"}
	stageDefs = append(stageDefs, "streamsql_del boolean")
	for i, c := range cols {
		q := ident(c.pg)
		sc := "c" + strconv.Itoa(i)
		names = append(names, q)
		arrays = append(arrays, "$"+strconv.Itoa(i+1)+"::"+stageType(c.wire())+"[]")
		arrayCols = append(arrayCols, sc+c.cast())
		s.stageCols = append(s.stageCols, sc)
		stageDefs = append(stageDefs, sc+" "+stageType(c.wire()))
		stageSel = append(stageSel, sc+c.cast())
		if !c.key {
			updates = append(updates, q+" = EXCLUDED."+q)
		}
	}
	// The delete's arrays are the key values, in primary key order.
	for j, k := range primaryKey {
		c, q, sc := cols[k], ident(cols[k].pg), "c"+strconv.Itoa(k)
		keys = append(keys, q)
		keyArrays = append(keyArrays, "$"+strconv.Itoa(j+1)+"::"+stageType(c.wire())+"[]")
		keyCols = append(keyCols, sc)
		keyMatch = append(keyMatch, "t."+q+" = d."+sc+c.cast())
		stageMatch = append(stageMatch, "t."+q+" = s."+sc+c.cast())
	}
	conflict := " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO NOTHING"
	if len(updates) > 0 {
		conflict = " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(updates, ", ")
	}
	into := "INSERT INTO " + qTable + " (" + strings.Join(names, ", ") + ") SELECT "
	s.upsertArrays = into + strings.Join(arrayCols, ", ") + " FROM unnest(" + strings.Join(arrays, ", ") +
		") AS d(" + strings.Join(colNames(len(cols)), ", ") + ")" + conflict
	s.delArrays = "DELETE FROM " + qTable + " AS t USING unnest(" + strings.Join(keyArrays, ", ") +
		") AS d(" + strings.Join(keyCols, ", ") + ") WHERE " + strings.Join(keyMatch, " AND ")
	s.createStage = "CREATE TEMPORARY TABLE " + stage + " (" + strings.Join(stageDefs, ", ") + ") ON COMMIT DELETE ROWS"
	s.upsertStage = into + strings.Join(stageSel, ", ") + " FROM pg_temp." + stage + " WHERE NOT streamsql_del" + conflict
	s.deleteStage = "DELETE FROM " + qTable + " AS t USING pg_temp." + stage + " AS s WHERE s.streamsql_del AND " +
		strings.Join(stageMatch, " AND ")
	return s
}

// stageType is the type of a column in the temporary table and of the
// parameters: the server casts it to the target column's type. It is the
// created column's type, but timestamps without a precision to round to.
func stageType(t plan.Type) string {
	if t == plan.TypeTimestamp {
		return "timestamptz"
	}
	return pgType(t)
}

// wire is the streamsql type a column's values are sent as.
func (c column) wire() plan.Type {
	if c.numeric {
		return plan.TypeVarchar
	}
	return c.typ
}

// cast is the explicit cast a column's values need in SQL (the server
// applies assignment casts, and text has none to numeric).
func (c column) cast() string {
	if c.numeric {
		return "::numeric"
	}
	return ""
}

func colNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return names
}

// CommitEpoch writes changes and the progress row (SinkID, epoch) in one
// transaction, the progress row first: an epoch already recorded fails
// with sink.ErrCommitted and changes nothing. An error from COMMIT that
// is not the server's answer leaves the outcome unknown; it is returned
// as such, and the caller reads Committed.
func (p *Publisher) CommitEpoch(ctx context.Context, epoch uint64, changes []sink.Change) error {
	if !p.spec.ExactlyOnce {
		return fmt.Errorf("%s: CommitEpoch on an at-least-once sink", p.where())
	}
	if epoch == 0 || epoch > math.MaxInt64 {
		return sink.Permanent("%s: epoch %d out of range", p.where(), epoch)
	}
	return p.write(ctx, epoch, changes)
}

// Apply writes changes in one transaction, without progress.
func (p *Publisher) Apply(ctx context.Context, changes []sink.Change) error {
	if len(changes) == 0 {
		return nil
	}
	return p.write(ctx, 0, changes)
}

// write writes changes in one transaction, with the progress row of
// epoch unless it is 0.
func (p *Publisher) write(ctx context.Context, epoch uint64, changes []sink.Change) error {
	if err := p.checkChanges(changes); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout+time.Duration(len(changes))*writeTimeoutPerRow)
	defer cancel()
	if err := p.ensureOpen(ctx); err != nil {
		return err
	}
	what := "apply changes"
	if epoch > 0 {
		what = fmt.Sprintf("commit epoch %d", epoch)
	}
	p.stagePending = false
	tx, err := p.conn.Begin(ctx)
	if err != nil {
		p.Close()
		return fmt.Errorf("%s: %s: begin: %w", p.where(), what, err)
	}
	if epoch > 0 {
		err = p.writeProgress(ctx, tx, epoch)
	}
	switch {
	case err != nil || len(changes) == 0:
	case len(changes) < p.stageAt:
		err = p.writeArrays(ctx, tx, changes)
	default:
		err = p.writeStaged(ctx, tx, changes)
	}
	if err != nil {
		if errors.Is(err, sink.ErrCommitted) {
			if rerr := tx.Rollback(ctx); rerr != nil {
				p.Close()
			}
			return fmt.Errorf("%s: %s: %w", p.where(), what, sink.ErrCommitted)
		}
		tx.Rollback(ctx)
		p.Close()
		err = fmt.Errorf("%s: %s: %w", p.where(), what, err)
		if dataError(err) || sink.IsPermanent(err) {
			return &sink.PermanentError{Err: err}
		}
		return err
	}
	if epoch > 0 {
		fault.PointIn("sink.before_commit", "postgres")
	}
	if err := tx.Commit(ctx); err != nil {
		p.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Severity == "ERROR" || errors.Is(err, pgx.ErrTxCommitRollback) {
			// The server answered, with an ERROR (a FATAL may end a
			// session that committed): rolled back.
			err = fmt.Errorf("%s: %s: commit: %w", p.where(), what, err)
			if dataError(err) {
				return &sink.PermanentError{Err: err}
			}
			return err
		}
		return fmt.Errorf("%s: %s: commit outcome unknown (the connection failed during COMMIT): %w", p.where(), what, err)
	}
	p.stageMade = p.stageMade || p.stagePending
	if epoch > 0 {
		fault.PointIn("sink.after_commit", "postgres")
	}
	return nil
}

// checkChanges checks the shape of changes and the kinds of their values
// (a mistake of the caller, permanent).
func (p *Publisher) checkChanges(changes []sink.Change) error {
	for i, ch := range changes {
		if len(ch.Key) != len(p.spec.PrimaryKey) {
			return sink.Permanent("%s: change %d has %d key values, want %d", p.where(), i, len(ch.Key), len(p.spec.PrimaryKey))
		}
		if ch.Row == nil {
			for j, k := range p.spec.PrimaryKey {
				if !fits(p.spec.Columns[k].Type, ch.Key[j]) {
					return sink.Permanent("%s: change %d: key column %s (%s) cannot take the value %s", p.where(), i, p.spec.Columns[k].Name, p.spec.Columns[k].Type, ch.Key[j])
				}
			}
			continue
		}
		if len(ch.Row) != len(p.spec.Columns) {
			return sink.Permanent("%s: change %d has %d values, want %d", p.where(), i, len(ch.Row), len(p.spec.Columns))
		}
		for j, c := range p.spec.Columns {
			if !fits(c.Type, ch.Row[j]) {
				return sink.Permanent("%s: change %d: column %s (%s) cannot take the value %s", p.where(), i, c.Name, c.Type, ch.Row[j])
			}
		}
	}
	return nil
}

// PostgreSQL's timestamps, in Unix milliseconds: from 4714-11-24 BC to
// 294277-01-01 (excluded). pgx would wrap around silently beyond.
const (
	minTimestamp = -210866803200000
	endTimestamp = 9224318016000000
)

// fits reports whether v can be written to a column of type t: NULL, a
// value of that type, or (numbers) an integer kind to BIGINT or DOUBLE.
func fits(t plan.Type, v plan.Value) bool {
	if v.K == plan.TypeTimestamp && t == plan.TypeTimestamp {
		return minTimestamp <= v.I && v.I < endTimestamp
	}
	if v.K == plan.TypeNull || v.K == t {
		return true
	}
	switch t {
	case plan.TypeBigint:
		return v.K == plan.TypeBoolean
	case plan.TypeDouble:
		return v.K == plan.TypeBigint || v.K == plan.TypeBoolean
	}
	return false
}

// writeProgress inserts epoch's progress row, first in its transaction:
// an epoch already recorded fails at once with sink.ErrCommitted.
func (p *Publisher) writeProgress(ctx context.Context, tx pgx.Tx, epoch uint64) error {
	if _, err := tx.Exec(ctx, p.sql.progress, p.spec.SinkID, int64(epoch)); err != nil {
		if pgCode(err) == "23505" {
			return sink.ErrCommitted
		}
		return err
	}
	fault.PointIn("sink.after_progress", "postgres")
	return nil
}

// writeArrays writes a small batch: the upserts and the deletes as one
// pipeline of statements taking the rows as arrays.
func (p *Publisher) writeArrays(ctx context.Context, tx pgx.Tx, changes []sink.Change) error {
	nUp := 0
	for _, ch := range changes {
		if ch.Row != nil {
			nUp++
		}
	}
	b := &pgx.Batch{}
	if nUp > 0 {
		args := make([]any, len(p.cols))
		for i, c := range p.cols {
			args[i] = newArray(c.wire(), nUp)
		}
		for _, ch := range changes {
			if ch.Row == nil {
				continue
			}
			for i, c := range p.cols {
				args[i] = appendArray(args[i], c, ch.Row[i])
			}
		}
		b.Queue(p.sql.upsertArrays, args...)
	}
	if nDel := len(changes) - nUp; nDel > 0 {
		args := make([]any, len(p.spec.PrimaryKey))
		for j, k := range p.spec.PrimaryKey {
			args[j] = newArray(p.cols[k].wire(), nDel)
		}
		for _, ch := range changes {
			if ch.Row != nil {
				continue
			}
			for j, k := range p.spec.PrimaryKey {
				args[j] = appendArray(args[j], p.cols[k], ch.Key[j])
			}
		}
		b.Queue(p.sql.delArrays, args...)
	}
	br := tx.SendBatch(ctx, b)
	for i := 0; i < b.Len(); i++ {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// writeStaged writes a large batch: every change COPYed into a temporary table, then one upsert and one delete from it.
func (p *Publisher) writeStaged(ctx context.Context, tx pgx.Tx, changes []sink.Change) error {
	if !p.stageMade {
		if _, err := tx.Exec(ctx, p.sql.createStage); err != nil {
			return fmt.Errorf("create the temporary table: %w", err)
		}
		p.stagePending = true
	}
	src := &copySource{p: p, changes: changes, pos: -1, vals: make([]any, len(p.cols)+1)}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", stage}, p.sql.stageCols, src); err != nil {
		return fmt.Errorf("copy into the temporary table: %w", err)
	}
	if src.ups > 0 {
		if _, err := tx.Exec(ctx, p.sql.upsertStage); err != nil {
			return err
		}
	}
	if src.dels > 0 {
		if _, err := tx.Exec(ctx, p.sql.deleteStage); err != nil {
			return err
		}
	}
	return nil
}

// copySource feeds changes to COPY: (delete?, values...), a delete with
// its key values in the key columns and NULL elsewhere.
type copySource struct {
	p         *Publisher
	changes   []sink.Change
	pos       int
	vals      []any
	ups, dels int
}

func (s *copySource) Next() bool {
	s.pos++
	return s.pos < len(s.changes)
}

func (s *copySource) Values() ([]any, error) {
	ch := s.changes[s.pos]
	if ch.Row != nil {
		s.ups++
		s.vals[0] = false
		for i, c := range s.p.cols {
			s.vals[i+1] = goValue(c, ch.Row[i])
		}
		return s.vals, nil
	}
	s.dels++
	s.vals[0] = true
	for i := range s.p.cols {
		s.vals[i+1] = nil
	}
	for j, k := range s.p.spec.PrimaryKey {
		s.vals[k+1] = goValue(s.p.cols[k], ch.Key[j])
	}
	return s.vals, nil
}

func (s *copySource) Err() error { return nil }

// goValue is v as the Go value pgx encodes for column c (v fits c).
func goValue(c column, v plan.Value) any {
	if v.K == plan.TypeNull {
		return nil
	}
	switch c.typ {
	case plan.TypeBigint:
		return v.I
	case plan.TypeDouble:
		if c.numeric {
			return numericText(v.F())
		}
		return v.F()
	case plan.TypeVarchar:
		return v.S
	case plan.TypeTimestamp:
		return time.UnixMilli(v.I).UTC()
	case plan.TypeBoolean:
		return v.I != 0
	}
	return nil
}

// numericText is f as numeric's input: the shortest decimal that reads
// back as f.
func numericText(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64) // NaN: "NaN"
}

// newArray is an empty array parameter of values sent as type t.
func newArray(t plan.Type, n int) any {
	switch t {
	case plan.TypeBigint:
		return make(pgtype.FlatArray[pgtype.Int8], 0, n)
	case plan.TypeDouble:
		return make(pgtype.FlatArray[pgtype.Float8], 0, n)
	case plan.TypeVarchar:
		return make(pgtype.FlatArray[pgtype.Text], 0, n)
	case plan.TypeTimestamp:
		return make(pgtype.FlatArray[pgtype.Timestamptz], 0, n)
	case plan.TypeBoolean:
		return make(pgtype.FlatArray[pgtype.Bool], 0, n)
	}
	return nil
}

// appendArray appends v to an array of newArray(c.wire()).
func appendArray(a any, c column, v plan.Value) any {
	ok := v.K != plan.TypeNull
	switch c.typ {
	case plan.TypeBigint:
		return append(a.(pgtype.FlatArray[pgtype.Int8]), pgtype.Int8{Int64: v.I, Valid: ok})
	case plan.TypeDouble:
		if c.numeric {
			s := ""
			if ok {
				s = numericText(v.F())
			}
			return append(a.(pgtype.FlatArray[pgtype.Text]), pgtype.Text{String: s, Valid: ok})
		}
		f := 0.0
		if ok {
			f = v.F()
		}
		return append(a.(pgtype.FlatArray[pgtype.Float8]), pgtype.Float8{Float64: f, Valid: ok})
	case plan.TypeVarchar:
		return append(a.(pgtype.FlatArray[pgtype.Text]), pgtype.Text{String: v.S, Valid: ok})
	case plan.TypeTimestamp:
		var tm time.Time
		if ok {
			tm = time.UnixMilli(v.I).UTC()
		}
		return append(a.(pgtype.FlatArray[pgtype.Timestamptz]), pgtype.Timestamptz{Time: tm, Valid: ok})
	case plan.TypeBoolean:
		return append(a.(pgtype.FlatArray[pgtype.Bool]), pgtype.Bool{Bool: v.I != 0, Valid: ok})
	}
	return a
}
