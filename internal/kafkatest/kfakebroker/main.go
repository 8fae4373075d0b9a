// Command kfakebroker is the Kafka side of the tests that need a broker in
// a process of its own (package internal/kafkatest starts it): a kfake
// cluster of one broker, and two small clients of it, so that tests
// written against the standard library alone can put records into a topic
// and read them back.
//
//	kfakebroker serve --dir DIR [--port N]
//	kfakebroker produce --brokers ADDR --topic T [--partitions N]
//	kfakebroker consume --brokers ADDR --topic T [--read-committed] [--timeout D]
//
// serve runs the broker on 127.0.0.1:N (N = 0: a free port) with its data
// in DIR (kfake's DataDir: topics, records and transactions survive a
// restart on the same directory), prints its address on a line of its own
// once it accepts connections, and shuts down cleanly (persisting
// everything) on SIGTERM or SIGINT.
//
// produce creates the topic with N partitions when N > 0 and it is
// missing, then reads commands from stdin, one JSON object a line:
//
//	{"txn": "" | "commit" | "abort" | "open", "records": [{"partition": 0, "key": "k" | null, "value": "v" | null, "timestamp": ms}]}
//
// (a record's "key_bytes" and "value_bytes", base64, when given, are its
// key and value instead; "headers": {"name": "value"} its headers)
//
// and answers each with one line, {"records": [... with offsets ...]} or
// {"error": "..."}. txn "" produces with an idempotent producer outside any
// transaction; "commit" and "abort" produce the records in a transaction
// (the open one, if any) and end it so; "open" produces them in a
// transaction left open for a later command. A timestamp of 0 is the
// current time. Records go to the partition they name.
//
// consume reads every record of the topic up to the end offsets it lists
// first (the last stable offsets with --read-committed, else the high
// watermarks), control records included, and prints them as NDJSON in
// partition and offset order:
//
//	{"partition": 0, "offset": 5, "key": "k" | null, "value": "v" | null, "timestamp": ms, "control": "commit" | "abort", "producer_id": 1, "producer_epoch": 0}
//
// with "key_bytes" and "value_bytes" (base64) besides "key" and "value"
// when those are not UTF-8 text, and "headers" when the record has any.
//
// It exits with status 3 (and a message) when the topic does not exist.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

// exitNoTopic is consume's exit status for a topic that does not exist.
const exitNoTopic = 3

func main() {
	if len(os.Args) < 2 {
		fail("usage: kfakebroker serve|produce|consume [flags]")
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = serve(args)
	case "produce":
		err = produce(args)
	case "consume":
		err = consume(args)
	default:
		fail("kfakebroker: unknown command " + cmd)
	}
	if err != nil {
		fail("kfakebroker: " + err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(2)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: a free one)")
	dir := fs.String("dir", "", "data directory (required)")
	fs.Parse(args)
	if *dir == "" {
		return errors.New("serve: --dir is required")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port), kfake.DataDir(*dir),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, kfake.LogLevelWarn)))
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println(c.ListenAddrs()[0])
	s := <-sig
	fmt.Fprintf(os.Stderr, "kfakebroker: %v: shutting down\n", s)
	c.Close() // persists the cluster's state in dir
	fmt.Fprintln(os.Stderr, "kfakebroker: shut down")
	return nil
}

// record is a record as produce reads it and consume prints it.
type record = kafkatest.Record

