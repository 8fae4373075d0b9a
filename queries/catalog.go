package queries

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// Planning runs outside Engine.mu: a statement that takes long to plan (a
// table of many columns, a deep expression) must not hold up the requests
// of everybody else. The planner reads the catalog through planCatalog,
// which takes the read lock for each lookup and notes what each name
// meant; the statement then takes the write lock and commits only if
// every name it read still means the same object (by id), and plans again
// otherwise (planned).

// meaning is what a name stood for when the planner looked it up: the ids
// of the table and of the query of that name (0: none).
type meaning struct{ table, query uint64 }

// planCatalog is the catalog for one planning, outside Engine.mu.
type planCatalog struct {
	e    *Engine
	read map[string]meaning
}

func (e *Engine) planCatalog() *planCatalog { return &planCatalog{e: e, read: map[string]meaning{}} }

// meaningOf is what name means now (caller holds e.mu).
func (e *Engine) meaningOf(name string) meaning {
	var m meaning
	if t, ok := e.tables[name]; ok {
		m.table = t.ID
	}
	if v, ok := e.views[name]; ok {
		m.query = v.Record.ID
	}
	return m
}

func (c *planCatalog) Table(name string) (*plan.TableDef, bool) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
	c.read[name] = c.e.meaningOf(name)
	t, ok := c.e.tables[name]
	return t, ok
}

func (c *planCatalog) View(name string) (*plan.ViewDef, bool) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
	c.read[name] = c.e.meaningOf(name)
	v, ok := c.e.views[name]
	if ok && v.Record.Sink != "" {
		return nil, false
	}
	if !ok || v.Graph == nil {
		return nil, ok
	}
	return &plan.ViewDef{Name: name, Out: v.Graph.Out}, true
}

func (c *planCatalog) ViewSelect(name string) (*parser.Select, bool) {
	c.e.mu.RLock()
	c.read[name] = c.e.meaningOf(name)
	v, ok := c.e.views[name]
	sql, dialect := "", parser.MySQL
	if ok && v.Record.Sink == "" {
		sql, dialect = v.Record.SQL, v.Record.Dialect
	}
	c.e.mu.RUnlock()
	if sql == "" || !dialect.Valid() {
		return nil, false
	}
	stmts, err := dialect.Parse(sql)
	if err != nil || len(stmts) != 1 {
		return nil, false
	}
	cv, ok := stmts[0].Stmt.(*parser.CreateView)
	if !ok {
		return nil, false
	}
	return cv.Select, true
}

// current reports whether every name the planning read still means what
// it did (caller holds e.mu).
func (c *planCatalog) current() bool {
	for name, m := range c.read {
		if c.e.meaningOf(name) != m {
			return false
		}
	}
	return true
}

// maxReplans is how often a statement is planned again because the
// catalog changed under it before it is refused.
const maxReplans = 5

// planned plans rec outside the lock, then calls prepare (if not nil:
// work on the graph that takes time, such as a look at an external
// system) still outside it, and commit with the graph under the write
// lock, planning again while what the planning read has changed in
// between. op names the statement for the lock's holder.
func (e *Engine) planned(op string, rec viewRecord, prepare, commit func(g *plan.Graph) error) error {
	for attempt := 1; ; attempt++ {
		cat := e.planCatalog()
		g, err := e.planWith(rec, cat)
		if err != nil {
			return err
		}
		if prepare != nil {
			if err := prepare(g); err != nil {
				return err
			}
		}
		e.wlock(op)
		if !cat.current() {
			e.wunlock()
			if attempt < maxReplans {
				continue
			}
			return &Error{Status: 409, Title: statusTitle(409), Statement: -1,
				Detail: fmt.Sprintf("%s: the tables and views it reads changed while it was planned, %d times in a row; send it again", op, attempt)}
		}
		err = commit(g)
		e.wunlock()
		return err
	}
}

// lockHolder is who holds Engine.mu for writing, and since when (for
// /healthz: an engine whose lock is held for long cannot serve).
type lockHolder struct {
	op    string
	since time.Time
}

// wlock takes e.mu for writing on behalf of op; wunlock releases it.
func (e *Engine) wlock(op string) {
	e.mu.Lock()
	e.holder.Store(&lockHolder{op: op, since: time.Now()})
}

func (e *Engine) wunlock() {
	e.holder.Store(nil)
	e.mu.Unlock()
}

// holderOf reports who holds the write lock and for how long ("" when
// nobody does).
func holderOf(h *atomic.Pointer[lockHolder], now time.Time) (string, time.Duration) {
	if l := h.Load(); l != nil {
		return l.op, now.Sub(l.since)
	}
	return "", 0
}
