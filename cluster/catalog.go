package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CatalogTopic is the catalog log's topic of cluster name.
func CatalogTopic(name string) string { return "_streamsql." + name + ".catalog" }

// CheckName checks a cluster name: it is part of topic names, so ASCII
// letters, digits, '_' and '-', at most 200 characters.
func CheckName(name string) error {
	if name == "" || len(name) > 200 {
		return fmt.Errorf("cluster name %q: want 1 to 200 characters", clip(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("cluster name %q: %q is not allowed (ASCII letters, digits, '_' and '-')", clip(name), c)
		}
	}
	return nil
}

// Statement is one record of the catalog log: a DDL statement as its
// proposer received it.
type Statement struct {
	SQL     string `json:"sql"`
	Dialect string `json:"dialect,omitempty"` // the parser dialect it was written in ("" = the default)
	Server  string `json:"server"`            // the proposer's server id
}

// Record is a Statement at its place in the log.
type Record struct {
	Offset int64
	Statement
}

// CatalogOptions are a Catalog's settings.
type CatalogOptions struct {
	Brokers  []string
	Cluster  string // the cluster name (CheckName)
	ServerID string
	// Replication is the topic's replication factor when Open creates it
	// (0: the brokers' default).
	Replication int16
}

// Catalog is a cluster's catalog log.
type Catalog struct {
	opts  CatalogOptions
	topic string
	prod  *kgo.Client
}

// OpenCatalog connects to the brokers and makes sure the catalog topic
// exists (one partition, records kept forever); ctx bounds it.
func OpenCatalog(ctx context.Context, opts CatalogOptions) (*Catalog, error) {
	if err := CheckName(opts.Cluster); err != nil {
		return nil, err
	}
	if len(opts.Brokers) == 0 {
		return nil, errors.New("catalog: no brokers")
	}
	c := &Catalog{opts: opts, topic: CatalogTopic(opts.Cluster)}
	prod, err := kgo.NewClient(kgo.SeedBrokers(opts.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(c.topic), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.topic, err)
	}
	c.prod = prod
	if err := c.ensureTopic(ctx); err != nil {
		prod.Close()
		return nil, err
	}
	return c, nil
}

// Topic is the catalog's topic.
func (c *Catalog) Topic() string { return c.topic }

func (c *Catalog) ensureTopic(ctx context.Context) error {
	adm := kadm.NewClient(c.prod)
	details, err := adm.ListTopics(ctx, c.topic)
	if err != nil {
		return fmt.Errorf("catalog %s: list topics: %w", c.topic, err)
	}
	if d, ok := details[c.topic]; ok && d.Err == nil {
		if n := len(d.Partitions); n != 1 {
			return fmt.Errorf("catalog %s has %d partitions: a catalog is one partition (its order is the catalog's)", c.topic, n)
		}
		return nil
	}
	retention := "-1"
	rf := c.opts.Replication
	if rf == 0 {
		rf = -1
	}
	_, err = adm.CreateTopic(ctx, 1, rf, map[string]*string{"retention.ms": &retention, "cleanup.policy": ptr("delete")}, c.topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("catalog %s: create topic: %w", c.topic, err)
	}
	return nil
}

func ptr(s string) *string { return &s }

// Append adds st to the log and returns its offset, once the brokers
// acknowledged it. The statement is applied when Tail reaches it.
func (c *Catalog) Append(ctx context.Context, st Statement) (int64, error) {
	if st.Server == "" {
		st.Server = c.opts.ServerID
	}
	v, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	r, err := c.prod.ProduceSync(ctx, &kgo.Record{Topic: c.topic, Partition: 0, Value: v}).First()
	if err != nil {
		return 0, fmt.Errorf("catalog %s: append: %w", c.topic, err)
	}
	return r.Offset, nil
}

// End is the offset the next record will have: what a server has to have
// applied to know the whole catalog as of now.
func (c *Catalog) End(ctx context.Context) (int64, error) {
	adm := kadm.NewClient(c.prod)
	ends, err := adm.ListEndOffsets(ctx, c.topic)
	if err != nil {
		return 0, fmt.Errorf("catalog %s: end offset: %w", c.topic, err)
	}
	o, ok := ends.Lookup(c.topic, 0)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("catalog %s: end offset: %v", c.topic, o.Err)
	}
	return o.Offset, nil
}

// Tail calls apply with every record from offset from on, in offset
// order, until ctx ends (its error returned) or apply fails (its error
// returned, wrapped). A record that is not a Statement stops it too: the
// catalog is the cluster's contract, and skipping a statement would make
// this server's catalog differ from the others'.
func (c *Catalog) Tail(ctx context.Context, from int64, apply func(Record) error) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.opts.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.topic, err)
	}
	defer cl.Close()
	next := from
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				return ctx.Err()
			}
			if !kerr.IsRetriable(fe.Err) {
				return fmt.Errorf("catalog %s: read at %d: %w", c.topic, next, fe.Err)
			}
		}
		var ferr error
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil || r.Offset < next {
				return
			}
			var st Statement
			if err := json.Unmarshal(r.Value, &st); err != nil || st.SQL == "" {
				ferr = fmt.Errorf("catalog %s: record at offset %d is not a statement (%s): this server stops applying the catalog there", c.topic, r.Offset, clip(strings.TrimSpace(string(r.Value))))
				return
			}
			if err := apply(Record{Offset: r.Offset, Statement: st}); err != nil {
				ferr = fmt.Errorf("catalog %s: applying offset %d: %w", c.topic, r.Offset, err)
				return
			}
			next = r.Offset + 1
		})
		if ferr != nil {
			return ferr
		}
	}
}

// Close closes the producer.
func (c *Catalog) Close() { c.prod.Close() }
