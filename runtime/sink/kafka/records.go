package kafka

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// encoder writes values as JSON, through one reused json.Encoder (HTML
// characters are not escaped).
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// value appends v's JSON (plan.Value.JSON) to dst.
func (e *encoder) value(dst []byte, v plan.Value) ([]byte, error) {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v.JSON()); err != nil {
		return dst, err
	}
	b := e.buf.Bytes()
	return append(dst, b[:len(b)-1]...), nil // without Encode's newline
}

// object appends the JSON object {names[i]: vals[i], ...} to dst.
func (e *encoder) object(dst []byte, names [][]byte, vals plan.Row) ([]byte, error) {
	dst = append(dst, '{')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, names[i]...)
		dst = append(dst, ':')
		var err error
		if dst, err = e.value(dst, v); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// records makes the records of changes: key the primary key as a JSON
// object, value the row as one, or nil for a delete; in a registry
// format, both in it behind the wire format's header. Their bytes share
// one buffer. A change of the wrong shape is the caller's mistake
// (permanent).
func (p *Publisher) records(changes []sink.Change) ([]*kgo.Record, error) {
	if p.format != "json" && p.codec == nil {
		return nil, fmt.Errorf("%s: format %s: the schemas are not registered yet (Open first)", p.where(), p.format)
	}
	buf := make([]byte, 0, 64*len(changes))
	ends := make([]int, 2*len(changes)) // each change's key end and value end in buf
	for i, ch := range changes {
		if len(ch.Key) != len(p.spec.PrimaryKey) {
			return nil, sink.Permanent("%s: change %d has %d key values, want %d", p.where(), i, len(ch.Key), len(p.spec.PrimaryKey))
		}
		if ch.Row != nil && len(ch.Row) != len(p.spec.Columns) {
			return nil, sink.Permanent("%s: change %d has %d values, want %d", p.where(), i, len(ch.Row), len(p.spec.Columns))
		}
		var err error
		if p.codec != nil {
			buf, err = p.codec.Key.Append(buf, ch.Key)
		} else {
			buf, err = p.enc.object(buf, p.keyNames, ch.Key)
		}
		if err != nil {
			return nil, sink.Permanent("%s: change %d: key: %v", p.where(), i, err)
		}
		ends[2*i] = len(buf)
		if ch.Row != nil {
			if p.codec != nil {
				buf, err = p.codec.Value.Append(buf, ch.Row)
			} else {
				buf, err = p.enc.object(buf, p.colNames, ch.Row)
			}
			if err != nil {
				return nil, sink.Permanent("%s: change %d: row: %v", p.where(), i, err)
			}
		}
		ends[2*i+1] = len(buf)
	}
	recs := make([]*kgo.Record, len(changes))
	backing := make([]kgo.Record, len(changes))
	start := 0
	for i, ch := range changes {
		k, v := ends[2*i], ends[2*i+1]
		r := &backing[i]
		r.Topic = p.topic
		r.Key = buf[start:k:k]
		if ch.Row != nil {
			r.Value = buf[k:v:v]
		}
		recs[i], start = r, v
	}
	return recs, nil
}

// progressValue is a progress record's value.
type progressValue struct {
	SinkID      string `json:"sink_id"`
	Epoch       uint64 `json:"epoch"`
	CommittedAt string `json:"committed_at"`
}

// progressRecord is the record of epoch's commit.
func (p *Publisher) progressRecord(epoch uint64) *kgo.Record {
	v, _ := json.Marshal(progressValue{SinkID: p.spec.SinkID, Epoch: epoch, CommittedAt: plan.FormatTime(time.Now().UnixMilli())})
	return &kgo.Record{Topic: p.progress, Key: []byte(p.spec.SinkID), Value: v}
}
