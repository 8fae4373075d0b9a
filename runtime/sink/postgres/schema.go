package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// pgType is the PostgreSQL type a created column of streamsql type t gets.
func pgType(t plan.Type) string {
	switch t {
	case plan.TypeBigint:
		return "bigint"
	case plan.TypeDouble:
		return "double precision"
	case plan.TypeVarchar:
		return "text"
	case plan.TypeTimestamp:
		return "timestamp(3) with time zone"
	case plan.TypeBoolean:
		return "boolean"
	}
	return ""
}

// compatible lists the PostgreSQL types (base type OIDs) an existing
// column of streamsql type t may have, and names them for messages.
func compatible(t plan.Type) ([]uint32, string) {
	switch t {
	case plan.TypeBigint:
		return []uint32{pgtype.Int8OID, pgtype.NumericOID}, "bigint or numeric"
	case plan.TypeDouble:
		return []uint32{pgtype.Float8OID, pgtype.NumericOID}, "double precision or numeric"
	case plan.TypeVarchar:
		return []uint32{pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID}, "text, character varying or character"
	case plan.TypeTimestamp:
		return []uint32{pgtype.TimestamptzOID, pgtype.TimestampOID}, "timestamp with or without time zone"
	case plan.TypeBoolean:
		return []uint32{pgtype.BoolOID}, "boolean"
	}
	return nil, ""
}

// pgColumn is a column of an existing PostgreSQL table.
type pgColumn struct {
	num        int16
	name       string
	typ        string // as format_type shows it
	base       uint32 // type OID, of the base type for a domain
	notNull    bool
	hasDefault bool // a default, or an identity or generated column
	generated  bool // generated, or GENERATED ALWAYS AS IDENTITY
	used       bool
}

// pgIndex is a unique index of an existing table.
type pgIndex struct {
	name     string
	primary  bool
	keys     []int16 // attnums of the key columns (0: an expression)
	partial  bool
	deferred bool
	invalid  bool
	hasExprs bool
}

// relation finds schema.name: its OID and relkind (0, "": missing).
func relation(ctx context.Context, conn *pgx.Conn, schema, name string) (uint32, string, error) {
	var oid uint32
	var kind string
	err := conn.QueryRow(ctx, `SELECT c.oid, c.relkind::text FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, schema, name).Scan(&oid, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", nil
	}
	return oid, kind, err
}

func columnsOf(ctx context.Context, conn *pgx.Conn, rel uint32) ([]*pgColumn, error) {
	rows, err := conn.Query(ctx, `SELECT a.attnum, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod),
			CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END,
			a.attnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '',
			a.attgenerated <> '' OR a.attidentity = 'a'
		FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, rel)
	if err != nil {
		return nil, err
	}
	var cols []*pgColumn
	for rows.Next() {
		c := &pgColumn{}
		if err := rows.Scan(&c.num, &c.name, &c.typ, &c.base, &c.notNull, &c.hasDefault, &c.generated); err != nil {
			rows.Close()
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func uniqueIndexesOf(ctx context.Context, conn *pgx.Conn, rel uint32) ([]pgIndex, error) {
	rows, err := conn.Query(ctx, `SELECT ic.relname, i.indisprimary,
			(i.indkey::int2[])[0:i.indnkeyatts-1],
			i.indpred IS NOT NULL, NOT i.indimmediate, NOT i.indisvalid, i.indexprs IS NOT NULL
		FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
		WHERE i.indrelid = $1 AND i.indisunique
		ORDER BY NOT i.indisprimary, ic.relname`, rel)
	if err != nil {
		return nil, err
	}
	var idx []pgIndex
	for rows.Next() {
		var x pgIndex
		if err := rows.Scan(&x.name, &x.primary, &x.keys, &x.partial, &x.deferred, &x.invalid, &x.hasExprs); err != nil {
			rows.Close()
			return nil, err
		}
		idx = append(idx, x)
	}
	return idx, rows.Err()
}

// prepareTarget checks the target table (creating it first when it is
// missing and the sink may create it) and returns the sink's columns
// with their PostgreSQL names.
func (p *Publisher) prepareTarget(ctx context.Context, conn *pgx.Conn) ([]column, error) {
	rel, kind, err := relation(ctx, conn, p.schema, p.table)
	if err != nil {
		return nil, p.openError(err, "look up the table")
	}
	if rel == 0 {
		if !p.create {
			return nil, sink.Permanent("%s does not exist (create it, or set \"create_table\": true)", p.where())
		}
		if err := p.createTable(ctx, conn); err != nil {
			return nil, err
		}
		if rel, kind, err = relation(ctx, conn, p.schema, p.table); err != nil {
			return nil, p.openError(err, "look up the table")
		}
		if rel == 0 {
			return nil, fmt.Errorf("%s: not found after CREATE TABLE (dropped at once?)", p.where())
		}
	}
	return p.check(ctx, conn, rel, kind, p.where(), sinkColumns(p.spec))
}

// sinkColumns are the spec's columns, with PostgreSQL names still unset.
func sinkColumns(spec sink.Spec) []column {
	cols := make([]column, len(spec.Columns))
	for i, c := range spec.Columns {
		cols[i] = column{name: c.Name, typ: c.Type}
	}
	for _, i := range spec.PrimaryKey {
		cols[i].key = true
	}
	return cols
}

// createTable creates the target table from the sink's columns.
func (p *Publisher) createTable(ctx context.Context, conn *pgx.Conn) error {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + p.qTable + " (")
	cols := sinkColumns(p.spec)
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ident(strings.ToLower(c.name)) + " " + pgType(c.typ))
		if c.key {
			b.WriteString(" NOT NULL")
		}
	}
	b.WriteString(", PRIMARY KEY (")
	for i, k := range p.spec.PrimaryKey {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ident(strings.ToLower(cols[k].name)))
	}
	b.WriteString("))")
	if err := createLocked(ctx, conn, p.schema+"."+p.table, b.String()); err != nil {
		return p.openError(err, "create the table")
	}
	return nil
}

