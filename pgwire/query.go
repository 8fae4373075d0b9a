package pgwire

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/queries"
)

// prepared is a statement of Parse.
type prepared struct {
	sql string
}

// portal is a bound statement (Bind) and, once run, its result and how
// far Execute has sent its rows.
type portal struct {
	stmt    *prepared
	formats []int16 // result formats (Bind's codes)
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

// run runs sql: a session statement here, anything else in the engine.
func (c *conn) run(sql string) ([]queries.Result, error) {
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
	// The statement's context ends when the client leaves (watch) and
	// at a CancelRequest (c.stmt).
	ctx, cancel := context.WithCancel(c.stmt)
	defer cancel()
	stop := c.watch(cancel)
	defer stop()
	results, err := c.s.eng.ExecWith(ctx, sql, queries.ExecOptions{Set: c.sessionSet(), Dialect: parser.PostgreSQL})
	if err != nil && c.canceled() != nil {
		return nil, errCanceled
	}
	if err != nil && catalogQuery(sql) {
		// A catalog statement of a client whose statements are not
		// recorded (catalog.go): the engine cannot read PostgreSQL's
		// catalog queries; say what is served instead of a syntax error.
		return results, &pgError{code: "0A000", msg: errCatalog}
	}
	return results, err
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
		results, err := c.run(sql)
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

// rowsKeywords begin the statements that answer with rows.
var rowsKeywords = map[string]bool{"select": true, "show": true, "describe": true, "desc": true, "explain": true, "with": true, "values": true, "table": true}

// returnsRows reports whether sql's first keyword begins a statement
// with rows (Describe runs those to learn their columns, and only those).
func returnsRows(sql string) bool {
	n := normalize(sql)
	for strings.HasPrefix(n, "(") {
		n = strings.TrimSpace(n[1:])
	}
	w, _, _ := strings.Cut(n, " ")
	w, _, _ = strings.Cut(w, "(")
	return rowsKeywords[w]
}

// placeholder returns the first $n outside quotes and comments in sql, or
// "". Parameters are not bound yet (docs/pgwire.md).
func placeholder(sql string) string {
	for i := 0; i < len(sql); i++ {
		switch ch := sql[i]; ch {
		case '\'', '"', '`':
			j := strings.IndexByte(sql[i+1:], ch)
			if j < 0 {
				return ""
			}
			i += j + 1
		case '-':
			if strings.HasPrefix(sql[i:], "--") {
				j := strings.IndexByte(sql[i:], '\n')
				if j < 0 {
					return ""
				}
				i += j
			}
		case '/':
			if strings.HasPrefix(sql[i:], "/*") {
				j := strings.Index(sql[i+2:], "*/")
				if j < 0 {
					return ""
				}
				i += j + 3
			}
		case '$':
			j := i + 1
			for j < len(sql) && '0' <= sql[j] && sql[j] <= '9' {
				j++
			}
			if j > i+1 && (i == 0 || !identByte(sql[i-1])) {
				return sql[i:j]
			}
		}
	}
	return ""
}

func identByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

var errParams = "parameters are not supported yet: write the values into the statement (binding $1, $2, ... comes with a later version)"

// extended answers Parse, Bind, Describe, Execute and Close. An error
// returned is sent, and the messages until Sync are skipped.
func (c *conn) extended(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		if _, ok := c.stmts[m.Name]; ok && m.Name != "" {
			return &pgError{code: "42P05", msg: fmt.Sprintf("prepared statement %q already exists", m.Name)}
		}
		if p := placeholder(m.Query); p != "" || len(m.ParameterOIDs) > 0 {
			pe := &pgError{code: "0A000", msg: errParams}
			if p != "" {
				pe.position = int32(strings.Index(m.Query, p)) + 1
			}
			return pe
		}
		c.stmts[m.Name] = &prepared{sql: m.Query}
		c.be.Send(&pgproto3.ParseComplete{})
	case *pgproto3.Bind:
		st, ok := c.stmts[m.PreparedStatement]
		if !ok {
			return &pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
		}
		if len(m.Parameters) > 0 {
			return &pgError{code: "0A000", msg: errParams}
		}
		if _, ok := c.portals[m.DestinationPortal]; ok && m.DestinationPortal != "" {
			return &pgError{code: "42P03", msg: fmt.Sprintf("portal %q already exists", m.DestinationPortal)}
		}
		if err := checkFormats(m.ResultFormatCodes, -1); err != nil {
			return err
		}
		c.portals[m.DestinationPortal] = &portal{stmt: st, formats: append([]int16(nil), m.ResultFormatCodes...)}
		c.be.Send(&pgproto3.BindComplete{})
	case *pgproto3.Describe:
		if m.ObjectType == 'S' {
			st, ok := c.stmts[m.Name]
			if !ok {
				return &pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
			}
			c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: []uint32{}})
			if !returnsRows(st.sql) {
				c.be.Send(&pgproto3.NoData{})
				return nil
			}
			// The columns are known once the statement runs: it runs
			// here for them (rows statements have no effect), and again
			// at Execute.
			p := &portal{stmt: st}
			if err := c.runPortal(p); err != nil {
				return err
			}
			c.describe(p, nil)
			return nil
		}
		p, ok := c.portals[m.Name]
		if !ok {
			return &pgError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Name)}
		}
		if !p.ran && !returnsRows(p.stmt.sql) {
			c.be.Send(&pgproto3.NoData{})
			return nil
		}
		if err := c.runPortal(p); err != nil {
			return err
		}
		if p.res != nil && p.res.Columns != nil {
			if err := checkFormats(p.formats, len(p.cols)); err != nil {
				return err
			}
		}
		c.describe(p, p.formats)
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
func (c *conn) runPortal(p *portal) error {
	if p.ran {
		return nil
	}
	p.ran = true
	if empty(p.stmt.sql) {
		return nil
	}
	results, err := c.run(p.stmt.sql)
	if err != nil {
		return err
	}
	if len(results) > 0 {
		p.res = &results[len(results)-1]
		if p.res.Columns != nil {
			p.cols = resultColumns(p.res)
		}
	}
	return nil
}

// describe sends p's RowDescription, or NoData.
func (c *conn) describe(p *portal, formats []int16) {
	if p.res == nil || p.res.Columns == nil {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	c.be.Send(rowDescription(p.cols, formats))
}

// reportParam sends a changed parameter's ParameterStatus.
func (c *conn) reportParam(key, v string) {
	c.be.Send(&pgproto3.ParameterStatus{Name: key, Value: v})
}
