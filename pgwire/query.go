package pgwire

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
)

// prepared is a statement of Parse, planned without running
// (queries.Engine.Prepare, or a session statement's shape): what
// Describe says of it and what Bind decodes its parameters by.
type prepared struct {
	sql   string
	types []plan.Type // of $1, $2, ...: declared or inferred
	oids  []uint32    // the same as ParameterDescription sends them
	cols  []column    // the result columns; nil: no rows
}

// portal is a bound statement (Bind) and, once run, its result and how
// far Execute has sent its rows.
type portal struct {
	stmt    *prepared
	params  []plan.Value // Bind's values of $1, $2, ...
	formats []int16      // result formats (Bind's codes)
	ran     bool
	res     *queries.Result // nil: the statement had no result
	cols    []column
	sent    int // rows sent so far
}

// handle answers one message.
func (c *conn) handle(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Query:
		c.skipping = false
		return c.simpleQuery(m.String)
	case *pgproto3.Sync:
		c.skipping = false
		if c.tx == 'I' {
			// The end of the implicit transaction: its portals go (a
			// block's stay until its end: tx.go).
			clear(c.portals)
		}
		c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.tx})
		return c.be.Flush()
	case *pgproto3.Flush:
		return c.be.Flush()
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		return nil // outside COPY: ignored, as PostgreSQL does
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		if c.skipping {
			return nil
		}
		if err := c.extended(msg); err != nil {
			c.sendError(err, c.errSQL(msg))
			c.skipping = true
		}
		return nil
	}
	c.sendError(&pgError{code: "0A000", msg: fmt.Sprintf("message %T is not supported", msg)}, "")
	c.skipping = true
	return c.be.Flush()
}

// errSQL is the statement text an extended message's error positions
// refer to.
func (c *conn) errSQL(msg pgproto3.FrontendMessage) string {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		return m.Query
	case *pgproto3.Describe:
		if m.ObjectType == 'S' {
			if s := c.stmts[m.Name]; s != nil {
				return s.sql
			}
		} else if p := c.portals[m.Name]; p != nil {
			return p.stmt.sql
		}
	case *pgproto3.Execute:
		if p := c.portals[m.Portal]; p != nil {
			return p.stmt.sql
		}
	}
	return ""
}

// empty reports whether sql has no statement (spaces and semicolons).
func empty(sql string) bool {
	return strings.Trim(sql, " \t\r\n;") == ""
}

// run runs sql: a session statement here, anything else in the engine
// with the parameters params of types types (the simple protocol has
// none: nil).
func (c *conn) run(sql string, params []plan.Value, types []plan.Type) ([]queries.Result, error) {
	if r, ok, err := c.session(sql); ok {
		if err != nil {
			return nil, err
		}
		return []queries.Result{r}, nil
	}
	if r, ok, err := c.catalog(c.stmt, sql); ok {
		if err != nil {
			return nil, err
		}
		return []queries.Result{r}, nil
	}
	if f := c.s.opts.beforeStatement; f != nil {
		f(sql)
	}
	// The statement's context ends when the client leaves (watch) and
	// at a CancelRequest (c.stmt).
	ctx, cancel := context.WithCancel(c.stmt)
	defer cancel()
	stop := c.watch(cancel)
	defer stop()
	results, err := c.s.eng.ExecWith(ctx, sql, queries.ExecOptions{Params: params, ParamTypes: types, Set: c.sessionSet(), Dialect: parser.PostgreSQL})
	if err != nil && c.canceled() != nil {
		return nil, errCanceled
	}
	return results, engineError(sql, err)
}

// engineError is the engine's error of sql as the client gets it.
func engineError(sql string, err error) error {
	if err != nil && catalogQuery(sql) {
		// A catalog statement of a client whose statements are not
		// recorded (catalog.go): the engine cannot read PostgreSQL's
		// catalog queries; say what is served instead of a syntax error.
		return &pgError{code: "0A000", msg: errCatalog}
	}
	return err
}

// prepare plans sql for Parse with the parameter types declared (OIDs, 0:
// infer it), without running it.
func (c *conn) prepare(sql string, declared []uint32) (*prepared, error) {
	if c.tx == 'E' && !endsBlock(normalize(sql)) {
		return nil, errAborted // as PostgreSQL: Parse too
	}
	st := &prepared{sql: sql}
	types := make([]plan.Type, len(declared))
	for i, oid := range declared {
		t, err := paramType(oid)
		if err != nil {
			return nil, &pgError{code: "0A000", msg: fmt.Sprintf("parameter $%d: %v", i+1, err)}
		}
		types[i] = t
	}
	if cols, ok := c.describeSession(sql); ok {
		// Its declared parameters (if any) are unused, as PostgreSQL
		// allows; unknown ones are text.
		for i, t := range types {
			if t == plan.TypeNull {
				types[i] = plan.TypeVarchar
			}
		}
		st.cols, st.types, st.oids = cols, types, paramOIDs(declared, types)
		return st, nil
	}
	if r, ok, err := c.catalog(c.stmt, sql); ok {
		// A catalog statement only reads: its answer has its columns.
		if err != nil {
			return nil, err
		}
		for i, t := range types {
			if t == plan.TypeNull {
				types[i] = plan.TypeVarchar
			}
		}
		st.cols, st.types, st.oids = resultColumns(&r), types, paramOIDs(declared, types)
		return st, nil
	}
	p, err := c.s.eng.Prepare(sql, queries.ExecOptions{ParamTypes: types, Set: c.sessionSet(), Dialect: parser.PostgreSQL})
	if err != nil {
		return nil, engineError(sql, err)
	}
	st.types, st.oids = p.ParamTypes, paramOIDs(declared, p.ParamTypes)
	if p.Columns != nil {
		st.cols = make([]column, len(p.Columns))
		for i, col := range p.Columns {
			st.cols[i] = column{name: col.Name, typ: col.Type}
			if col.Type == plan.TypeNull {
				st.cols[i].typ = plan.TypeVarchar
			}
		}
	}
	return st, nil
}

