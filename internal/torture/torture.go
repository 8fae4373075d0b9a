package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/internal/kafkatest"
	"github.com/streamsql/streamsql/internal/pgtest"
)

// Config is one torture run.
type Config struct {
	// Cycles is the number of crash cycles; with Duration set, cycles go
	// on until Duration has passed (soak mode).
	Cycles   int
	Duration time.Duration
	Seed     uint64
	// Rate is rows per second posted over HTTP and produced to Kafka
	// (each) while cycles run; Rows the number of rows of each source
	// (default: enough for the cycles at Rate).
	Rate int
	Rows int
	// Up is the longest a server runs between two crashes (each uptime
	// is uniform in [Up/5, Up]).
	Up time.Duration
	// Faults are fault points (internal/fault) to crash at; every
	// FaultEvery-th cycle restarts the server with the next one armed
	// and waits until it fires (FaultWait at most). Empty: SIGKILL only.
	Faults     []string
	FaultEvery int
	FaultWait  time.Duration
	// CheckpointInterval of the server (default 300ms).
	CheckpointInterval time.Duration

	Dir       string            // work directory; a temporary one when empty (removed unless Keep)
	Keep      bool              // keep Dir
	ServerBin string            // the streamsql binary; built when empty
	PG        *pgtest.Server    // PostgreSQL; started (and stopped) when nil
	Broker    *kafkatest.Broker // the Kafka broker; started (and stopped) when nil
	Log       io.Writer         // progress lines; nil for none
}

// Report is what a run found.
type Report struct {
	Seed           uint64         `json:"seed"`
	Cycles         int            `json:"cycles"`
	Kills          int            `json:"kills"`            // SIGKILLs
	KillsUnderLoad int            `json:"kills_under_load"` // with rows still to post or produce
	FaultsFired    map[string]int `json:"faults_fired"`
	FaultsMissed   map[string]int `json:"faults_missed"` // armed, not reached within FaultWait
	RowsHTTP       int            `json:"rows_http"`
	RowsKafka      int            `json:"rows_kafka"`
	AbortedKafka   int            `json:"aborted_kafka"` // records produced in aborted transactions
	Resends        int            `json:"resends"`       // HTTP chunks sent again after an error
	Outputs        []SinkReport   `json:"outputs"`
	Elapsed        time.Duration  `json:"elapsed_ns"`
	Dir            string         `json:"dir,omitempty"` // kept work directory
}

// OK reports whether every output equals the oracle.
func (r Report) OK() bool {
	for _, o := range r.Outputs {
		if !o.OK() {
			return false
		}
	}
	return len(r.Outputs) > 0
}

// Totals sums the outputs' figures.
func (r Report) Totals() (compared, missing, duplicated, mismatched, unexpected int) {
	for _, o := range r.Outputs {
		compared += o.Compared
		missing += o.Missing
		duplicated += o.Duplicated
		mismatched += o.Mismatched
		unexpected += o.Unexpected
	}
	return
}

// Print writes the report for people.
func (r Report) Print(w io.Writer) {
	compared, missing, dup, mism, unexp := r.Totals()
	fmt.Fprintf(w, "cycles %d, kills %d (under load %d), faults fired %s, missed %s\n", r.Cycles, r.Kills, r.KillsUnderLoad, showCounts(r.FaultsFired), showCounts(r.FaultsMissed))
	fmt.Fprintf(w, "rows ingested: %d over HTTP (%d chunks resent), %d to Kafka (+%d aborted)\n", r.RowsHTTP, r.Resends, r.RowsKafka, r.AbortedKafka)
	fmt.Fprintf(w, "rows compared %d, missing %d, duplicated %d, mismatched %d, unexpected %d (seed %d, %v)\n", compared, missing, dup, mism, unexp, r.Seed, r.Elapsed.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "output\tkind\tdelivery\tquery\texpected\tcompared\tmissing\tlost\tduplicated\tmismatched\tunexpected\tepochs")
	for _, o := range r.Outputs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", o.Name, o.Kind, o.Delivery, o.Query, o.Expected, o.Compared, o.Missing, o.Lost, o.Duplicated, o.Mismatched, o.Unexpected, o.Epochs)
	}
	tw.Flush()
	for _, o := range r.Outputs {
		for _, e := range o.Examples {
			fmt.Fprintln(w, "  "+e)
		}
	}
	if r.OK() {
		lost := 0
		for _, o := range r.Outputs {
			lost += o.Lost
		}
		if lost > 0 {
			fmt.Fprintf(w, "PASS: every output equals the oracle, but for %d rows the at_most_once outputs lost (none repeated)\n", lost)
		} else {
			fmt.Fprintln(w, "PASS: every output equals the oracle")
		}
	} else {
		fmt.Fprintln(w, "FAIL")
	}
}

func showCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "×" + strconv.Itoa(m[k])
	}
	return strings.Join(parts, " ")
}

// hitRange is, per fault point, the range the hit that fires is drawn
// from: late enough to be under load, early enough to come within
// FaultWait.
func hitRange(point string) (lo, hi int) {
	point, _, _ = strings.Cut(point, "/")
	switch point {
	case "ingest.truncate":
		return 1, 1
	case "restore.during":
		return 1, 12
	case "ingest.after_write", "ingest.after_sync", "sink.after_journal", "sink.after_keylog",
		"sink.after_progress", "sink.before_commit", "sink.after_commit":
		return 2, 15
	}
	return 5, 60
}

// knownPoint: a point of fault.Points, or a sink point scoped to an
// engine (NAME/ENGINE).
func knownPoint(p string) bool {
	name, scope, scoped := strings.Cut(p, "/")
	if scoped && (!strings.HasPrefix(name, "sink.") || !slices.Contains(fault.SinkEngines, scope)) {
		return false
	}
	return slices.Contains(fault.Points, name)
}

// PointMatrix is every fault point once, each sink point once per sink
// engine (NAME/ENGINE): the rows of the point × output table.
func PointMatrix() []string {
	var out []string
	for _, p := range fault.Points {
		if !strings.HasPrefix(p, "sink.") {
			out = append(out, p)
			continue
		}
		for _, e := range fault.SinkEngines {
			out = append(out, p+"/"+e)
		}
	}
	return out
}

func (c *Config) defaults() error {
	if c.Cycles <= 0 && c.Duration <= 0 {
		return errors.New("torture: set Cycles or Duration")
	}
	if c.Rate <= 0 {
		c.Rate = 400
	}
	if c.Up <= 0 {
		c.Up = 2500 * time.Millisecond
	}
	if c.Rows <= 0 {
		d := c.Duration
		if d <= 0 {
			// Uptime averages 0.6 Up; a restart takes about a second.
			d = time.Duration(c.Cycles) * (c.Up*6/10 + time.Second)
		}
		c.Rows = max(2000, int(d.Seconds()*float64(c.Rate)))
	}
	if c.FaultEvery <= 0 {
		c.FaultEvery = 1
	}
	if c.FaultWait <= 0 {
		c.FaultWait = 30 * time.Second
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = 300 * time.Millisecond
	}
	for _, p := range c.Faults {
		if !knownPoint(p) {
			return fmt.Errorf("torture: unknown fault point %q (known: %s; a sink point may name an engine: sink.before_commit/postgres)", p, strings.Join(fault.Points, ", "))
		}
	}
	return nil
}

// run is the state of one run.
type run struct {
	cfg    Config
	id     string // prefix of topics, schemas and idempotency keys
	srv    *server
	pg     *pgtest.Server
	broker *kafkatest.Broker
	in     input
	rng    *rand.Rand
	rep    Report

	drain   atomic.Bool // stop pacing: post and produce as fast as possible
	httpOut atomic.Bool // every HTTP chunk acknowledged
	kafOut  atomic.Bool // every Kafka chunk produced
	resends atomic.Int64
	dimNext int          // the poster's: dim versions posted so far
	posted  atomic.Int64 // ev rows acknowledged
	sent    atomic.Int64 // kev rows produced
	aborted atomic.Int64 // records produced in aborted transactions
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

// Run runs a torture: setup, load with crash cycles, final comparison.
// An error means the run could not be carried out (or a request was
// refused); what it found is in the Report.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	begin := time.Now()
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	r := &run{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7047))}
	r.rep = Report{Seed: cfg.Seed, FaultsFired: map[string]int{}, FaultsMissed: map[string]int{}}
	defer func() {
		rep = r.rep
		rep.Elapsed = time.Since(begin)
	}()
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "streamsql-torture-"); err != nil {
			return
		}
	}
	if cfg.Keep {
		r.rep.Dir = dir
	} else {
		defer os.RemoveAll(dir)
	}
	r.id = fmt.Sprintf("t%d_%d", cfg.Seed, time.Now().UnixNano()%1e6)
	if cfg.ServerBin == "" {
		if cfg.ServerBin, err = Build(dir); err != nil {
			return
		}
	}
	if r.pg = cfg.PG; r.pg == nil {
		if r.pg, err = pgtest.Start(); err != nil {
			return r.rep, fmt.Errorf("start PostgreSQL: %w", err)
		}
		defer r.pg.Close()
	}
	if r.broker = cfg.Broker; r.broker == nil {
		if r.broker, err = kafkatest.Start(filepath.Join(dir, "kafka")); err != nil {
			return r.rep, fmt.Errorf("start the Kafka broker: %w", err)
		}
		defer r.broker.Close()
	}
	r.in = genInput(cfg.Seed, cfg.Rows)
	r.srv = newServer(cfg.ServerBin, dir, cfg.CheckpointInterval)
	defer r.srv.kill()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nserver log (tail):\n%s", err, r.srv.logTail(6000))
		}
	}()
	if err = r.setup(); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	loadErr := make(chan error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); loadErr <- r.post(ctx) }()
	go func() { defer wg.Done(); loadErr <- r.produce(ctx) }()
	cyclesErr := r.cycles(ctx, begin)
	r.drain.Store(true)
	if cyclesErr != nil {
		cancel()
	}
	wg.Wait()
	close(loadErr)
	for e := range loadErr {
		if e != nil && cyclesErr == nil {
			cyclesErr = e
		}
	}
	r.rep.Resends = int(r.resends.Load())
	r.rep.RowsHTTP, r.rep.RowsKafka, r.rep.AbortedKafka = int(r.posted.Load()), int(r.sent.Load()), int(r.aborted.Load())
	if cyclesErr != nil {
		return r.rep, cyclesErr
	}
	r.logf("load done: %d HTTP rows, %d Kafka rows; final checkpoint", r.rep.RowsHTTP, r.rep.RowsKafka)
	if err = r.final(ctx); err != nil {
		return
	}
	r.logf("%s", "compared")
	return r.rep, nil
}

func (r *run) topic() string               { return r.id + "_kev" }
func (r *run) sinkTopic(s sinkSpec) string { return r.id + "_" + s.name }
func (r *run) pgSchema(s sinkSpec) string  { return r.id + "_" + s.name }

// setup starts the server and creates the tables, views and sinks.
func (r *run) setup() error {
	// The producer creates the topic with its partitions.
	if _, err := r.broker.Produce(r.topic(), 2, nil, kafkatest.NoTxn); err != nil {
		return fmt.Errorf("create topic %s: %w", r.topic(), err)
	}
	if err := r.srv.start(""); err != nil {
		return err
	}
	if err := r.srv.waitHealthy(); err != nil {
		return err
	}
	if err := r.srv.sql(ddl(r.broker.Addr(), r.topic())); err != nil {
		return err
	}
	for _, s := range sinks {
		conn := r.broker.Addr()
		if s.engine == "postgres" {
			conn = r.pg.DSN("")
			if err := r.pg.Exec("CREATE SCHEMA " + r.pgSchema(s)); err != nil {
				return err
			}
		}
		if err := r.srv.sql(s.createSQL(conn, r.pgSchema(s), r.sinkTopic(s))); err != nil {
			return fmt.Errorf("sink %s: %w", s.name, err)
		}
	}
	r.logf("setup: %d views, %d sinks, %d rows per source, server log %s", len(queries), len(sinks), len(r.in.ev), r.srv.logPath)
	return nil
}

// chunk is how many rows go in one request or one produce.
func (r *run) chunk() int { return max(10, r.cfg.Rate/10) }

// pace waits a tenth of a second unless draining.
func (r *run) pace(ctx context.Context) error {
	if r.drain.Load() {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}

// post posts ev in chunks, each with an Idempotency-Key and sent again
// until acknowledged (the server may be dead, restarting or restoring).
func (r *run) post(ctx context.Context) error {
	n := r.chunk()
	for i, c := 0, 0; i < len(r.in.ev); i, c = i+n, c+1 {
		var body bytes.Buffer
		for _, row := range r.in.ev[i:min(i+n, len(r.in.ev))] {
			body.Write(row.json())
			body.WriteByte('\n')
		}
		if err := r.send(ctx, "ev", fmt.Sprintf("%s-%d", r.id, c), body.Bytes()); err != nil {
			return err
		}
		r.posted.Store(int64(min(i+n, len(r.in.ev))))
		if err := r.postDim(ctx, c, min(i+n, len(r.in.ev))); err != nil {
			return err
		}
		if err := r.pace(ctx); err != nil {
			return nil
		}
	}
	r.httpOut.Store(true)
	return nil
}

// postDim posts the dim versions that follow ev rows [0, upTo) and are
// not posted yet, after ev chunk c.
func (r *run) postDim(ctx context.Context, c, upTo int) error {
	var body bytes.Buffer
	for r.dimNext < len(r.in.dim) && r.in.dimAfter[r.dimNext] <= upTo {
		body.Write(r.in.dim[r.dimNext].json())
		body.WriteByte('\n')
		r.dimNext++
	}
	if body.Len() == 0 {
		return nil
	}
	return r.send(ctx, "dim", fmt.Sprintf("%s-d%d", r.id, c), body.Bytes())
}

// send posts one chunk to table with its Idempotency-Key until it is
// acknowledged: the server may be dead, restarting or restoring. Another
// refusal ends the run. A cancelled ctx returns nil.
func (r *run) send(ctx context.Context, table, key string, body []byte) error {
	h := http.Header{"Content-Type": {"application/x-ndjson"}, "Idempotency-Key": {key}}
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return nil
		}
		if attempt > 0 {
			r.resends.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		status, resp, err := r.srv.do("POST", "/v1/tables/"+table+"/rows", h, body)
		if err != nil || status >= 500 || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			continue
		}
		if status != 200 {
			return fmt.Errorf("posting %s to %s: %d %s", key, table, status, resp)
		}
		return nil
	}
}

// produce writes kev to the topic (partition id mod 2), and now and then
// records in a transaction it aborts: read_committed must never see them.
func (r *run) produce(ctx context.Context) error {
	p, err := r.broker.NewProducer(r.topic(), 2)
	if err != nil {
		return err
	}
	defer p.Close()
	n := r.chunk()
	rec := func(row inRow) kafkatest.Record {
		return kafkatest.Record{Partition: int32(row.ID % 2), Key: kafkatest.Str(strconv.FormatInt(row.ID, 10)), Value: kafkatest.Str(string(row.json()))}
	}
	for i, c := 0, 0; i < len(r.in.kev); i, c = i+n, c+1 {
		var recs []kafkatest.Record
		for _, row := range r.in.kev[i:min(i+n, len(r.in.kev))] {
			recs = append(recs, rec(row))
		}
		if _, err := p.Send(recs, kafkatest.NoTxn); err != nil {
			return err
		}
		r.sent.Store(int64(min(i+n, len(r.in.kev))))
		if c%5 == 4 {
			junk := make([]kafkatest.Record, 3)
			for j := range junk {
				v := int64(999)
				junk[j] = rec(inRow{ID: 1<<40 + int64(c*3+j), K: "aborted", V: &v, TS: r.in.kev[i].TS})
			}
			if _, err := p.Send(junk, kafkatest.Abort); err != nil {
				return err
			}
			r.aborted.Add(int64(len(junk)))
		}
		if err := r.pace(ctx); err != nil {
			return nil
		}
	}
	r.kafOut.Store(true)
	return nil
}

// cycles crashes the server Cycles times (or until Duration has passed).
func (r *run) cycles(ctx context.Context, begin time.Time) error {
	faultIdx := 0
	for c := 1; ; c++ {
		if r.cfg.Duration > 0 && time.Since(begin) >= r.cfg.Duration || r.cfg.Duration <= 0 && c > r.cfg.Cycles {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		up := r.cfg.Up/5 + time.Duration(r.rng.Int64N(int64(r.cfg.Up*4/5)+1))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(up):
		}
		if !r.httpOut.Load() || !r.kafOut.Load() {
			r.rep.KillsUnderLoad++
		}
		r.srv.kill()
		r.rep.Kills++
		what := "SIGKILL"
		if len(r.cfg.Faults) > 0 && c%r.cfg.FaultEvery == 0 {
			point := r.cfg.Faults[faultIdx%len(r.cfg.Faults)]
			faultIdx++
			lo, hi := hitRange(point)
			hit := lo + r.rng.IntN(hi-lo+1)
			fired, err := r.crashAt(ctx, point, hit)
			if err != nil {
				return err
			}
			if fired {
				r.rep.FaultsFired[point]++
				what += fmt.Sprintf(", then %s@%d", point, hit)
			} else {
				r.rep.FaultsMissed[point]++
				what += fmt.Sprintf(", then %s@%d armed but not reached in %v", point, hit, r.cfg.FaultWait)
			}
		}
		if err := r.srv.start(""); err != nil {
			return err
		}
		if err := r.srv.waitHealthy(); err != nil {
			return fmt.Errorf("cycle %d: %w", c, err)
		}
		r.rep.Cycles = c
		r.logf("cycle %d: %s after %v; http rows %d, kafka rows %d", c, what, up.Round(time.Millisecond), r.posted.Load(), r.sent.Load())
	}
}

// crashAt starts the server with point@hit armed and waits until it dies
// there (true) or FaultWait passes (false: killed).
func (r *run) crashAt(ctx context.Context, point string, hit int) (bool, error) {
	off := r.srv.logSize()
	if err := r.srv.start(fmt.Sprintf("%s@%d", point, hit)); err != nil {
		return false, err
	}
	select {
	case <-r.srv.running():
	case <-time.After(r.cfg.FaultWait):
	case <-ctx.Done():
	}
	r.srv.kill()
	return strings.Contains(r.srv.logSince(off), "fault: crashing at "+point), nil
}

// final waits until every row is in a checkpoint and every sink has it,
// then compares every output with the oracle.
func (r *run) final(ctx context.Context) error {
	if err := r.waitRunning(); err != nil {
		return err
	}
	status, body, err := r.srv.do("POST", "/v1/checkpoints?timeout=300s", nil, nil)
	if err != nil || status != 200 {
		return fmt.Errorf("final checkpoint: %d %s %v", status, body, err)
	}
	// Rows each input's log holds: every row once.
	for _, t := range []struct {
		table string
		n     int
	}{{"ev", len(r.in.ev)}, {"dim", len(r.in.dim)}} {
		status, body, err = r.srv.do("GET", "/v1/tables/"+t.table, nil, nil)
		if err != nil || status != 200 {
			return fmt.Errorf("GET /v1/tables/%s: %d %s %v", t.table, status, body, err)
		}
		var tab struct {
			End int64 `json:"end_offset"`
		}
		if err := json.Unmarshal(body, &tab); err != nil {
			return fmt.Errorf("GET /v1/tables/%s: %w", t.table, err)
		}
		ing := SinkReport{Name: t.table + " (ingest log)", Kind: "ingest", Query: "-", Expected: t.n, Compared: int(tab.End)}
		if d := int(tab.End) - t.n; d > 0 {
			ing.Duplicated = d
			ing.example("the log of %s holds %d rows, %d were posted", t.table, tab.End, t.n)
		} else if d < 0 {
			ing.Missing = -d
			ing.example("the log of %s holds %d rows, %d were acknowledged", t.table, tab.End, t.n)
		}
		r.rep.Outputs = append(r.rep.Outputs, ing)
	}

	expected := map[string][]outRow{}
	for _, q := range queries {
		expected[q.name] = q.oracle(r.in)
		rep := SinkReport{Name: q.name, Kind: "builtin", Query: q.name}
		got, err := builtinRows(r.srv, q)
		if err != nil {
			return err
		}
		compare(&rep, q, expected[q.name], got)
		r.rep.Outputs = append(r.rep.Outputs, rep)
	}
	for _, s := range sinks {
		q := queryByName(s.query)
		rep := SinkReport{Name: s.name, Kind: s.engine, Delivery: s.delivery, Query: q.name}
		var got []outRow
		var epochs []int64
		if s.engine == "postgres" {
			got, epochs, err = pgRows(ctx, r.pg.DSN(""), r.pgSchema(s), s, q)
		} else {
			got, epochs, err = kafkaRows(r.broker, r.sinkTopic(s), s, q)
		}
		if err != nil {
			return fmt.Errorf("sink %s: %w", s.name, err)
		}
		compare(&rep, q, expected[q.name], got)
		if s.delivery == "at_most_once" {
			// A crash may lose what was in flight; nothing may repeat.
			rep.Lost, rep.Missing = rep.Missing, 0
			rep.Examples = slices.DeleteFunc(rep.Examples, func(e string) bool { return strings.Contains(e, ": missing row ") })
		}
		checkEpochs(&rep, epochs)
		r.rep.Outputs = append(r.rep.Outputs, rep)
	}
	return nil
}

// waitRunning waits until every query runs (restored, sinks reachable).
func (r *run) waitRunning() error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status, body, err := r.srv.do("GET", "/v1/queries", nil, nil)
		var res struct {
			Queries []struct {
				Name  string `json:"name"`
				State string `json:"state"`
				Error string `json:"error"`
			} `json:"queries"`
		}
		if err == nil && status == 200 && json.Unmarshal(body, &res) == nil {
			var notYet []string
			for _, q := range res.Queries {
				if q.State == "failed" {
					return fmt.Errorf("query %s failed: %s", q.Name, q.Error)
				}
				if q.State != "running" {
					notYet = append(notYet, q.Name+" "+q.State)
				}
			}
			if len(notYet) == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("queries not running after 2 minutes: %s", strings.Join(notYet, ", "))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
