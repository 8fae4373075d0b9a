package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/sink"
)

// ProgressSuffix makes the default progress topic's name from the sink
// topic's.
const ProgressSuffix = ".streamsql-progress"

// TransactionalIDPrefix makes an exactly-once sink's transactional id
// from its sink id.
const TransactionalIDPrefix = "streamsql-"

const (
	// DefaultTransactionTimeout is the transaction timeout unless the
	// sink's "transaction_timeout" says.
	DefaultTransactionTimeout = 60 * time.Second
	// MinTransactionTimeout is the shortest "transaction_timeout".
	MinTransactionTimeout = time.Second

	dialTimeout = 10 * time.Second
	openTimeout = 60 * time.Second // Open: reach the cluster, create topics
	readTimeout = 60 * time.Second // Committed: fence, read the progress topic
	// applyTimeout bounds Apply (an exactly-once epoch has the
	// transaction timeout instead).
	applyTimeout = 2 * time.Minute
	// abortTimeout bounds aborting a failed transaction (best effort).
	abortTimeout = 5 * time.Second
)

// Publisher writes a sink's changes to a Kafka topic.
type Publisher struct {
	spec      sink.Spec
	brokers   []string
	topic     string
	progress  string
	parts     int32 // partitions of a created topic (-1: the broker's default)
	txTimeout time.Duration
	txID      string

	keyNames [][]byte // the primary key columns' names, JSON-quoted
	colNames [][]byte // every column's name, JSON-quoted
	enc      encoder

	// format is the records' format: "json", or a registry format
	// (avro, protobuf, json_schema) whose encoders Open makes.
	format string
	codec  *format.SinkEncoders // registry formats: set by the first Open that reaches the registry

	cl *kgo.Client // plain client: admin requests, reads, at-least-once produce
	tx *kgo.Client // exactly_once: the transactional producer (nil until needed)

	// last is the largest epoch known to be committed, valid when known
	// (set by Committed and by each commit, cleared by any error).
	last  uint64
	known bool

	// beforeEnd, when set (tests), runs before a transaction is ended.
	beforeEnd func()
}

var _ sink.Publisher = (*Publisher)(nil)

// New makes the publisher of the sink spec. It does not connect (Open
// does). Its errors are permanent.
func New(spec sink.Spec) (*Publisher, error) {
	p := &Publisher{spec: spec, topic: spec.Table, parts: -1, txTimeout: DefaultTransactionTimeout}
	brokers, err := parseBrokers(spec.Connection)
	if err != nil {
		return nil, sink.Permanent("sink table %s: bad CONNECTION %q: %v (want the bootstrap brokers, host:port[,host:port...])", spec.Table, spec.Connection, err)
	}
	p.brokers = brokers
	if v, ok := spec.Attrs["topic"]; ok {
		p.topic = v
	}
	if err := checkTopic(p.topic); err != nil {
		return nil, sink.Permanent("sink table %s: \"topic\" %q: %v", spec.Table, p.topic, err)
	}
	p.progress = p.topic + ProgressSuffix
	if v, ok := spec.Attrs["progress_topic"]; ok {
		p.progress = v
	}
	if err := checkTopic(p.progress); err != nil {
		return nil, sink.Permanent("sink table %s: \"progress_topic\" %q: %v", spec.Table, p.progress, err)
	}
	if p.progress == p.topic {
		return nil, sink.Permanent("sink table %s: \"progress_topic\" is the sink's topic %q; it needs a topic of its own", spec.Table, p.topic)
	}
	if v, ok := spec.Attrs["partitions"]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 1 {
			return nil, sink.Permanent("sink table %s: \"partitions\" is %q, want a positive integer", spec.Table, v)
		}
		p.parts = int32(n)
	}
	if v, ok := spec.Attrs["transaction_timeout"]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, sink.Permanent("sink table %s: \"transaction_timeout\" is %q, want a duration such as \"60s\"", spec.Table, v)
		}
		if d < MinTransactionTimeout || d%time.Millisecond != 0 || d.Milliseconds() > 1<<31-1 {
			return nil, sink.Permanent("sink table %s: \"transaction_timeout\" is %s, want whole milliseconds from %s to the brokers' transaction.max.timeout.ms (Kafka's default: 15m)", spec.Table, d, MinTransactionTimeout)
		}
		p.txTimeout = d
	}
	if err := spec.CheckKey("a Kafka sink's records are keyed by it"); err != nil {
		return nil, err
	}
	for _, c := range spec.Columns {
		switch c.Type {
		case plan.TypeBigint, plan.TypeDouble, plan.TypeVarchar, plan.TypeTimestamp, plan.TypeBoolean:
		default:
			return nil, sink.Permanent("sink table %s: column %s has type %s, which a Kafka sink cannot write", spec.Table, c.Name, c.Type)
		}
		b, err := json.Marshal(c.Name)
		if err != nil {
			return nil, sink.Permanent("sink table %s: column name %q: %v", spec.Table, c.Name, err)
		}
		p.colNames = append(p.colNames, b)
	}
	for _, i := range spec.PrimaryKey {
		p.keyNames = append(p.keyNames, p.colNames[i])
	}
	p.format = format.SinkFormat(spec.Attrs)
	if p.format != "json" {
		if spec.Attrs["schema_registry"] == "" {
			return nil, sink.Permanent("sink table %s: format %s needs a \"schema_registry\"", spec.Table, p.format)
		}
		if err := format.CheckSink(p.formatTable()); err != nil {
			return nil, sink.Permanent("sink table %s: format %s: %v", spec.Table, p.format, err)
		}
	}
	if spec.ExactlyOnce {
		if spec.SinkID == "" {
			return nil, sink.Permanent("sink table %s: exactly-once delivery needs a sink id", spec.Table)
		}
		p.txID = TransactionalIDPrefix + spec.SinkID
	}
	return p, nil
}

