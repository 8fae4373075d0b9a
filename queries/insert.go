package queries

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
	"github.com/streamsql/streamsql/runtime/sink/file"
	"github.com/streamsql/streamsql/runtime/sink/kafka"
	"github.com/streamsql/streamsql/runtime/sink/postgres"
)

// sinkCheckTimeout bounds the look at the external system when an INSERT
// INTO is submitted.
const sinkCheckTimeout = 5 * time.Second

// insert starts INSERT INTO t SELECT ...: a continuous query named t whose
// changes go to sink table t.
func (e *Engine) insert(ctx context.Context, s *parser.Insert, st *parser.Statement, set []parser.SetVar) (Result, error) {
	check := func() error {
		if _, ok := e.tables[s.Table]; !ok {
			return stmtErr(404, st, "INSERT INTO %s: unknown table %s", s.Table, s.Table)
		}
		if v, ok := e.views[s.Table]; ok {
			return stmtErr(409, st, "INSERT INTO %s: query %s already writes it (one query per sink table); drop it first with DELETE /v1/queries/%s", s.Table, v.Record.Name, s.Table)
		}
		return nil
	}
	e.mu.RLock()
	err := check()
	e.mu.RUnlock()
	if err != nil {
		return Result{}, err
	}
	rec := viewRecord{Name: s.Table, Sink: s.Table, SQL: st.Text, Dialect: st.Dialect, Set: set, Created: time.Now().UTC(),
		StartOffsets: map[string]int64{}, Reads: fromNames(s.Select)}
	// A target that can never work (a table that does not match) is
	// refused now; one that is only unreachable is not: the query starts
	// and retries. The look takes up to sinkCheckTimeout: outside the lock.
	checkSink := func(g *plan.Graph) error {
		if err := e.checkSink(ctx, sinkOf(g)); err != nil {
			return stmtErr(422, st, "INSERT INTO %s: %v", s.Table, err)
		}
		return nil
	}
	// No query writes the table (check): nothing is replaced.
	if _, err := e.create("INSERT INTO "+s.Table, &rec, check, checkSink); err != nil {
		return Result{}, err
	}
	return Result{Kind: "insert", Name: rec.Name}, nil
}

// sinkOf returns the external sink of a planned INSERT.
func sinkOf(g *plan.Graph) *plan.ExternalSink {
	for _, v := range g.Vertices {
		for _, op := range v.Ops {
			if s, ok := op.(*plan.Sink); ok && s.External != nil {
				return s.External
			}
		}
	}
	return nil
}

// checkSink opens the sink's target once: it fails only for errors that
// retrying cannot fix.
func (e *Engine) checkSink(ctx context.Context, ext *plan.ExternalSink) error {
	pub, err := e.cfg.Publisher(sink.Spec{Table: ext.Table, Engine: ext.Engine, Connection: ext.Connection, Attrs: ext.Attrs,
		Columns: ext.Columns, PrimaryKey: ext.PrimaryKey, SinkID: "check", ExactlyOnce: ext.ExactlyOnce, Partition: ext.Partition, PartitionNames: ext.PartitionNames})
	if err != nil {
		return err
	}
	defer pub.Close()
	ctx, cancel := context.WithTimeout(ctx, sinkCheckTimeout)
	defer cancel()
	if err := pub.Open(ctx); err != nil && sink.IsPermanent(err) {
		return err
	}
	return nil
}

// publisherIn makes external sinks' publishers by ENGINE; the relative
// paths of file sinks are under filesDir.
func publisherIn(filesDir string) func(sink.Spec) (sink.Publisher, error) {
	return func(spec sink.Spec) (sink.Publisher, error) {
		if spec.Engine == "file" {
			return file.New(spec, filesDir)
		}
		return newPublisher(spec)
	}
}

// newPublisher makes an external sink's publisher.
func newPublisher(spec sink.Spec) (sink.Publisher, error) {
	switch spec.Engine {
	case "postgres":
		return postgres.New(spec)
	case "kafka":
		return kafka.New(spec)
	}
	return nil, sink.Permanent("sink table %s: no publisher for ENGINE=%s", spec.Table, spec.Engine)
}

// FilesDir is where the relative paths of ENGINE=file tables are: the
// data directory's files/.
func FilesDir(dataDir string) string { return filepath.Join(dataDir, "files") }

// sinkID names a query's progress records in its external sink: this
// data directory, the query id (never reused) and the sink table.
func (e *Engine) sinkID(rec viewRecord) string {
	if rec.Sink == "" {
		return ""
	}
	return fmt.Sprintf("%s/%d/%s", e.instance, rec.ID, rec.Sink)
}

// loadInstance reads this data directory's instance id, making one at the
// first start.
func (e *Engine) loadInstance() error {
	kvs, err := e.meta.ListCatalog(instanceKey)
	if err != nil {
		return fmt.Errorf("instance id: %w", err)
	}
	for _, kv := range kvs {
		if string(kv.Key) == instanceKey {
			e.instance = string(kv.Value)
			return nil
		}
	}
	b := make([]byte, 8)
	rand.Read(b)
	e.instance = hex.EncodeToString(b)
	if err := e.meta.PutCatalog(instanceKey, []byte(e.instance)); err != nil {
		return fmt.Errorf("instance id: %w", err)
	}
	return nil
}

const instanceKey = "instance"
