package pgwire

import (
	"regexp"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamsql/streamsql/queries"
)

// Transaction blocks as drivers open them (psycopg2 and JDBC send BEGIN
// before the first statement unless in autocommit): BEGIN, COMMIT and
// ROLLBACK answered with PostgreSQL's tags and ReadyForQuery status. The
// statements inside a block run at once, each on its own, as outside it:
// nothing is held back to be committed or rolled back (docs/pgwire.md).
// The state is conn.tx: 'I' idle, 'T' in a block, 'E' in a failed block,
// where every statement but the block's end gets 25P02.
var (
	beginRE    = regexp.MustCompile(`^(begin(?: work| transaction)?|start transaction)((?:,? (?:isolation level (?:serializable|repeatable read|read committed|read uncommitted)|read write|read only|not deferrable|deferrable))*)$`)
	commitRE   = regexp.MustCompile(`^(?:commit|end)(?: work| transaction)?$`)
	rollbackRE = regexp.MustCompile(`^(?:rollback|abort)(?: work| transaction)?$`)
	// savepointRE: savepoints are refused, what they would undo has
	// happened already.
	savepointRE = regexp.MustCompile(`^(?:savepoint|release|rollback(?: work| transaction)? to)( |$)`)
)

// transaction answers n (normalized) if it is a transaction statement, and
// any statement in a failed block with 25P02.
func (c *conn) transaction(n string) (res queries.Result, ok bool, err error) {
	switch {
	case commitRE.MatchString(n):
		kind := "commit"
		switch c.tx {
		case 'I':
			c.warn("25P01", "there is no transaction in progress")
		case 'E':
			kind = "rollback" // as PostgreSQL: a failed block is rolled back
		}
		c.endBlock()
		return queries.Result{Kind: kind}, true, nil
	case rollbackRE.MatchString(n):
		if c.tx == 'I' {
			c.warn("25P01", "there is no transaction in progress")
		}
		c.endBlock()
		return queries.Result{Kind: "rollback"}, true, nil
	case c.tx == 'E':
		return res, true, errAborted
	case savepointRE.MatchString(n):
		return res, true, &pgError{code: "0A000", msg: "savepoints are not supported: the statements of a transaction block run at once and are not rolled back (docs/pgwire.md)"}
	}
	m := beginRE.FindStringSubmatch(n)
	if m == nil {
		return res, false, nil
	}
	if c.tx == 'T' {
		c.warn("25001", "there is already a transaction in progress")
	}
	c.tx = 'T'
	kind := "begin"
	if m[1] == "start transaction" {
		kind = "start_transaction"
	}
	return queries.Result{Kind: kind}, true, nil
}

// endBlock ends a block (or nothing): idle, and the block's portals go.
func (c *conn) endBlock() {
	c.tx = 'I'
	clear(c.portals)
}

// warn sends a WARNING notice.
func (c *conn) warn(code, msg string) {
	c.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: code, Message: msg})
}

// sendError answers err, an error of running sql; in a block, the block
// fails.
func (c *conn) sendError(err error, sql string) {
	c.be.Send(errorResponse(err, sql))
	if c.tx == 'T' {
		c.tx = 'E'
	}
}

// errAborted answers a statement in a failed block.
var errAborted = &pgError{code: "25P02", msg: "current transaction is aborted, commands ignored until end of transaction block"}

// endsBlock reports whether n (normalized) is COMMIT or ROLLBACK, which a
// failed block takes.
func endsBlock(n string) bool { return commitRE.MatchString(n) || rollbackRE.MatchString(n) }

// txStatement reports whether n (normalized) is a statement of
// transaction: one transaction answers.
func txStatement(n string) bool {
	return beginRE.MatchString(n) || endsBlock(n) || savepointRE.MatchString(n)
}