// formatTable is what the registry formats' encoders write.
func (p *Publisher) formatTable() format.SinkTable {
	return format.SinkTable{
		Name: p.spec.Table, Topic: p.topic, Columns: p.spec.Columns, Key: p.spec.PrimaryKey, Attrs: p.spec.Attrs,
		JSONKey:   func(dst []byte, vals plan.Row) ([]byte, error) { return p.enc.object(dst, p.keyNames, vals) },
		JSONValue: func(dst []byte, vals plan.Row) ([]byte, error) { return p.enc.object(dst, p.colNames, vals) },
	}
}

// openFormat registers (or checks) the registry format's schemas, once:
// a registry that cannot be asked is retryable, a refusal permanent.
func (p *Publisher) openFormat(ctx context.Context) error {
	if p.format == "json" || p.codec != nil {
		return nil
	}
	codec, err := format.OpenSink(ctx, p.formatTable())
	if err != nil {
		if format.IsRetryable(err) {
			return fmt.Errorf("%s: format %s: %w", p.where(), p.format, err)
		}
		return sink.Permanent("%s: format %s: %v", p.where(), p.format, err)
	}
	p.codec = codec
	return nil
}

// parseBrokers splits a CONNECTION into host:port addresses.
func parseBrokers(conn string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(conn, ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			return nil, fmt.Errorf("%q is not host:port", b)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return nil, fmt.Errorf("%q is not host:port", b)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, errors.New("no brokers")
	}
	return out, nil
}

// checkTopic checks a Kafka topic name: 1 to 249 of [a-zA-Z0-9._-], not
// "." or "..".
func checkTopic(t string) error {
	if t == "" {
		return errors.New("empty")
	}
	if len(t) > 249 {
		return errors.New("longer than 249 characters")
	}
	if t == "." || t == ".." {
		return errors.New("not a valid topic name")
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q is not allowed in a topic name (letters, digits, '.', '_', '-')", c)
		}
	}
	return nil
}

// where names the target in messages.
func (p *Publisher) where() string {
	return fmt.Sprintf("Kafka topic %s (brokers %s) of sink table %s", p.topic, strings.Join(p.brokers, ","), p.spec.Table)
}

func (p *Publisher) clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(p.brokers...),
		kgo.ClientID("streamsql"),
		kgo.DialTimeout(dialTimeout),
	}
}