// prepareProgress creates the progress table when it is missing and
// checks it.
func (p *Publisher) prepareProgress(ctx context.Context, conn *pgx.Conn) error {
	where := fmt.Sprintf("progress table %s of sink table %s", p.qProgress, p.spec.Table)
	rel, kind, err := relation(ctx, conn, p.schema, ProgressTable)
	if err == nil && rel == 0 {
		ddl := "CREATE TABLE IF NOT EXISTS " + p.qProgress + ` (sink_id text NOT NULL, epoch bigint NOT NULL,
			committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink_id, epoch))`
		if err = createLocked(ctx, conn, p.schema+"."+ProgressTable, ddl); err == nil {
			rel, kind, err = relation(ctx, conn, p.schema, ProgressTable)
		}
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", where, err)
		if definitionError(err) {
			return &sink.PermanentError{Err: err}
		}
		return err
	}
	if rel == 0 {
		return fmt.Errorf("%s: not found after CREATE TABLE (dropped at once?)", where)
	}
	_, err = p.check(ctx, conn, rel, kind, where, []column{
		{name: "sink_id", typ: plan.TypeVarchar, key: true},
		{name: "epoch", typ: plan.TypeBigint, key: true},
	})
	return err
}

// ddlLockClass is the first key of the advisory lock taken around CREATE
// TABLE ("SSQL"); the second is a hash of the table's name.
const ddlLockClass = 0x5353514c

// createLocked runs a CREATE TABLE IF NOT EXISTS in a transaction holding
// an advisory lock on the table's name: two sinks creating the same table
// at once (the progress table of a schema, typically) would otherwise
// race on the catalog and one fail with a unique violation on pg_type.
// Should one still get that (a creator not taking the lock), it tries
// again once.
func createLocked(ctx context.Context, conn *pgx.Conn, name, ddl string) error {
	try := func() error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", int32(ddlLockClass), name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, ddl)
			return err
		})
	}
	err := try()
	if c := pgCode(err); c == "23505" || c == "42P07" { // unique_violation, duplicate_table
		err = try()
	}
	return err
}

// openError wraps an error of Open: permanent when the table's
// definition or the sink's settings cause it.
func (p *Publisher) openError(err error, doing string) error {
	err = fmt.Errorf("%s: %s: %w", p.where(), doing, err)
	if definitionError(err) {
		return &sink.PermanentError{Err: err}
	}
	return err
}

