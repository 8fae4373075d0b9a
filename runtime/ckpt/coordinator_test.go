package ckpt

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the interaction scripts in testdata/ with
// github.com/cockroachdb/datadriven: each block is one command, a line
// "----" and the outputs it must produce, one a line ("ok" when there are
// none). go test ./runtime/ckpt -rewrite rewrites the expected outputs.
// Commands:
//
//	init emit=200ms every=1s timeout=30s tasks=2 [ids=N]
//	                     a new coordinator at t=0 (ids: the id source
//	                     starts above N; without it, it continues)
//	restart [ids=N]      a new coordinator over the same id source (a new
//	                     run of the query), its clock at the last t
//	tick t=1s [moved]
//	request t=1s req=1
//	ack t=1s epoch=1 [err=text] [bytes=10] [align=5ms] [offsets=a:3,b:4]
//	acks t=1s epoch=1 [n=2]  every task (or n) acks, without anything
//	committed t=1s [err=text]
//	stop
//
// Times are offsets from the script's start. The runner also checks that
// no checkpoint id is ever injected twice in a script, restarts included.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			d := &driver{seen: map[uint64]bool{}}
			datadriven.RunTest(t, f, func(t *testing.T, td *datadriven.TestData) string {
				if got := d.run(t, td); got != "" {
					return got
				}
				return "ok"
			})
		})
	}
}

// driver plays the job's side of the protocol for a script.
type driver struct {
	c    *Coordinator
	cfg  Config
	next uint64
	now  time.Duration
	seen map[uint64]bool // checkpoint ids injected so far
}

var base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (d *driver) run(t *testing.T, td *datadriven.TestData) string {
	t.Helper()
	str := func(k string) (string, bool) {
		a, ok := td.Arg(k)
		if !ok {
			return "", false
		}
		return a.SingleVal(t), true
	}
	dur := func(k string) time.Duration {
		s, ok := str(k)
		if !ok {
			return 0
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %s: %v", td.Pos, k, err)
		}
		return v
	}
	num := func(k string) int64 {
		s, ok := str(k)
		if !ok {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %s: %v", td.Pos, k, err)
		}
		return v
	}
	errArg := func() error {
		if e, ok := str("err"); ok {
			return errors.New(e)
		}
		return nil
	}
	at := func() time.Time {
		if td.HasArg("t") {
			d.now = dur("t")
		}
		return base.Add(d.now)
	}
	var out []Output
	switch td.Cmd {
	case "init", "restart":
		if td.Cmd == "init" {
			d.cfg = Config{Emit: dur("emit"), Every: dur("every"), Timeout: dur("timeout"), Tasks: int(num("tasks"))}
			d.now = 0
		}
		if td.HasArg("ids") {
			d.next = max(d.next, uint64(num("ids")))
		}
		cfg := d.cfg
		cfg.NextID = func() uint64 { d.next++; return d.next }
		d.c = New(cfg, at())
		return ""
	case "tick":
		out = d.c.Tick(at(), td.HasArg("moved"))
	case "request":
		out = d.c.Request(at(), int(num("req")))
	case "ack":
		a := Ack{Epoch: uint64(num("epoch")), Bytes: num("bytes"), Align: dur("align"), Err: errArg()}
		if s, ok := str("offsets"); ok {
			a.Offsets = map[string]int64{}
			for _, kv := range strings.Split(s, ",") {
				k, v, _ := strings.Cut(kv, ":")
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: offsets: %v", td.Pos, err)
				}
				a.Offsets[k] = n
			}
		}
		out = d.c.Ack(at(), a)
	case "acks":
		n := int(num("n"))
		if n == 0 {
			n = d.cfg.Tasks
		}
		now := at()
		for range n {
			out = append(out, d.c.Ack(now, Ack{Epoch: uint64(num("epoch"))})...)
		}
	case "committed":
		out = d.c.Committed(at(), errArg())
	case "stop":
		out = d.c.Stop()
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	var lines []string
	for _, o := range out {
		if o.Kind == Inject && o.Barrier.ID != 0 {
			if d.seen[o.Barrier.ID] {
				t.Errorf("%s: checkpoint id %d injected again", td.Pos, o.Barrier.ID)
			}
			d.seen[o.Barrier.ID] = true
		}
		lines = append(lines, format(o))
	}
	return strings.Join(lines, "\n")
}

func format(o Output) string {
	var s strings.Builder
	switch o.Kind {
	case Inject:
		fmt.Fprintf(&s, "inject epoch=%d", o.Barrier.Epoch)
		if o.Barrier.ID != 0 {
			fmt.Fprintf(&s, " ckpt=%d", o.Barrier.ID)
		}
		if o.Barrier.Flush {
			s.WriteString(" flush")
		}
		return s.String()
	case Commit:
		fmt.Fprintf(&s, "commit ckpt=%d", o.ID)
	case Completed, Failed:
		name := "completed"
		if o.Kind == Failed {
			name = "failed"
		}
		fmt.Fprintf(&s, "%s ckpt=%d bytes=%d align=%s took=%s", name, o.ID, o.Bytes, o.Align, o.Took)
		if o.Err != nil {
			fmt.Fprintf(&s, " err=%q", o.Err.Error())
		}
	case Answer:
		reqs := make([]string, len(o.Requests))
		for i, r := range o.Requests {
			reqs[i] = strconv.Itoa(r)
		}
		fmt.Fprintf(&s, "answer reqs=%s", strings.Join(reqs, ","))
		switch {
		case o.Stopped:
			s.WriteString(" stopped")
		case o.Err != nil:
			fmt.Fprintf(&s, " err=%q", o.Err.Error())
		default:
			fmt.Fprintf(&s, " ckpt=%d", o.ID)
		}
		return s.String()
	default:
		return fmt.Sprintf("unknown output %d", o.Kind)
	}
	if len(o.Offsets) > 0 {
		keys := make([]string, 0, len(o.Offsets))
		for k := range o.Offsets {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = fmt.Sprintf("%s:%d", k, o.Offsets[k])
		}
		s.WriteString(" offsets=" + strings.Join(keys, ","))
	}
	return s.String()
}