// Open connects (closing the previous clients, if any), checks that a
// broker answers, creates the topic and (exactly-once) the progress topic
// when missing, and checks the transaction timeout against the brokers'
// maximum. It does not fence: Committed does.
func (p *Publisher) Open(ctx context.Context) error {
	p.Close()
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := p.openFormat(ctx); err != nil {
		return err
	}
	cl, err := kgo.NewClient(p.clientOpts()...)
	if err != nil {
		return sink.Permanent("%s: %v", p.where(), err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("%s: cannot reach the brokers: %w", p.where(), err)
	}
	adm := kadm.NewClient(cl)
	if err := p.ensureTopics(ctx, adm); err != nil {
		cl.Close()
		return err
	}
	if p.spec.ExactlyOnce {
		if err := p.checkTxTimeout(ctx, adm); err != nil {
			cl.Close()
			return err
		}
	}
	p.cl = cl
	return nil
}

// ensureTopics creates the sink topic and (exactly-once) the progress
// topic when missing.
func (p *Publisher) ensureTopics(ctx context.Context, adm *kadm.Client) error {
	topics := []string{p.topic}
	if p.spec.ExactlyOnce {
		topics = append(topics, p.progress)
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return p.classify(fmt.Errorf("%s: list topics: %w", p.where(), err))
	}
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	for _, t := range topics {
		d, ok := details[t]
		if ok && d.Err == nil {
			continue
		}
		if ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return p.classify(fmt.Errorf("%s: topic %s: %w", p.where(), t, d.Err))
		}
		parts := p.parts
		if t == p.progress {
			parts = 1
		}
		resp, err := adm.CreateTopic(ctx, parts, -1, compact, t)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			msg := resp.ErrMessage
			if msg != "" {
				msg = " (" + msg + ")"
			}
			return p.classify(fmt.Errorf("%s: create topic %s: %w%s", p.where(), t, err, msg))
		}
	}
	return nil
}

// checkTxTimeout refuses a transaction timeout above the brokers'
// transaction.max.timeout.ms, when they tell it (the brokers refuse it
// too, later, with INVALID_TRANSACTION_TIMEOUT).
func (p *Publisher) checkTxTimeout(ctx context.Context, adm *kadm.Client) error {
	rcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		return nil // not allowed to look, or an old broker: InitProducerID decides
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key != "transaction.max.timeout.ms" || c.Value == nil {
				continue
			}
			ms, err := strconv.ParseInt(*c.Value, 10, 64)
			if err == nil && p.txTimeout.Milliseconds() > ms {
				return sink.Permanent("%s: \"transaction_timeout\" %s is above the brokers' transaction.max.timeout.ms (%s)", p.where(), p.txTimeout, time.Duration(ms)*time.Millisecond)
			}
		}
	}
	return nil
}

// ensureOpen opens when there is no client (after Close, or an error the
// caller retries without calling Open).
func (p *Publisher) ensureOpen(ctx context.Context) error {
	if p.cl != nil {
		return nil
	}
	return p.Open(ctx)
}

// txClient returns the transactional producer, making it when there is
// none. A new one has no producer id: its first use fences.
func (p *Publisher) txClient() (*kgo.Client, error) {
	if p.tx != nil {
		return p.tx, nil
	}
	tx, err := kgo.NewClient(append(p.clientOpts(),
		kgo.TransactionalID(p.txID),
		kgo.TransactionTimeout(p.txTimeout),
	)...)
	if err != nil {
		return nil, sink.Permanent("%s: %v", p.where(), err)
	}
	p.tx, p.known = tx, false
	return tx, nil
}

// dropTx closes the transactional producer (the next call makes a new
// one, which fences and reads the progress again).
func (p *Publisher) dropTx() {
	if p.tx != nil {
		p.tx.Close()
		p.tx = nil
	}
	p.known = false
}

// Close closes the clients (the publisher can be opened again).
func (p *Publisher) Close() {
	p.dropTx()
	if p.cl != nil {
		p.cl.Close()
		p.cl = nil
	}
}

// permanentErrs are the broker errors retrying cannot fix: settings,
// authorization, and records the brokers refuse.
var permanentErrs = []error{
	kerr.InvalidTopicException,
	kerr.InvalidPartitions,
	kerr.InvalidReplicationFactor,
	kerr.InvalidConfig,
	kerr.PolicyViolation,
	kerr.TopicAuthorizationFailed,
	kerr.ClusterAuthorizationFailed,
	kerr.TransactionalIDAuthorizationFailed,
	kerr.InvalidTransactionTimeout,
	kerr.MessageTooLarge,
	kerr.RecordListTooLarge,
	kerr.InvalidRecord,
	kerr.CorruptMessage,
	kerr.UnsupportedForMessageFormat,
	kerr.SaslAuthenticationFailed,
}

// classify marks err permanent when it is one retrying cannot fix.
func (p *Publisher) classify(err error) error {
	if err == nil || sink.IsPermanent(err) {
		return err
	}
	for _, e := range permanentErrs {
		if errors.Is(err, e) {
			return &sink.PermanentError{Err: err}
		}
	}
	var ae *kadm.AuthError
	if errors.As(err, &ae) {
		return &sink.PermanentError{Err: err}
	}
	return err
}
