// Package fault holds named crash points for recovery tests. A point is
// inert unless the environment variable STREAMSQL_FAULT names it when the
// process starts: "NAME" kills the process (SIGKILL, as a crash would) the
// first time the point is reached, "NAME@N" the N-th time. Several points
// may be given, separated by commas; the first to fire ends the process.
//
// Points (keep this list current; tests refer to it):
//
//	ingest.after_write      log rows written, before the sync (nothing acknowledged)
//	ingest.after_sync       rows synced, before the 200 is sent
//	checkpoint.after_state  a task wrote its state for a checkpoint, before its ack
//	checkpoint.before_marker every task's state is written, the marker is not
//	checkpoint.after_marker  the marker is committed, sinks not yet told
//	restore.during          a query is part-way through restoring its state
//	sink.before_commit      an exactly-once sink's epoch is written in its transaction, not committed
//	sink.after_commit       the epoch and its progress record are committed, the runtime not yet told
//
// Threading: Point is safe for concurrent use.
package fault

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	armed map[string]int // name -> hit on which to die
	hits  sync.Map       // name -> *counter
	mu    sync.Mutex
)

func init() { armed = parse(os.Getenv("STREAMSQL_FAULT")) }

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

// Enabled reports whether any fault point is armed.
func Enabled() bool { return armed != nil }

// Point is a named crash point: when armed for this hit, the process
// kills itself with SIGKILL (no deferred functions, no flushing).
func Point(name string) {
	if armed == nil {
		return
	}
	want, ok := armed[name]
	if !ok {
		return
	}
	mu.Lock()
	c, _ := hits.LoadOrStore(name, new(int))
	n := c.(*int)
	*n++
	fire := *n == want
	mu.Unlock()
	if fire {
		os.Stderr.WriteString("fault: crashing at " + name + "\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
