package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/state"
)

// MaintainInterval is how often the engine garbage-collects old state
// versions, truncates ingest logs and reclaims their value-log space.
const MaintainInterval = 5 * time.Second

// startMaintenance runs the maintenance loop until Close: every
// MaintainInterval, or at each of Config.MaintainTicks' values.
func (e *Engine) startMaintenance() {
	if e.cfg.MaintainTicks != nil {
		e.stopBg = onTicks(e.cfg.MaintainTicks, func(time.Time) { e.maintain() })
		return
	}
	e.stopBg = every(MaintainInterval, func(time.Time) { e.maintain() })
}

// every runs fn on a goroutine of its own each interval, with the tick's
// time, until stop is called; stop waits for it to return.
func every(interval time.Duration, fn func(now time.Time)) (stop func()) {
	t := time.NewTicker(interval)
	stopTicks := onTicks(t.C, fn)
	return func() {
		stopTicks()
		t.Stop()
	}
}

// onTicks runs fn on a goroutine of its own at each value ticks delivers,
// until stop is called; stop waits for it to return.
func onTicks(ticks <-chan time.Time, fn func(now time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-ticks:
				fn(now)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// maintain lets Badger drop state versions no query can read any more:
// every read is at some query's last completed checkpoint or later, so
// versions older than the oldest of those (except each key's newest at or
// below it) are garbage. SetDiscardTs is DB-wide: one minimum for all.
func (e *Engine) maintain() {
	e.mu.RLock()
	var oldest uint64
	for _, v := range e.views {
		var id uint64
		switch {
		case v.Job != nil:
			id = v.Job.Status().LastCheckpoint
		case v.Results != nil:
			id = v.Results.Committed()
		}
		if id == 0 {
			continue // nothing committed yet: it reads nothing old
		}
		if oldest == 0 || id < oldest {
			oldest = id
		}
	}
	e.mu.RUnlock()
	if oldest > 0 {
		e.store.SetDiscardTs(oldest)
		if err := e.store.CollectGarbage(); err != nil {
			e.log.Warn("state space", "err", err)
		}
	}
	e.truncateLogs(time.Now())
	if err := e.meta.CollectGarbage(); err != nil {
		e.log.Warn("ingest log space", "err", err)
	}
}

// truncateLogs deletes ingest-log rows that are both older than their
// table's retention and below the offset every query reading the table
// would resume from (its last completed checkpoint, or its start).
func (e *Engine) truncateLogs(now time.Time) {
	e.mu.RLock()
	type plan struct {
		log  *state.Log
		keep int64
	}
	var plans []plan
	for name, def := range e.tables {
		if def.Engine != "http" {
			// A file side input's log is its versions: a query started
			// later reads them all (filetables.go), so none ages out.
			continue
		}
		l, err := e.meta.Log(def.ID)
		if err != nil {
			continue
		}
		keep := l.OffsetBefore(now.Add(-time.Duration(def.Retention) * time.Millisecond))
		for _, v := range e.views {
			if need, reads := e.resumeOffset(v, name); reads && need < keep {
				keep = need
			}
		}
		if keep > l.Start() {
			plans = append(plans, plan{l, keep})
		}
	}
	e.mu.RUnlock()
	for _, p := range plans {
		if err := p.log.Truncate(p.keep); err != nil {
			e.log.Warn("truncate ingest log", "table_id", p.log.ID(), "err", err)
		}
	}
}

// resumeOffset is the offset of table that view v would read from after a
// restart, and whether v reads table at all (caller holds mu).
func (e *Engine) resumeOffset(v *View, table string) (int64, bool) {
	if !readsTable(v, table) {
		return 0, false
	}
	if v.Graph == nil {
		return 0, true // not running: keep everything it may need
	}
	if c, ok := runtime.LastCheckpointOf(e.store, v.Record.ID); ok {
		if off, ok := c.Offsets[table]; ok {
			return off, true
		}
	}
	return v.Record.StartOffsets[table], true
}

// checkStores runs at open, once the catalog is read and before any query
// starts (load): it removes what interrupted drops left (removeOrphans),
// makes sure no ingest offset or id is handed out twice after the meta
// store lost writes (checkLogs, checkSeqs), and logs every table's lost
// rows.
func (e *Engine) checkStores(recs []viewRecord) error {
	e.removeOrphans(recs)
	if err := e.checkSeqs(recs); err != nil {
		return err
	}
	return e.checkLogs(recs)
}

// checkLogs compares each HTTP table's log with what is known outside the
// meta store's write-ahead log: its high-water file (opening the log
// compares them) and every offset a query recorded (its checkpoint's
// source offsets, its start offset), each of which was readable, so
// acknowledged. A log that ends below any of them lost acknowledged rows:
// the range is recorded, never reused and reported (TableInfo.State
// "corrupt", the server log at every start, /metrics).
func (e *Engine) checkLogs(recs []viewRecord) error {
	for name, def := range e.tables {
		if !def.HasLog() {
			continue
		}
		l, err := e.meta.Log(def.ID)
		if err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		if err := l.OpenProblem(); err != nil {
			e.log.Error("ingest log high-water file unreadable: a loss of acknowledged rows cannot be detected at this start; it was written again", "table", name, "err", err)
		}
		var acked int64
		var cause string
		for _, rec := range recs {
			if off, ok := rec.StartOffsets[name]; ok && off > acked {
				acked, cause = off, fmt.Sprintf("query %s started reading it at offset %d", rec.Name, off)
			}
			if c, ok := runtime.LastCheckpointOf(e.store, rec.ID); ok {
				if off, ok := c.Offsets[name]; ok && off > acked {
					acked, cause = off, fmt.Sprintf("query %s's checkpoint %d read it up to offset %d", rec.Name, c.ID, off)
				}
			}
		}
		if acked > l.End() {
			cause = fmt.Sprintf("the meta store's ingest log ends at offset %d, but %s: the store lost the tail of its write-ahead log", l.End(), cause)
			if _, err := l.CheckAcked(acked, cause); err != nil {
				return fmt.Errorf("table %s: %w", name, err)
			}
		}
		if err := e.noteLossReaders(def, l.Lost(), recs); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		for _, r := range l.Lost() {
			e.log.Error("ingest log lost acknowledged rows: their offsets are skipped, never reused; queries that had not read them lack them (DROP TABLE clears this state)",
				"table", name, "from", r.From, "to", r.To, "rows", r.To-r.From, "detected", r.Detected, "cause", r.Cause)
		}
	}
	return nil
}

// checkSeqs raises the id sequences above every id the catalog and the
// tombstones show was handed out, should the meta store have lost the
// sequence's newest value (its high-water file covers that too; this
// covers a data directory from before high-water files).
func (e *Engine) checkSeqs(recs []viewRecord) error {
	var maxQuery, maxTable uint64
	for _, rec := range recs {
		maxQuery = max(maxQuery, rec.ID)
	}
	for _, def := range e.tables {
		maxTable = max(maxTable, def.ID)
	}
	if ids, err := e.meta.LogIDs(); err == nil && len(ids) > 0 {
		maxTable = max(maxTable, ids[len(ids)-1])
	}
	for _, s := range []struct {
		name string
		max  uint64
	}{{"query", maxQuery}, {"table", maxTable}} {
		raised, err := e.meta.RaiseSeq(s.name, s.max)
		if err != nil {
			return err
		}
		if raised {
			e.log.Error("id sequence was behind ids in use: the meta store lost writes; raised so that no id repeats", "seq", s.name, "in_use", s.max)
		}
	}
	return nil
}

// removeOrphans deletes what drops interrupted by a crash left behind:
// for each tombstone (state.Meta.MarkDropped, written before a drop
// deletes anything) whose table or query the catalog no longer names, the
// table's ingest log (rows, offsets, idempotency keys, high-water file) or
// the query's state, results and sink write-ahead log. A tombstone whose
// id the catalog still names is a drop that was refused or never got to
// delete the entry: it is cleared. Data the catalog does not name and no
// tombstone covers is reported and kept: its catalog entry may have been
// lost with the tail of the meta store's write-ahead log.
func (e *Engine) removeOrphans(recs []viewRecord) {
	tables := map[uint64]bool{}
	for _, def := range e.tables {
		tables[def.ID] = true
	}
	queries := map[uint64]bool{}
	for _, rec := range recs {
		queries[rec.ID] = true
	}
	tombs, err := e.meta.Dropped()
	if err != nil {
		e.log.Error("drop tombstones", "err", err)
	}
	for _, t := range tombs {
		var err error
		switch {
		case t.Kind == state.DroppedTable && !tables[t.ID]:
			if err = e.meta.DropLog(t.ID); err == nil {
				err = e.dropLossReaders(t.ID)
			}
			if err == nil {
				e.log.Info("removed the ingest log of a table whose DROP TABLE did not finish", "table_id", t.ID)
			}
		case t.Kind == state.DroppedQuery && !queries[t.ID]:
			if err = e.dropQueryData(t.ID); err == nil {
				e.log.Info("removed the state of a query whose drop did not finish", "query_id", t.ID)
			}
		}
		if err == nil {
			err = e.meta.ClearDropped(t.Kind, t.ID)
		}
		if err != nil {
			e.log.Error("leftovers of an unfinished drop (retried at the next start)", "kind", t.Kind, "id", t.ID, "err", err)
		}
	}
	tombed := func(kind string, id uint64) bool {
		return slices.ContainsFunc(tombs, func(t state.Tombstone) bool { return t.Kind == kind && t.ID == id })
	}
	if ids, err := e.meta.LogIDs(); err == nil {
		for _, id := range ids {
			if !tables[id] && !tombed(state.DroppedTable, id) {
				e.log.Error("an ingest log no table of the catalog names, and no drop was recorded for it: kept (its catalog entry may have been lost with the meta store's write-ahead log)", "table_id", id)
			}
		}
	}
	// Queries: one marker lookup per id handed out.
	if last, err := e.meta.LastSeq("query"); err == nil {
		for id := uint64(1); id <= last; id++ {
			if queries[id] || tombed(state.DroppedQuery, id) {
				continue
			}
			if c, ok := runtime.LastCheckpointOf(e.store, id); ok {
				e.log.Error("a query has checkpointed state but no catalog entry, and no drop was recorded for it: kept (its catalog entry may have been lost with the meta store's write-ahead log)", "query_id", id, "checkpoint", c.ID)
			}
		}
	}
}

// dropQueryData deletes a query's stored state and results and its sink
// write-ahead log (at-least-once keys, the at-most-once positions, in the
// meta catalog).
func (e *Engine) dropQueryData(id uint64) error {
	if err := e.store.DropPrefix(runtime.QueryPrefix(id)); err != nil {
		return fmt.Errorf("query %d state: %w", id, err)
	}
	var keys []string
	for _, prefix := range []string{runtime.SinkWALPrefix(id), runtime.AtMostOnceKey(id)} {
		kvs, err := e.meta.ListCatalog(prefix)
		if err != nil {
			return fmt.Errorf("query %d sink write-ahead log: %w", id, err)
		}
		for _, kv := range kvs {
			keys = append(keys, string(kv.Key))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := e.meta.DeleteCatalogKeys(keys); err != nil {
		return fmt.Errorf("query %d sink write-ahead log: %w", id, err)
	}
	return nil
}

// unregisterTable deletes a table's catalog entry, tombstoned first: the
// rest (dropTableData, after the catalog's lock) or, after a crash, the
// next start (removeOrphans) deletes its ingest log (caller holds mu).
func (e *Engine) unregisterTable(def *plan.TableDef) error {
	if def.HasLog() {
		if err := e.meta.MarkDropped(state.DroppedTable, def.ID); err != nil {
			return err
		}
	}
	if err := e.meta.DeleteCatalog(tablePrefix + def.Name); err != nil {
		e.meta.ClearDropped(state.DroppedTable, def.ID)
		return err
	}
	delete(e.tables, def.Name)
	fault.Point("catalog.after_drop")
	return nil
}

// dropTableData deletes an unregistered table's ingest log and clears its
// tombstone; it runs without mu (deleting rows takes time).
func (e *Engine) dropTableData(def *plan.TableDef) {
	e.dropSideVersions(def)
	if !def.HasLog() {
		return
	}
	err := e.meta.DropLog(def.ID)
	if err == nil {
		err = e.dropLossReaders(def.ID)
	}
	if err != nil {
		e.log.Error("drop table log (retried at the next start)", "table", def.Name, "err", err)
		return
	}
	if err := e.meta.ClearDropped(state.DroppedTable, def.ID); err != nil {
		e.log.Warn("drop tombstone", "table", def.Name, "err", err)
	}
}

// unregisterQuery deletes a query's catalog entry, tombstoned first, and
// takes it out of the engine's map; the caller then retires it (stops
// its job and deletes its data, after the catalog's lock) (caller holds
// mu).
func (e *Engine) unregisterQuery(v *View) error {
	if err := e.meta.MarkDropped(state.DroppedQuery, v.Record.ID); err != nil {
		return err
	}
	if err := e.meta.DeleteCatalog(viewPrefix + v.Record.Name); err != nil {
		e.meta.ClearDropped(state.DroppedQuery, v.Record.ID)
		return err
	}
	fault.Point("catalog.after_drop")
	if e.views[v.Record.Name] == v {
		delete(e.views, v.Record.Name)
	}
	e.logQuery("query dropped", v.Record)
	return nil
}

// lossReadPrefix keys, per table id and lost range, how far each query
// had read the table when the loss was found: what it already has of the
// range ("lostread/<table id>/<from>-<to>" -> JSON {query id: offset}).
const lossReadPrefix = "lostread/"

func lossReadKey(tableID uint64, r state.LostRange) string {
	return fmt.Sprintf("%s%d/%d-%d", lossReadPrefix, tableID, r.From, r.To)
}

// lossReaders returns the readers noted for each lost range of a table,
// by lossReadKey.
func (e *Engine) lossReaders(tableID uint64) map[string]map[uint64]int64 {
	out := map[string]map[uint64]int64{}
	kvs, err := e.meta.ListCatalog(fmt.Sprintf("%s%d/", lossReadPrefix, tableID))
	if err != nil {
		return out
	}
	for _, kv := range kvs {
		var m map[uint64]int64
		if json.Unmarshal(kv.Value, &m) == nil {
			out[string(kv.Key)] = m
		}
	}
	return out
}

// noteLossReaders records, for each lost range not noted yet (found at
// this start, before any query read on), how far each query had read the
// table: its checkpoint's offset, else where it started.
func (e *Engine) noteLossReaders(def *plan.TableDef, lost []state.LostRange, recs []viewRecord) error {
	if len(lost) == 0 {
		return nil
	}
	noted := e.lossReaders(def.ID)
	for _, r := range lost {
		key := lossReadKey(def.ID, r)
		if _, ok := noted[key]; ok {
			continue
		}
		readers := map[uint64]int64{}
		for _, rec := range recs {
			off, ok := rec.StartOffsets[def.Name]
			if c, has := runtime.LastCheckpointOf(e.store, rec.ID); has {
				if o, reads := c.Offsets[def.Name]; reads {
					off, ok = o, true
				}
			}
			if ok {
				readers[rec.ID] = off
			}
		}
		b, err := json.Marshal(readers)
		if err != nil {
			return err
		}
		if err := e.meta.PutCatalog(key, b); err != nil {
			return err
		}
	}
	return nil
}

// dropLossReaders deletes what noteLossReaders recorded for a table.
func (e *Engine) dropLossReaders(tableID uint64) error {
	kvs, err := e.meta.ListCatalog(fmt.Sprintf("%s%d/", lossReadPrefix, tableID))
	if err != nil || len(kvs) == 0 {
		return err
	}
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = string(kv.Key)
	}
	return e.meta.DeleteCatalogKeys(keys)
}