// describeSession describes a session statement (session.go) without
// running it: SELECT version() and the like and SHOW are answered for
// their columns (they only read the session); SET and the transaction
// statements have none (and do not run here: they change the session).
// ok false: sql is not one of those. A session statement of another shape
// must be added here, or Parse sends it to the engine.
func (c *conn) describeSession(sql string) (cols []column, ok bool) {
	n := normalize(sql)
	if m := setRE.FindStringSubmatch(n); m != nil {
		_, known := setParams[m[1]]
		return nil, known || m[1] == "consistency"
	}
	if txStatement(n) {
		return nil, true
	}
	if !selectFnRE.MatchString(n) && !showRE.MatchString(n) {
		return nil, false
	}
	r, ok, err := c.session(sql)
	if !ok || err != nil {
		return nil, ok
	}
	if r.Columns == nil {
		return nil, true
	}
	return resultColumns(&r), true
}

// catalogQuery reports whether sql reads PostgreSQL's catalog.
func catalogQuery(sql string) bool {
	n := normalize(sql)
	return strings.Contains(n, "pg_catalog.") || strings.Contains(n, "information_schema.") || strings.Contains(n, " pg_class") ||
		strings.Contains(n, " pg_namespace") || strings.Contains(n, " pg_type")
}

// simpleQuery answers a Query message: every statement's result in turn,
// then the error of the one that failed (those before it stay applied).
func (c *conn) simpleQuery(sql string) error {
	if empty(sql) {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
	} else {
		results, err := c.run(sql, nil, nil)
		for i := range results {
			r := &results[i]
			if r.Columns != nil {
				cols := resultColumns(r)
				c.be.Send(rowDescription(cols, nil))
				if derr := c.sendRows(r, cols, nil, 0, len(r.Rows)); derr != nil {
					err = derr
					break
				}
			}
			c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag(r, len(r.Rows)))})
		}
		if err != nil {
			c.sendError(err, sql)
		} else if len(results) == 0 {
			c.be.Send(&pgproto3.EmptyQueryResponse{}) // comments only
		}
	}
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.tx})
	return c.be.Flush()
}

// sendRows sends rows [from, to) of r: a SELECT's values as they are,
// the other results' JSON values read back (objectRow).
func (c *conn) sendRows(r *queries.Result, cols []column, formats []int16, from, to int) error {
	if r.Values != nil {
		for i, row := range r.Values[from:to] {
			if err := c.between(i); err != nil {
				return err
			}
			c.be.Send(dataRow(cols, row, formats, false))
		}
		return nil
	}
	for i, o := range r.Rows[from:to] {
		if err := c.between(i); err != nil {
			return err
		}
		row, err := objectRow(cols, o.Vals)
		if err != nil {
			return err
		}
		c.be.Send(dataRow(cols, row, formats, true))
	}
	return nil
}

// tag is the CommandComplete tag of r, which had n rows.
func tag(r *queries.Result, n int) string {
	switch r.Kind {
	case "select", "describe":
		return fmt.Sprintf("SELECT %d", n)
	case "insert":
		return "INSERT 0 0"
	case "show":
		return "SHOW"
	case "explain":
		return "EXPLAIN"
	case "set":
		return "SET"
	}
	return strings.ToUpper(strings.ReplaceAll(r.Kind, "_", " "))
}