func bytesOf(b []byte, s *string) []byte {
	if b != nil {
		return b
	}
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// stringOf returns b as text, and b itself when it is not UTF-8 text
// (for Record's KeyBytes and ValueBytes).
func stringOf(b []byte) (*string, []byte) {
	if b == nil {
		return nil, nil
	}
	s := string(b)
	if !utf8.Valid(b) {
		return &s, b
	}
	return &s, nil
}

// produceCmd is one line of produce's input; produceAnswer its answer.
type produceCmd struct {
	Txn     string   `json:"txn"`
	Records []record `json:"records"`
}

type produceAnswer struct {
	Records []record `json:"records,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// cmdTimeout bounds one produce command.
const cmdTimeout = 30 * time.Second

func produce(args []string) error {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap brokers")
	topic := fs.String("topic", "", "topic")
	parts := fs.Int("partitions", 0, "create the topic with this many partitions if it is missing")
	fs.Parse(args)
	if *brokers == "" || *topic == "" {
		return errors.New("produce: --brokers and --topic are required")
	}
	common := []kgo.Opt{kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.DefaultProduceTopic(*topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
	plain, err := kgo.NewClient(common...)
	if err != nil {
		return err
	}
	defer plain.Close()
	if *parts > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		_, err := kadm.NewClient(plain).CreateTopic(ctx, int32(*parts), 1, nil, *topic)
		cancel()
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", *topic, err)
		}
	}
	var txc *kgo.Client // made on the first transactional command
	defer func() {
		if txc != nil {
			txc.Close()
		}
	}()
	inTxn := false
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 256<<20)
	for in.Scan() {
		var cmd produceCmd
		var ans produceAnswer
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			ans.Error = "bad command: " + err.Error()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
			switch cmd.Txn {
			case "":
				if inTxn {
					err = errors.New("a transaction is open")
				} else {
					ans.Records, err = send(ctx, plain, cmd.Records)
				}
			case "commit", "abort", "open":
				if txc == nil {
					txc, err = kgo.NewClient(append(common, kgo.TransactionalID(fmt.Sprintf("kfakebroker-%d", os.Getpid())))...)
				}
				if err == nil && !inTxn {
					err = txc.BeginTransaction()
					inTxn = err == nil
				}
				if err == nil {
					ans.Records, err = send(ctx, txc, cmd.Records)
				}
				if inTxn && cmd.Txn != "open" {
					commit := kgo.TryCommit
					if cmd.Txn == "abort" || err != nil {
						commit = kgo.TryAbort
					}
					if err2 := txc.EndTransaction(ctx, commit); err == nil {
						err = err2
					}
					inTxn = false
				}
			default:
				err = fmt.Errorf("bad txn %q", cmd.Txn)
			}
			cancel()
			if err != nil {
				ans = produceAnswer{Error: err.Error()}
			}
		}
		if err := out.Encode(ans); err != nil {
			return err
		}
	}
	return in.Err()
}

// send produces recs and waits for all of them; it returns them with
// their offsets.
func send(ctx context.Context, cl *kgo.Client, recs []record) ([]record, error) {
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Partition: r.Partition, Key: bytesOf(r.KeyBytes, r.Key), Value: bytesOf(r.ValueBytes, r.Value)}
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			krs[i].Headers = append(krs[i].Headers, kgo.RecordHeader{Key: k, Value: []byte(r.Headers[k])})
		}
		if r.Timestamp != 0 {
			krs[i].Timestamp = time.UnixMilli(r.Timestamp)
		}
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return nil, err
	}
	out := make([]record, len(recs))
	for i, kr := range krs {
		out[i] = recs[i]
		out[i].Offset, out[i].Timestamp = kr.Offset, kr.Timestamp.UnixMilli()
		out[i].ProducerID, out[i].ProducerEpoch = kr.ProducerID, kr.ProducerEpoch
	}
	return out, nil
}

func consume(args []string) error {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap brokers")
	topic := fs.String("topic", "", "topic")
	committed := fs.Bool("read-committed", false, "read as a read_committed consumer, up to the last stable offsets")
	timeout := fs.Duration("timeout", 20*time.Second, "give up after this long")
	fs.Parse(args)
	if *brokers == "" || *topic == "" {
		return errors.New("consume: --brokers and --topic are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	seeds := kgo.SeedBrokers(strings.Split(*brokers, ",")...)
	cl, err := kgo.NewClient(seeds)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	list := adm.ListEndOffsets
	if *committed {
		list = adm.ListCommittedOffsets
	}
	ends, err := list(ctx, *topic)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		fmt.Fprintf(os.Stderr, "kfakebroker: topic %s does not exist\n", *topic)
		os.Exit(exitNoTopic)
	}
	if err != nil {
		return fmt.Errorf("listing the end offsets of %s: %w", *topic, err)
	}
	last := map[int32]int64{} // partition -> the last offset to read
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			last[o.Partition] = o.Offset - 1
			from[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(last) == 0 {
		return nil
	}
	opts := []kgo.Opt{seeds, kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: from})}
	if *committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	rd, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer rd.Close()
	byPart := map[int32][]record{}
	for pending := len(last); pending > 0; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading %s: partitions not read to their end offsets %v within %v", *topic, last, *timeout)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("reading %s[%d]: %w", *topic, p, err) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := last[r.Partition]
			if !ok || r.Offset > end {
				return
			}
			if r.Offset == end {
				pending--
			}
			x := record{Partition: r.Partition, Offset: r.Offset,
				Timestamp: r.Timestamp.UnixMilli(), ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
			x.Key, x.KeyBytes = stringOf(r.Key)
			x.Value, x.ValueBytes = stringOf(r.Value)
			for _, h := range r.Headers {
				if x.Headers == nil {
					x.Headers = map[string]string{}
				}
				x.Headers[h.Key] = string(h.Value)
			}
			if r.Attrs.IsControl() {
				x.Control = "control"
				if len(r.Key) >= 4 { // version int16, type int16: 0 abort, 1 commit
					switch binary.BigEndian.Uint16(r.Key[2:4]) {
					case 0:
						x.Control = "abort"
					case 1:
						x.Control = "commit"
					}
				}
				x.Key, x.Value, x.KeyBytes, x.ValueBytes, x.Headers = nil, nil, nil, nil, nil
			}
			byPart[r.Partition] = append(byPart[r.Partition], x)
		})
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	out := json.NewEncoder(os.Stdout)
	for _, p := range parts {
		for _, r := range byPart[p] {
			if err := out.Encode(r); err != nil {
				return err
			}
		}
	}
	return nil
}
