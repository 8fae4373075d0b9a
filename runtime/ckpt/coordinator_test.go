package ckpt

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/*.txt")

// TestScripts runs the interaction scripts in testdata/: each block is one
// command, a line "----" and the outputs it must produce (in the style of
// etcd-io/raft's interaction tests). Commands:
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
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type block struct {
	pre  []string // comments and blank lines before the command
	cmd  string
	line int
	want string
}

func parseScript(t *testing.T, text string) []block {
	var blocks []block
	var pre []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		b := block{pre: pre, cmd: strings.TrimSpace(l), line: i + 1}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("line %d: %q is not followed by ----", i+1, l)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		i-- // the blank line after the outputs goes before the next command
		b.want = strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

func runScript(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseScript(t, string(raw))
	d := &driver{seen: map[uint64]bool{}}
	var out strings.Builder
	for i, b := range blocks {
		got := d.run(t, b)
		if got == "" {
			got = "ok"
		}
		blocks[i].want, got = got, blocks[i].want
		if !*update && got != blocks[i].want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, b.line, b.cmd, blocks[i].want, got)
		}
	}
	if *update {
		for _, b := range blocks {
			for _, p := range b.pre {
				out.WriteString(p + "\n")
			}
			fmt.Fprintf(&out, "%s\n----\n%s\n", b.cmd, b.want)
		}
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
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

func (d *driver) run(t *testing.T, b block) string {
	t.Helper()
	f := strings.Fields(b.cmd)
	args := map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	dur := func(k string) time.Duration {
		s, ok := args[k]
		if !ok {
			return 0
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("line %d: %s: %v", b.line, k, err)
		}
		return v
	}
	num := func(k string) int64 {
		s, ok := args[k]
		if !ok {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("line %d: %s: %v", b.line, k, err)
		}
		return v
	}
	at := func() time.Time {
		if _, ok := args["t"]; ok {
			d.now = dur("t")
		}
		return base.Add(d.now)
	}
	var out []Output
	switch f[0] {
	case "init", "restart":
		if f[0] == "init" {
			d.cfg = Config{Emit: dur("emit"), Every: dur("every"), Timeout: dur("timeout"), Tasks: int(num("tasks"))}
			d.now = 0
		}
		if _, ok := args["ids"]; ok {
			d.next = max(d.next, uint64(num("ids")))
		}
		cfg := d.cfg
		cfg.NextID = func() uint64 { d.next++; return d.next }
		d.c = New(cfg, at())
		return ""
	case "tick":
		_, moved := args["moved"]
		out = d.c.Tick(at(), moved)
	case "request":
		out = d.c.Request(at(), int(num("req")))
	case "ack":
		a := Ack{Epoch: uint64(num("epoch")), Bytes: num("bytes"), Align: dur("align")}
		if e, ok := args["err"]; ok {
			a.Err = errors.New(e)
		}
		if s, ok := args["offsets"]; ok {
			a.Offsets = map[string]int64{}
			for _, kv := range strings.Split(s, ",") {
				k, v, _ := strings.Cut(kv, ":")
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("line %d: offsets: %v", b.line, err)
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
		var err error
		if e, ok := args["err"]; ok {
			err = errors.New(e)
		}
		out = d.c.Committed(at(), err)
	case "stop":
		out = d.c.Stop()
	default:
		t.Fatalf("line %d: unknown command %q", b.line, f[0])
	}
	var lines []string
	for _, o := range out {
		if o.Kind == Inject && o.Barrier.ID != 0 {
			if d.seen[o.Barrier.ID] {
				t.Errorf("line %d: checkpoint id %d injected again", b.line, o.Barrier.ID)
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