// check matches cols (the sink's columns) to the existing table rel: each
// must exist with a compatible type; there must be a usable unique key on
// exactly the key columns; other columns must accept a row without them.
// It returns cols with their PostgreSQL names set.
func (p *Publisher) check(ctx context.Context, conn *pgx.Conn, rel uint32, kind, where string, cols []column) ([]column, error) {
	switch kind {
	case "r", "p":
	default:
		return nil, sink.Permanent("%s is not a table (relkind %q): a sink writes to an ordinary or partitioned table", where, kind)
	}
	pgCols, err := columnsOf(ctx, conn, rel)
	if err != nil {
		return nil, p.openError(err, "read the table's columns")
	}
	idx, err := uniqueIndexesOf(ctx, conn, rel)
	if err != nil {
		return nil, p.openError(err, "read the table's indexes")
	}
	out := make([]column, len(cols))
	byNum := map[int16]*pgColumn{}
	for _, c := range pgCols {
		byNum[c.num] = c
	}
	var problems []string
	keyNums := map[int16]bool{}
	for i, c := range cols {
		out[i] = c
		pc, err := matchColumn(pgCols, c.name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if pc == nil {
			problems = append(problems, fmt.Sprintf("has no column %s (sink column %s %s)", ident(c.name), c.name, c.typ))
			continue
		}
		pc.used = true
		out[i].pg = pc.name
		if c.key {
			keyNums[pc.num] = true
		}
		oids, want := compatible(c.typ)
		ok := false
		for _, o := range oids {
			ok = ok || pc.base == o
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("column %s is %s, want %s for sink column %s %s", ident(pc.name), pc.typ, want, c.name, c.typ))
		}
		out[i].numeric = c.typ == plan.TypeDouble && pc.base == pgtype.NumericOID
		if pc.generated {
			problems = append(problems, fmt.Sprintf("column %s is generated, a sink cannot write it", ident(pc.name)))
		}
	}
	var extra []string
	for _, pc := range pgCols {
		if !pc.used && pc.notNull && !pc.hasDefault {
			extra = append(extra, ident(pc.name)+" "+pc.typ)
		}
	}
	if len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("has NOT NULL column(s) without a default that the sink does not write: %s", strings.Join(extra, ", ")))
	}
	if len(problems) > 0 {
		return nil, sink.Permanent("%s does not match the sink: %s", where, strings.Join(problems, "; "))
	}

	// The key: ON CONFLICT needs a unique index (of a PRIMARY KEY, a
	// UNIQUE constraint or CREATE UNIQUE INDEX) on exactly the key
	// columns, not partial, not deferrable, valid.
	var found []string
	for _, x := range idx {
		names := make([]string, len(x.keys))
		same := len(x.keys) == len(keyNums)
		for i, n := range x.keys {
			if c := byNum[n]; c != nil {
				names[i] = ident(c.name)
			} else {
				names[i] = "<expression>"
			}
			same = same && keyNums[n]
		}
		desc := "(" + strings.Join(names, ", ") + ")"
		if x.primary {
			desc = "PRIMARY KEY " + desc
		} else {
			desc = "UNIQUE " + desc
		}
		switch {
		case x.hasExprs:
			desc += " on expressions"
		case x.partial:
			desc += " partial"
		case x.deferred:
			desc += " deferrable"
		case x.invalid:
			desc += " invalid"
		}
		if same && !x.hasExprs && !x.partial && !x.deferred && !x.invalid {
			return out, nil
		}
		found = append(found, desc)
	}
	var want []string
	for _, c := range out {
		if c.key {
			want = append(want, ident(c.pg))
		}
	}
	sort.Strings(found)
	has := "none"
	if len(found) > 0 {
		has = strings.Join(found, ", ")
	}
	return nil, sink.Permanent("%s has no PRIMARY KEY or UNIQUE constraint on exactly the sink's key (%s) (unique keys found: %s)",
		where, strings.Join(want, ", "), has)
}

// matchColumn finds the PostgreSQL column of a sink column: the one of
// the same name, else the one whose name differs in case only.
func matchColumn(pgCols []*pgColumn, name string) (*pgColumn, error) {
	var folded []*pgColumn
	for _, c := range pgCols {
		if c.name == name {
			return c, nil
		}
		if strings.EqualFold(c.name, name) {
			folded = append(folded, c)
		}
	}
	switch len(folded) {
	case 0:
		return nil, nil
	case 1:
		return folded[0], nil
	}
	var names []string
	for _, c := range folded {
		names = append(names, ident(c.name))
	}
	return nil, fmt.Errorf("sink column %s matches several columns: %s", name, strings.Join(names, ", "))
}

// ident quotes a name for SQL.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }
