package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

// SinkReport is one output's comparison with the oracle.
type SinkReport struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`     // builtin, postgres, kafka
	Delivery string `json:"delivery"` // "" for built-in results
	Query    string `json:"query"`
	Expected int    `json:"expected"` // rows the oracle has
	Compared int    `json:"compared"` // rows read from the output
	// Missing: oracle rows the output lacks. Duplicated: an append-only
	// row present more than once, or an epoch recorded twice. Mismatched:
	// a row present with other values. Unexpected: a row the oracle does
	// not have.
	Missing    int      `json:"missing"`
	Lost       int      `json:"lost,omitempty"` // at_most_once: oracle rows the output lacks, which a crash may lose
	Duplicated int      `json:"duplicated"`
	Mismatched int      `json:"mismatched"`
	Unexpected int      `json:"unexpected"`
	Epochs     int      `json:"epochs,omitempty"` // exactly-once epochs recorded
	Examples   []string `json:"examples,omitempty"`
}

// OK reports an exact output.
func (s SinkReport) OK() bool {
	return s.Missing == 0 && s.Duplicated == 0 && s.Mismatched == 0 && s.Unexpected == 0
}

const maxExamples = 5

func (s *SinkReport) example(format string, args ...any) {
	if len(s.Examples) < maxExamples {
		s.Examples = append(s.Examples, fmt.Sprintf(format, args...))
	}
}

// compare fills rep from the oracle's rows (want) and the output's (got,
// already normalised to the oracle's value kinds).
func compare(rep *SinkReport, q querySpec, want, got []outRow) {
	rep.Expected, rep.Compared = len(want), len(got)
	exp := map[string]outRow{}
	for _, r := range want {
		exp[q.keyOf(r)] = r
	}
	seen := map[string]int{}
	for _, r := range got {
		k := q.keyOf(r)
		seen[k]++
		if seen[k] > 1 {
			rep.Duplicated++
			rep.example("%s: row %s present %d times", rep.Name, k, seen[k])
			continue
		}
		w, ok := exp[k]
		if !ok {
			rep.Unexpected++
			rep.example("%s: unexpected row %s", rep.Name, showRow(q, r))
			continue
		}
		if d := rowDiff(q, w, r); d != "" {
			rep.Mismatched++
			rep.example("%s: row %s: %s", rep.Name, k, d)
		}
	}
	var missing []string
	for k := range exp {
		if seen[k] == 0 {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	rep.Missing = len(missing)
	for _, k := range missing {
		rep.example("%s: missing row %s", rep.Name, showRow(q, exp[k]))
	}
}

func rowDiff(q querySpec, want, got outRow) string {
	var d []string
	for _, c := range q.cols {
		if !sameValue(c.typ, want[c.name], got[c.name]) {
			d = append(d, fmt.Sprintf("%s = %s, want %s", c.name, show(c.typ, got[c.name]), show(c.typ, want[c.name])))
		}
	}
	return strings.Join(d, ", ")
}

func sameValue(t colType, a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if t == tFloat {
		x, y := a.(float64), b.(float64)
		return x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
	}
	return a == b
}

func show(t colType, v any) string {
	switch {
	case v == nil:
		return "NULL"
	case t == tTime:
		return formatTS(v.(int64))
	}
	return fmt.Sprint(v)
}

func showRow(q querySpec, r outRow) string {
	parts := make([]string, len(q.cols))
	for i, c := range q.cols {
		parts[i] = c.name + "=" + show(c.typ, r[c.name])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// normalize turns a decoded JSON value (numbers as json.Number) into the
// oracle's kind for type t.
func normalize(t colType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case tInt:
		if n, ok := v.(json.Number); ok {
			return n.Int64()
		}
	case tFloat:
		if n, ok := v.(json.Number); ok {
			return n.Float64()
		}
	case tStr:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case tBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case tTime:
		switch x := v.(type) {
		case string:
			ts, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, err
			}
			return ts.UnixMilli(), nil
		case json.Number:
			return x.Int64()
		}
	}
	return nil, fmt.Errorf("value %v (%T) is not a %s", v, v, t.sql())
}

// jsonRow normalises a row decoded from JSON.
func jsonRow(q querySpec, m map[string]any) (outRow, error) {
	r := outRow{}
	for _, c := range q.cols {
		v, ok := m[c.name]
		if !ok {
			return nil, fmt.Errorf("no column %s in %v", c.name, m)
		}
		nv, err := normalize(c.typ, v)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
		r[c.name] = nv
	}
	return r, nil
}

func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// builtinRows reads a view's committed results.
func builtinRows(s *server, q querySpec) ([]outRow, error) {
	status, body, err := s.do("GET", "/v1/queries/"+q.name+"/results?consistency=committed", nil, nil)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("results of %s: %d %s", q.name, status, body)
	}
	var res struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := decodeJSON(body, &res); err != nil {
		return nil, fmt.Errorf("results of %s: %w", q.name, err)
	}
	out := make([]outRow, 0, len(res.Rows))
	for i, m := range res.Rows {
		r, err := jsonRow(q, m)
		if err != nil {
			return nil, fmt.Errorf("results of %s, row %d: %w", q.name, i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// pgRows reads a PostgreSQL sink table, and its exactly-once progress.
func pgRows(ctx context.Context, dsn, schema string, s sinkSpec, q querySpec) (rows []outRow, epochs []int64, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	names := make([]string, len(q.cols))
	for i, c := range q.cols {
		names[i] = pgx.Identifier{c.name}.Sanitize()
	}
	table := pgx.Identifier{schema, s.name}.Sanitize()
	res, err := conn.Query(ctx, "SELECT "+strings.Join(names, ", ")+" FROM "+table)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", table, err)
	}
	for res.Next() {
		vals, err := res.Values()
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", table, err)
		}
		r := outRow{}
		for i, c := range q.cols {
			v := vals[i]
			switch x := v.(type) {
			case time.Time:
				v = x.UnixMilli()
			case int32:
				v = int64(x)
			case float32:
				v = float64(x)
			}
			r[c.name] = v
		}
		rows = append(rows, r)
	}
	if err := res.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", table, err)
	}
	if s.delivery == "exactly_once" {
		// The schema is the sink's own: every progress row is its.
		er, err := conn.Query(ctx, "SELECT epoch FROM "+pgx.Identifier{schema, "streamsql_sink_progress"}.Sanitize()+" ORDER BY committed_at, epoch")
		if err != nil {
			return nil, nil, fmt.Errorf("read progress: %w", err)
		}
		for er.Next() {
			var e int64
			if err := er.Scan(&e); err != nil {
				return nil, nil, err
			}
			epochs = append(epochs, e)
		}
		if err := er.Err(); err != nil {
			return nil, nil, fmt.Errorf("read progress: %w", err)
		}
	}
	return rows, epochs, nil
}

// kafkaRows reads a Kafka sink topic read_committed and folds it into
// the sink's rows (the latest value per key, a tombstone deleting it),
// and its exactly-once progress records' epochs. An at_most_once sink's
// records are not folded: each is a row, so that a record produced
// twice is a row present twice (its queries are append-only).
func kafkaRows(b *kafkatest.Broker, topic string, s sinkSpec, q querySpec) (rows []outRow, epochs []int64, err error) {
	recs, err := b.Consume(topic, true)
	if err != nil {
		return nil, nil, err
	}
	latest := map[string]*string{}
	var order []string
	for _, r := range kafkatest.Data(recs) {
		if r.Key == nil {
			return nil, nil, fmt.Errorf("topic %s: record without a key at [%d]@%d", topic, r.Partition, r.Offset)
		}
		if _, ok := latest[*r.Key]; !ok || s.delivery == "at_most_once" {
			order = append(order, *r.Key)
		}
		latest[*r.Key] = r.Value
	}
	for _, k := range order {
		v := latest[k]
		if v == nil {
			continue
		}
		var m map[string]any
		if err := decodeJSON([]byte(*v), &m); err != nil {
			return nil, nil, fmt.Errorf("topic %s: key %s: %w", topic, k, err)
		}
		r, err := jsonRow(q, m)
		if err != nil {
			return nil, nil, fmt.Errorf("topic %s: key %s: %w", topic, k, err)
		}
		rows = append(rows, r)
	}
	if s.delivery == "exactly_once" {
		precs, err := b.Consume(topic+".streamsql-progress", true)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range kafkatest.Data(precs) {
			var p struct {
				Epoch json.Number `json:"epoch"`
			}
			if r.Value == nil || decodeJSON([]byte(*r.Value), &p) != nil {
				return nil, nil, fmt.Errorf("progress topic of %s: bad record [%d]@%d", topic, r.Partition, r.Offset)
			}
			e, err := strconv.ParseInt(string(p.Epoch), 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("progress topic of %s: epoch %q", topic, p.Epoch)
			}
			epochs = append(epochs, e)
		}
	}
	return rows, epochs, nil
}

// checkEpochs counts epochs recorded more than once or out of order (an
// exactly-once sink commits each epoch once, in increasing order).
func checkEpochs(rep *SinkReport, epochs []int64) {
	rep.Epochs = len(epochs)
	seen := map[int64]bool{}
	for i, e := range epochs {
		if seen[e] {
			rep.Duplicated++
			rep.example("%s: epoch %d recorded twice", rep.Name, e)
		}
		seen[e] = true
		if i > 0 && e < epochs[i-1] {
			rep.example("%s: epoch %d recorded after epoch %d", rep.Name, e, epochs[i-1])
			rep.Mismatched++
		}
	}
}