// extended answers Parse, Bind, Describe, Execute and Close. An error
// returned is sent, and the messages until Sync are skipped.
func (c *conn) extended(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		if _, ok := c.stmts[m.Name]; ok && m.Name != "" {
			return &pgError{code: "42P05", msg: fmt.Sprintf("prepared statement %q already exists", m.Name)}
		}
		st, err := c.prepare(m.Query, m.ParameterOIDs)
		if err != nil {
			return err
		}
		c.stmts[m.Name] = st
		c.be.Send(&pgproto3.ParseComplete{})
	case *pgproto3.Bind:
		st, ok := c.stmts[m.PreparedStatement]
		if !ok {
			return &pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
		}
		if _, ok := c.portals[m.DestinationPortal]; ok && m.DestinationPortal != "" {
			return &pgError{code: "42P03", msg: fmt.Sprintf("portal %q already exists", m.DestinationPortal)}
		}
		params, err := bindParams(st, m)
		if err != nil {
			return err
		}
		n := -1
		if st.cols != nil {
			n = len(st.cols)
		}
		if err := checkFormats(m.ResultFormatCodes, n); err != nil {
			return err
		}
		c.portals[m.DestinationPortal] = &portal{stmt: st, params: params, formats: append([]int16(nil), m.ResultFormatCodes...)}
		c.be.Send(&pgproto3.BindComplete{})
	case *pgproto3.Describe:
		// Described from the plan (Parse's prepare): nothing runs.
		if m.ObjectType == 'S' {
			st, ok := c.stmts[m.Name]
			if !ok {
				return &pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
			}
			c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: slices.Clone(st.oids)})
			c.describe(st.cols, nil)
			return nil
		}
		p, ok := c.portals[m.Name]
		if !ok {
			return &pgError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Name)}
		}
		c.describe(p.stmt.cols, p.formats)
	case *pgproto3.Execute:
		p, ok := c.portals[m.Portal]
		if !ok {
			return &pgError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Portal)}
		}
		if empty(p.stmt.sql) {
			c.be.Send(&pgproto3.EmptyQueryResponse{})
			return nil
		}
		if err := c.runPortal(p); err != nil {
			return err
		}
		if p.res == nil {
			c.be.Send(&pgproto3.EmptyQueryResponse{}) // comments only
			return nil
		}
		if p.res.Columns == nil {
			c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag(p.res, 0))})
			return nil
		}
		if err := checkFormats(p.formats, len(p.cols)); err != nil {
			return err
		}
		to := len(p.res.Rows)
		if m.MaxRows > 0 && uint64(p.sent)+uint64(m.MaxRows) < uint64(to) {
			to = p.sent + int(m.MaxRows)
		}
		if err := c.sendRows(p.res, p.cols, p.formats, p.sent, to); err != nil {
			return err
		}
		n := to - p.sent
		p.sent = to
		if to < len(p.res.Rows) {
			c.be.Send(&pgproto3.PortalSuspended{})
			return nil
		}
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag(p.res, n))})
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(c.stmts, m.Name)
		} else {
			delete(c.portals, m.Name)
		}
		c.be.Send(&pgproto3.CloseComplete{})
	}
	return nil
}

// runPortal runs p's statement once; its last result is the portal's.
// Its rows are sent in the columns Describe gave (the statement's): a
// result of other columns (a view replaced since Parse) is an error, as
// PostgreSQL's "cached plan must not change result type".
func (c *conn) runPortal(p *portal) error {
	if p.ran {
		return nil
	}
	p.ran = true
	if empty(p.stmt.sql) {
		return nil
	}
	results, err := c.run(p.stmt.sql, p.params, p.stmt.types)
	if err != nil {
		return err
	}
	if len(results) > 0 {
		p.res = &results[len(results)-1]
		if p.res.Columns != nil {
			p.cols = resultColumns(p.res)
			if !slices.Equal(p.cols, p.stmt.cols) {
				return &pgError{code: "0A000", msg: fmt.Sprintf("cached plan must not change result type: the statement was prepared with columns %s and now has %s; prepare it again", columnList(p.stmt.cols), columnList(p.cols))}
			}
		}
	}
	return nil
}

// columnList names cols with their types, for messages.
func columnList(cols []column) string {
	if cols == nil {
		return "none"
	}
	parts := make([]string, len(cols))
	for i, col := range cols {
		parts[i] = col.name + " " + col.typ.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// describe sends the RowDescription of cols in formats, or NoData.
func (c *conn) describe(cols []column, formats []int16) {
	if cols == nil {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	c.be.Send(rowDescription(cols, formats))
}

// bindParams decodes Bind m's parameters of statement st by their types
// (st.oids) and formats.
func bindParams(st *prepared, m *pgproto3.Bind) ([]plan.Value, error) {
	if len(m.Parameters) != len(st.oids) {
		return nil, &pgError{code: "08P01", msg: fmt.Sprintf("bind message supplies %d parameters, but prepared statement requires %d", len(m.Parameters), len(st.oids))}
	}
	if n := len(m.ParameterFormatCodes); n > 1 && n != len(m.Parameters) {
		return nil, &pgError{code: "08P01", msg: fmt.Sprintf("bind message has %d parameter formats but %d parameters", n, len(m.Parameters))}
	}
	if len(m.Parameters) == 0 {
		return nil, nil
	}
	params := make([]plan.Value, len(m.Parameters))
	for i, data := range m.Parameters {
		v, err := decodeParam(i+1, st.oids[i], formatOf(m.ParameterFormatCodes, i), data)
		if err != nil {
			return nil, err
		}
		params[i] = v
	}
	return params, nil
}

// reportParam sends a changed parameter's ParameterStatus.
func (c *conn) reportParam(key, v string) {
	c.be.Send(&pgproto3.ParameterStatus{Name: key, Value: v})
}
