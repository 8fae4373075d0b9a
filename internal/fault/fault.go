// Package fault holds named crash points for recovery tests. A point is
// inert unless armed: a process that takes them (cmd/streamsql, the child
// processes of crash tests) calls ArmFromEnv first thing, which arms what
// the environment variable STREAMSQL_FAULT names: "NAME" kills the process (SIGKILL, as a crash would) the
// first time the point is reached, "NAME@N" the N-th time. Several points
// may be given, separated by commas; the first to fire ends the process.
//
// Points (keep this list current; tests refer to it):
//
//	ingest.after_write       log rows written, before the sync (nothing acknowledged)
//	ingest.after_sync        rows synced, before the 200 is sent
//	ingest.truncate          a log's new start is persisted, the rows below it not yet deleted
//	state.partial_write      half of a state write (task state, sink journal, results) is committed
//	checkpoint.after_state   a task wrote its state for a checkpoint, before its ack
//	checkpoint.before_marker every task's state is written, the marker is not
//	checkpoint.after_marker  the marker is committed, sinks not yet told
//	restore.during           a query is part-way through restoring its state
//	sink.after_journal       an exactly-once sink subtask journaled its epoch (pre-commit), before its ack
//	sink.after_keylog        an at-least-once batch's keys are logged, the batch not applied
//	sink.after_progress      an exactly-once epoch's progress record is written in its open transaction (PostgreSQL: its rows not yet; Kafka: produced with them)
//	sink.before_commit       an exactly-once sink's epoch is written in its transaction, not committed
//	sink.after_commit        the epoch and its progress record are committed, the runtime not yet told
//	sink.after_rename        (file sinks only, so not in Points) one of an exactly-once epoch's files is renamed into place, its progress record not written
//	task.process             a task is about to process a batch of rows (scope: the query's name; not in
//	                         Points: a crash there is any crash under load, its use is STREAMSQL_SPIN)
//
// STREAMSQL_SPIN takes the same names but makes the goroutine that reaches
// the point spin forever instead, as a runaway expression would: it never
// returns and never yields but to the scheduler
// (STREAMSQL_SPIN=task.process/myview: the first batch myview's tasks
// process). Tests of a query that does not answer use it.
//
// Points reached only by a DDL statement (DropPoints; not in Points, whose
// points the torture harness's workload reaches without DDL):
//
//	catalog.after_drop       DROP TABLE/VIEW or DELETE of a query: the catalog entry is deleted, its log or state not yet
//
// The sink points are reached by every external sink; "NAME/ENGINE"
// (sink.before_commit/postgres, sink.after_keylog/kafka) arms one for
// the sinks of that engine only, with hits counted apart.
//
// Points lists them, for harnesses that crash at each.
//
// Importing the package arms nothing: there is no init side effect, so a
// library or test binary that never calls Arm or ArmFromEnv never crashes
// at a point.
//
// Threading: Arm and ArmFromEnv are called once at the process's start,
// before any goroutine can reach a point; Point is safe for concurrent use.
package fault

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

var (
	armed map[string]int // name -> hit on which to die
	spin  map[string]int // name -> hit on which to spin forever
	hits  sync.Map       // name -> *counter
	mu    sync.Mutex
)

// Arm arms the points crash names (STREAMSQL_FAULT's syntax: kill the
// process) and those spinSpec names (STREAMSQL_SPIN's: spin forever);
// empty strings disarm. Call it at the process's start, before any
// goroutine can reach a point.
func Arm(crash, spinSpec string) {
	armed = parse(crash)
	spin = parse(spinSpec)
}

// ArmFromEnv arms the points the environment names: STREAMSQL_FAULT and
// STREAMSQL_SPIN (see the package comment).
func ArmFromEnv() {
	Arm(os.Getenv("STREAMSQL_FAULT"), os.Getenv("STREAMSQL_SPIN"))
}

func parse(spec string) map[string]int {
	if spec == "" {
		return nil
	}
	m := map[string]int{}
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		n := 1
		if i := strings.LastIndexByte(p, '@'); i > 0 {
			if v, err := strconv.Atoi(p[i+1:]); err == nil && v > 0 {
				n, p = v, p[:i]
			}
		}
		m[p] = n
	}
	return m
}

// Points are the names of every crash point, in the order above.
var Points = []string{
	"ingest.after_write", "ingest.after_sync", "ingest.truncate",
	"state.partial_write", "checkpoint.after_state", "checkpoint.before_marker", "checkpoint.after_marker",
	"restore.during",
	"sink.after_journal", "sink.after_keylog", "sink.after_progress", "sink.before_commit", "sink.after_commit",
}

// DropPoints are the points reached only while dropping a table or query.
var DropPoints = []string{"catalog.after_drop"}

// SinkEngines are the scopes of the sink points (PointIn).
var SinkEngines = []string{"postgres", "kafka"}

// PointIn is Point for a point reached in a scope (a sink's engine): it
// fires when NAME or NAME/scope is armed for this hit.
func PointIn(name, scope string) {
	if armed == nil && spin == nil {
		return
	}
	Point(name)
	Point(name + "/" + scope)
}

// Armed reports whether the point name is armed (it may still be waiting
// for its hit). Code that must take a path only a crash there can show
// (a write split in two) asks this first.
func Armed(name string) bool {
	_, ok := armed[name]
	return ok
}

// spins counts a spinning goroutine's laps (so the loop is not empty).
var spins atomic.Int64

// hit counts a hit of name and returns its number.
func hit(name string) int {
	mu.Lock()
	defer mu.Unlock()
	c, _ := hits.LoadOrStore(name, new(int))
	n := c.(*int)
	*n++
	return *n
}

// Point is a named crash point: when armed for this hit, the process
// kills itself with SIGKILL (no deferred functions, no flushing).
func Point(name string) {
	if armed == nil && spin == nil {
		return
	}
	if n, ok := spin[name]; ok && hit("spin "+name) == n {
		os.Stderr.WriteString("fault: spinning at " + name + "\n")
		for {
			spins.Add(1)
		}
	}
	want, ok := armed[name]
	if !ok {
		return
	}
	if hit(name) == want {
		os.Stderr.WriteString("fault: crashing at " + name + "\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
