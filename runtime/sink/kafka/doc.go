// Package kafka is the Kafka publisher of external UPSERT sinks
// (ENGINE=kafka): it implements sink.Publisher with franz-go (kgo, kadm).
//
// Records. A change is one record of the sink topic: its key is the
// upsert key as a JSON object (the primary key columns' names and values,
// in primary key order), its value the row as a JSON object (every
// column, in the table's order); a delete is a tombstone (a nil value).
// Values are written as plan.Value.JSON gives them (docs/http-api.md: values).
// Records are partitioned by key (kgo's default partitioner, Kafka's
// murmur2 hash of the key bytes), so every change of a key goes to one
// partition, in order, and a compacted topic keeps each key's latest row.
//
// Formats. "format" json (the default) is the above; avro, protobuf and
// json_schema write key and value through a Schema Registry
// ("schema_registry"; "subject", "key_subject", "register"), with
// runtime/format's encoders (format.OpenSink): Open gets them once per
// publisher, before it reaches the brokers, and keeps them across
// reopenings. A registry that cannot be asked makes Open (and Apply or
// CommitEpoch before a successful Open) fail retryably, with nothing
// produced; a refusal or a subject whose schema cannot take the records
// is permanent. The key bytes hashed for partitioning include the
// header, so a new key schema id moves keys to other partitions.
//
// It owns, in the cluster: the sink topic (created at Open when missing:
// "partitions" partitions, the broker's default number unless the sink
// says, the broker's default replication factor, cleanup.policy=compact)
// and, for an exactly-once sink, the progress topic (default
// "<topic>.streamsql-progress"; created when missing with one partition,
// compacted). A progress record's key is the sink id, its value
// {"sink_id": ..., "epoch": n, "committed_at": RFC 3339}; compaction keeps
// the latest, which is the largest epoch.
//
// ENGINE_ATTRIBUTE keys: "format" and its registry keys (above), "topic" (default: the sink table's name),
// "progress_topic", "partitions" (a positive integer, for creating the
// topic), "transaction_timeout" (a duration, default 60s, at least 1s and
// at most the brokers' transaction.max.timeout.ms), "delivery" (read by
// the planner; the publisher follows Spec.ExactlyOnce). CONNECTION is the
// bootstrap brokers, "host:port[,host:port...]".
//
// Exactly-once. The transactional id is "streamsql-" + the sink id, the
// same in every run of the query, so a new run's producer fences the old
// one's. Committed fences first (initialising the transactional
// producer: the broker aborts any transaction the old producer left open
// and refuses it from then on), then reads the progress topic with a
// read_committed consumer, at explicit offsets from the start to the
// high watermark seen after the fence, and returns this sink's largest
// epoch. CommitEpoch writes an epoch's records and its progress record in
// one Kafka transaction; an epoch not above the last committed one
// (known from Committed or the last commit) fails with sink.ErrCommitted
// before anything is produced. Nothing resumes an open transaction: after
// any error the transactional client is aborted (best effort) and closed,
// and the next call makes a new one, which fences again and reads the
// progress again before it commits. An error from ending the transaction
// leaves the outcome unknown and is reported as such: the caller reads
// Committed to learn it. The transaction timeout bounds an epoch's
// publishing: it must exceed the time to produce one epoch (a broker
// aborts a transaction open longer), and CommitEpoch gives up after it.
//
// At-least-once. Apply produces with kgo's idempotent producer and waits
// for every record's acknowledgement.
//
// Errors: bad settings (a CONNECTION kgo cannot parse, a bad attribute,
// a transaction timeout the brokers refuse), a record the brokers refuse
// as too large or invalid, and authorization failures are permanent
// (sink.Permanent); everything else (brokers unreachable, timeouts,
// leader changes, a fenced producer) is retryable. Messages name the
// sink table and the brokers or the topic.
//
// Threading: a Publisher is used by one goroutine at a time (the query's
// committer), like every sink.Publisher; its methods block on the network
// and honour their context, with deadlines of their own on top. The kgo
// clients it holds run goroutines of their own until Close.
package kafka
