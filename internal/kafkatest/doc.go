// Package kafkatest runs a Kafka broker for tests in a process of its
// own: kfake (github.com/twmb/franz-go/pkg/kfake) behind the small
// command in ./kfakebroker, built once per test process with `go build`
// (or taken from $KFAKEBROKER_BIN). Because the broker is not inside the
// test process, a test can SIGKILL the system under test while the broker
// lives on, and stop the broker (a clean shutdown persists its data
// directory) and start it again on the same port and directory: topics,
// committed records and transactions are still there.
//
// Records are produced and read back through the same command (produce
// and consume), so this package, like internal/pgtest, imports only the
// standard library: end-to-end tests that share no code with the engine
// can use it. Keys and values that are not text (Avro) go through it as
// bytes (Record's KeyBytes and ValueBytes), and so do headers (a
// dead-letter topic's).
//
// On Linux the broker and its clients are killed when the test process
// dies.
//
// Threading: a Broker's Addr, Dir, Log, Produce, Consume and NewProducer
// are safe for concurrent use; Stop, Kill, Restart and Close are not (call
// them from one goroutine). A Producer is not safe for concurrent use.
package kafkatest
