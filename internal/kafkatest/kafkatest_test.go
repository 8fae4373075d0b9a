package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

func recs(part int32, prefix string, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Partition: part, Key: Str(fmt.Sprint(prefix, i)), Value: Str(fmt.Sprintf(`{"%s":%d}`, prefix, i)), Timestamp: 1704067200000 + int64(i)}
	}
	return out
}

// values are the values of the data records of rs, "<nil>" for a
// tombstone.
func values(rs []Record) []string {
	var out []string
	for _, r := range Data(rs) {
		v := "<nil>"
		if r.Value != nil {
			v = *r.Value
		}
		out = append(out, fmt.Sprintf("%d:%s", r.Partition, v))
	}
	return out
}

// TestBroker: records produced plainly, in committed and aborted
// transactions, and in one left open; read back read_committed and
// read_uncommitted; the broker stopped and restarted (everything still
// there, the same offsets), then killed and restarted.
func TestBroker(t *testing.T) {
	b, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Consume("t", true); !errors.Is(err, ErrNoTopic) {
		t.Fatalf("Consume of a missing topic: %v, want ErrNoTopic", err)
	}
	p, err := b.NewProducer("t", 2)
	if err != nil {
		t.Fatal(err)
	}
	send := func(rs []Record, txn Txn) []Record {
		t.Helper()
		got, err := p.Send(rs, txn)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	plain := send(append(recs(0, "a", 3), Record{Partition: 1, Key: Str("tomb"), Value: nil, Timestamp: 5}), NoTxn)
	if plain[2].Offset != 2 || plain[3].Offset != 0 || plain[0].Timestamp != 1704067200000 || plain[3].Value != nil {
		t.Fatalf("plain records answered %v", plain)
	}
	send(recs(1, "c", 2), Commit)
	send(recs(0, "x", 2), Abort)
	send(recs(0, "o", 1), Open)
	send(recs(1, "o", 1), Open)

	wantCommitted := []string{`0:{"a":0}`, `0:{"a":1}`, `0:{"a":2}`, `1:<nil>`, `1:{"c":0}`, `1:{"c":1}`}
	got, err := b.Consume("t", true)
	if err != nil {
		t.Fatal(err)
	}
	if v := values(got); !slices.Equal(v, wantCommitted) {
		t.Fatalf("read_committed with a transaction open: %q, want %q", v, wantCommitted)
	}
	unc, err := b.Consume("t", false)
	if err != nil {
		t.Fatal(err)
	}
	if v := values(unc); len(v) != 10 {
		t.Fatalf("read_uncommitted: %q, want 10 records", v)
	}
	send(nil, Commit) // ends the open transaction
	wantCommitted = []string{`0:{"a":0}`, `0:{"a":1}`, `0:{"a":2}`, `0:{"o":0}`, `1:<nil>`, `1:{"c":0}`, `1:{"c":1}`, `1:{"o":0}`}
	got, err = b.Consume("t", true)
	if err != nil {
		t.Fatal(err)
	}
	if v := values(got); !slices.Equal(v, wantCommitted) {
		t.Fatalf("read_committed: %q, want %q", v, wantCommitted)
	}
	var markers []string
	for _, r := range got {
		if r.Control != "" {
			markers = append(markers, fmt.Sprintf("%d:%s", r.Partition, r.Control))
		}
	}
	if want := []string{"0:abort", "0:commit", "1:commit", "1:commit"}; !slices.Equal(markers, want) {
		t.Fatalf("markers %q, want %q", markers, want)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	addr := b.Addr()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Consume("t", true); err == nil {
		t.Fatal("Consume succeeded with the broker stopped")
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if b.Addr() != addr {
		t.Fatalf("address %s after a restart, was %s", b.Addr(), addr)
	}
	again, err := b.Consume("t", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(got) {
		t.Fatalf("after a restart:\n%v\nbefore:\n%v", again, got)
	}
	for i := range got {
		if fmt.Sprintf("%+v", again[i]) != fmt.Sprintf("%+v", got[i]) {
			t.Errorf("after a restart: %+v, before %+v", again[i], got[i])
		}
	}
	more, err := b.Produce("t", 0, recs(1, "d", 1), Commit)
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Offset != 6 {
		t.Errorf("first record after a restart at offset %d, want 6", more[0].Offset)
	}

	// Killed: what was written survives (kfake appends as it goes).
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err = b.Consume("t", true)
	if err != nil {
		t.Fatal(err)
	}
	if v, w := values(got), append(values(again), `1:{"d0":0}`); len(v) != len(w) {
		t.Errorf("after SIGKILL and a restart: %q, want %q", v, w)
	}
}

// TestBinary: keys and values that are not UTF-8 text, and headers, go
// through Produce and Consume as they are.
func TestBinary(t *testing.T) {
	b, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	in := []Record{
		{KeyBytes: []byte{0xff, 0, 1}, ValueBytes: []byte{0, 0, 0, 0, 7, 0xc3}, Headers: map[string]string{"a": "1", "b": "two"}},
		{Key: Str("text"), ValueBytes: []byte("also text")},
	}
	if _, err := b.Produce("bin", 1, in, NoTxn); err != nil {
		t.Fatal(err)
	}
	got, err := b.Consume("bin", true)
	if err != nil {
		t.Fatal(err)
	}
	got = Data(got)
	if len(got) != 2 {
		t.Fatalf("read %v, want 2 records", got)
	}
	if k, v := got[0].KeyData(), got[0].ValueData(); string(k) != "\xff\x00\x01" || string(v) != "\x00\x00\x00\x00\x07\xc3" {
		t.Errorf("binary record read back as key %x value %x", k, v)
	}
	if got[0].Headers["a"] != "1" || got[0].Headers["b"] != "two" || len(got[0].Headers) != 2 {
		t.Errorf("headers read back as %v", got[0].Headers)
	}
	if got[1].KeyBytes != nil || got[1].ValueBytes != nil || *got[1].Key != "text" || *got[1].Value != "also text" || got[1].Headers != nil {
		t.Errorf("text record read back as %+v", got[1])
	}
}

// TestStandardLibraryOnly: the package (unlike its command) imports only
// the standard library (and internal/gobin, which does too), so the
// end-to-end tests can use it.
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.Contains(strings.Split(d, "/")[0], ".") && d != "github.com/streamsql/streamsql/internal/gobin" {
			t.Errorf("kafkatest depends on %s: it must import only the standard library", d)
		}
	}
}
